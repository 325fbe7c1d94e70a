"""Where the Hydra configs live (source tree, editable install or wheel), and composing one in-process."""

from __future__ import annotations

import copy
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omegaconf import DictConfig

_COMPOSED: dict[tuple[object, ...], DictConfig] = {}
"""Configs `compose_config` has composed in this process, by what decides them (`_compose_key`)."""

_COMPOSED_MAX = 256
"""Kept compositions at most (a few tens of kB each); past it the store starts empty again."""


def config_dir() -> Path:
    """Return the absolute path of the folder that holds ``config.yaml``.

    A wheel ships ``conf/`` as the package ``experiments.conf``; an editable install maps that package onto
    the repository's ``conf/``; a plain source checkout has neither, so we fall back to ``<repo>/conf``.

    Returns:
        The folder containing ``config.yaml``.

    Raises:
        FileNotFoundError: If no candidate folder holds ``config.yaml``.
    """
    candidates: list[Path] = []
    spec = importlib.util.find_spec("experiments.conf")
    if spec is not None and spec.submodule_search_locations:
        candidates.extend(Path(p) for p in spec.submodule_search_locations)
    candidates.append(Path(__file__).resolve().parent.parent / "conf")
    for folder in candidates:
        if (folder / "config.yaml").is_file():
            return folder.resolve()
    looked = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"config.yaml not found; looked in: {looked}")


def compose_config(overrides: Sequence[str] = ()) -> DictConfig:
    """Compose ``config.yaml`` with Hydra overrides, as ``python -m experiments`` would, without running it.

    Tests and perf drivers use this to build a run configuration in-process.

    A second call with the same overrides, while the config files and ``sys.path`` are unchanged, returns a
    copy of the first result instead of composing again (Hydra reads and merges every YAML file each time,
    ~70 ms; a copy takes ~2 ms). Overrides that add a search path are composed every time: the files there
    are not watched.

    Args:
        overrides: Hydra override strings (``"strategy=s3"``, ``"+agent.api_key=..."``).

    Returns:
        The composed configuration.

    Raises:
        FileNotFoundError: If no folder holds ``config.yaml``.
    """
    # Imported here so that `import experiments` stays cheap for callers that never compose.
    from hydra import compose, initialize_config_dir

    from experiments.validator_file import rewrite_validator_file

    folder = config_dir()
    rewritten = rewrite_validator_file(overrides)
    key = _compose_key(folder, rewritten)
    composed = _COMPOSED.get(key) if key is not None else None
    if composed is None:
        with initialize_config_dir(config_dir=str(folder), version_base="1.3"):
            composed = compose("config", overrides=rewritten)
        if key is not None:
            if len(_COMPOSED) >= _COMPOSED_MAX:
                _COMPOSED.clear()
            _COMPOSED[key] = composed
    return copy.deepcopy(composed)


def _compose_key(folder: Path, overrides: Sequence[str]) -> tuple[object, ...] | None:
    """What a composition depends on: the overrides, every config file's name, size and change time, and
    ``sys.path`` (Hydra finds its plugins there); None when an override adds a search path."""
    if any("searchpath" in item.partition("=")[0] for item in overrides):
        return None
    files = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            stat = path.stat()
            files.append((path.relative_to(folder).as_posix(), stat.st_size, stat.st_mtime_ns))
    return (tuple(overrides), str(folder), tuple(files), tuple(sys.path))

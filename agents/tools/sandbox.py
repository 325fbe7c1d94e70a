"""Where the model's tools may read and write.

Reads are confined to the dataset's raw folder (``<dataset>/data``), so the model never sees the ground truth
under ``VLM/``; writes are confined to the candidate's output folder. A path given by the model is refused,
with a message the model sees, when it is absolute, starts with ``~``, contains ``..``, a NUL byte, a
backslash or a URL-encoded escape (``%2e``), or resolves (after following symlinks) outside its root. Files
larger than the size cap are refused before any reader opens them.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from core.paths import resolve_below

__all__ = ["Sandbox", "SandboxError", "SandboxLimits"]

_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")
_DRIVE = re.compile(r"^[A-Za-z]:")


class SandboxError(ValueError):
    """A tool argument was refused; the message is shown to the model as the tool result.

    Args:
        path: The path as the model gave it.
        reason: Why it was refused.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"refused path {path!r}: {reason}")


@dataclass(frozen=True)
class SandboxLimits:
    """Size caps of the sandbox.

    Attributes:
        max_file_bytes: Largest raw file ``inspect``/``render``/``view_image`` may open.
        max_text_bytes: Largest head ``read_text`` may return.
        max_dir_entries: Most entries ``list_dir`` and ``find`` return per call.
        max_walk_entries: Most folder entries ``tree``, ``find`` and ``grep`` visit per call (a bounded walk:
            past it they answer with what they saw and say so).
        max_search_bytes: Most bytes ``grep`` reads per call, and the largest text table whose rows
            ``table_head`` counts.
    """

    max_file_bytes: int = 2 * 1024**3
    max_text_bytes: int = 64 * 1024
    max_dir_entries: int = 200
    max_walk_entries: int = 200_000
    max_search_bytes: int = 64 * 1024**2


class Sandbox:
    """Resolve model-given paths against the dataset (read) and the candidate folder (write).

    Args:
        dataset_root: The dataset root; model paths are relative to it and must lie under ``data/``.
        output_dir: The candidate folder; write paths are relative to it.
        limits: Size caps.
    """

    def __init__(self, dataset_root: Path, output_dir: Path, limits: SandboxLimits | None = None) -> None:
        self.dataset_root = Path(dataset_root).resolve()
        self.read_root = self.dataset_root / "data"
        self.output_dir = Path(output_dir).resolve()
        self.limits = limits or SandboxLimits()

    def read_path(self, path: str) -> Path:
        """Resolve a dataset path the model wants to read (``data/...``).

        Args:
            path: Relative to the dataset root, e.g. ``"data/case1/img.nii.gz"``; ``""`` or ``"."`` mean data.

        Returns:
            The resolved absolute path (it may not exist).

        Raises:
            SandboxError: The path is malformed or leaves ``<dataset>/data``.
        """
        parts = self._clean(path)
        if not parts or parts == ("data",):
            return self.read_root
        target, followed = _below(self.dataset_root, parts)
        inside = target.is_relative_to(self.read_root) if followed else parts[0] == "data"
        if not inside:
            raise SandboxError(path, "only files under data/ of the dataset can be read")
        return target

    def output_path(self, path: str) -> Path:
        """Resolve a path relative to the candidate folder (``images/0.png``; it may not exist), for reading
        back or writing.

        Raises:
            SandboxError: The path is malformed or leaves the candidate folder.
        """
        parts = self._clean(path)
        target, followed = _below(self.output_dir, parts)
        if followed and not target.is_relative_to(self.output_dir):
            raise SandboxError(path, "only files inside the candidate's output folder can be used")
        return target

    def write_path(self, relpath: str) -> Path:
        """Resolve an output file to write (relative to the candidate folder, built by the tools, e.g.
        ``masks/3.png``) and create its parent folder.

        Raises:
            SandboxError: The destination leaves the candidate folder (e.g. a planted symlink).
        """
        target = self.output_path(relpath)
        if target == self.output_dir:
            raise SandboxError(relpath, "the output folder itself is not a file")
        parent = target.parent
        if not _is_real_dir(parent):
            parent.mkdir(parents=True, exist_ok=True)
        # A symlinked parent created after the check above would still be caught here.
        folder, followed = _below(self.output_dir, parent.parts[len(self.output_dir.parts) :])
        if followed and not folder.is_relative_to(self.output_dir):
            raise SandboxError(relpath, "the destination folder leaves the candidate's output folder")
        return target

    def check_size(self, target: Path, shown: str) -> int:
        """Refuse a file larger than the cap (before any reader opens it).

        Args:
            target: The resolved file.
            shown: The path as the model gave it (for the message).

        Returns:
            The file size in bytes (a folder counts as 0).

        Raises:
            SandboxError: The file does not exist or exceeds ``max_file_bytes``.
        """
        try:
            st = os.stat(target)
        except OSError:
            raise SandboxError(shown, "no such file or folder") from None
        size = st.st_size if stat.S_ISREG(st.st_mode) else 0
        if size > self.limits.max_file_bytes:
            raise SandboxError(
                shown, f"file is {size} bytes, above the {self.limits.max_file_bytes}-byte cap"
            )
        return size

    def to_model(self, target: Path) -> str:
        """A resolved path the way the model addresses it (POSIX): ``data/...`` for dataset files, the path
        relative to the output folder otherwise.
        """
        if target.is_relative_to(self.output_dir):
            return target.relative_to(self.output_dir).as_posix() or "."
        return target.relative_to(self.dataset_root).as_posix()

    @staticmethod
    def _clean(path: str) -> tuple[str, ...]:
        if not isinstance(path, str):
            raise SandboxError(repr(path), "a path must be a string")
        if "\x00" in path:
            raise SandboxError(path, "NUL bytes are not allowed in paths")
        if "\\" in path:
            raise SandboxError(path, "use forward slashes; backslashes are not allowed")
        if _ENCODED.search(path):
            raise SandboxError(path, "URL-encoded characters are not allowed; give the plain relative path")
        if path.startswith(("/", "~")) or _DRIVE.match(path):
            raise SandboxError(
                path, "absolute and home paths are not allowed; give a path relative to the root"
            )
        parts = tuple(p for p in PurePosixPath(path).parts if p not in ("", "."))
        if ".." in parts:
            raise SandboxError(path, "'..' is not allowed in paths")
        return parts


def _below(root: Path, parts: Sequence[str]) -> tuple[Path, bool]:
    """``root/parts`` with links resolved, and whether one was followed (`core.paths.resolve_below`)."""
    target, followed = resolve_below(str(root), parts)
    return Path(target), followed


def _is_real_dir(folder: Path) -> bool:
    """Whether ``folder`` exists as a directory itself (not through a symlink)."""
    try:
        return stat.S_ISDIR(os.lstat(folder).st_mode)
    except OSError:
        return False

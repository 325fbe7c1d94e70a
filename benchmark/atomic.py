"""Atomic file writes: a reader sees the old file or the new one, never a half-written one.

Each write goes to a hidden temporary file in the destination folder (same file system, so the final
``os.replace`` is an atomic rename), is flushed and fsync'ed, then replaces the destination. On any failure
the temporary file is removed and the previous content of the destination is left untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_bytes", "atomic_write_json", "atomic_write_text"]


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically, creating parent folders.

    Args:
        path: Destination file.
        data: The complete new content.

    Returns:
        The destination path.

    Raises:
        OSError: The folder cannot be created or the file cannot be written; the destination is unchanged.
    """
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # O_EXCL: never clobber another writer's temp file; mode 0o666 lets the umask decide, as open() would.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(dest.parent)
    return dest


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically (no newline translation).

    Args:
        path: Destination file.
        text: The complete new content.

    Returns:
        The destination path.

    Raises:
        OSError: The write failed; the destination is unchanged.
    """
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any, *, indent: int | None = 2) -> Path:
    """Serialise ``obj`` as JSON and write it atomically.

    The text is produced the way the benchmark writes its own files (``indent=2``, ``ensure_ascii=False``,
    no trailing newline). NumPy scalars and arrays and `Path` objects are converted to plain JSON values.
    Serialisation happens before anything touches the disk, so an unserialisable object leaves no trace.

    Args:
        path: Destination file.
        obj: Any JSON-serialisable value.
        indent: Indentation passed to `json.dumps` (``None`` for one line).

    Returns:
        The destination path.

    Raises:
        TypeError: ``obj`` holds a value JSON cannot represent.
        OSError: The write failed; the destination is unchanged.
    """
    text = json.dumps(obj, indent=indent, ensure_ascii=False, default=_json_default)
    return atomic_write_text(path, text)


def _json_default(value: Any) -> Any:
    """Convert the non-JSON values agents and generators commonly produce (NumPy, paths)."""
    if isinstance(value, Path):
        return value.as_posix()
    # NumPy arrays have tolist(); NumPy scalars have item(). Checked by duck type to avoid importing NumPy.
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"object of type {type(value).__name__} is not JSON serialisable")


def _fsync_dir(folder: Path) -> None:
    """Persist the rename itself (POSIX); silently skipped where folders cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

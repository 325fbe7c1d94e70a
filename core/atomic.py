"""Atomic file writes: a reader sees the old file or the new one, never a half-written one.

Each write goes to a hidden temporary file in the destination folder (same file system, so the final
``os.replace`` is an atomic rename), is flushed and fsync'ed, then replaces the destination. On any failure
the temporary file is removed and the previous content of the destination is left untouched.

``durable=False`` skips the two fsyncs (the file's and the folder's). The write stays atomic against a crash
of the process (a kill, an exception, SIGKILL halfway): the rename is a single metadata operation of the
kernel, and the data written before it sits in the page cache, which outlives the process, so a reader sees
the complete old or the complete new file. It is not durable against a power loss or a kernel crash: without
fsync the rename may reach the disk before the data, leaving an empty or truncated file after a reboot.
Use it for bulk files that the run can regenerate (candidate outputs, the assembled selected folder), where
an fsync per file (~4 ms each on this machine) would dominate the write; keep the default for the files a
rerun trusts (``data_meta.json`` of a result, results, done-markers).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_bytes", "atomic_write_json", "atomic_write_text", "read_json_or_none"]


def atomic_write_bytes(path: str | Path, data: bytes, *, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically, creating parent folders.

    Args:
        path: Destination file.
        data: The complete new content.
        durable: Fsync the file and its folder, so the write also survives a power loss (see the module
            docstring for what ``False`` still guarantees).

    Returns:
        The destination path.

    Raises:
        OSError: The folder cannot be created or the file cannot be written; the destination is unchanged.
    """
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # os.urandom, not secrets.token_hex (the same bytes): `secrets` imports hmac and OpenSSL's hashlib, ~3 ms
    # of every scorer CLI run for a name that only has to differ from another writer's.
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    # O_EXCL: never clobber another writer's temp file; mode 0o666 lets the umask decide, as open() would.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if durable:
        _fsync_dir(dest.parent)
    return dest


def atomic_write_text(path: str | Path, text: str, *, durable: bool = True) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically (no newline translation).

    Args:
        path: Destination file.
        text: The complete new content.
        durable: Fsync the file and its folder (see `atomic_write_bytes`).

    Returns:
        The destination path.

    Raises:
        OSError: The write failed; the destination is unchanged.
    """
    return atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


def atomic_write_json(path: str | Path, obj: Any, *, indent: int | None = 2, durable: bool = True) -> Path:
    """Serialise ``obj`` as JSON and write it atomically.

    The text is produced the way the benchmark writes its own files (``indent=2``, ``ensure_ascii=False``,
    no trailing newline). NumPy scalars and arrays and `Path` objects are converted to plain JSON values.
    Serialisation happens before anything touches the disk, so an unserialisable object leaves no trace.

    Args:
        path: Destination file.
        obj: Any JSON-serialisable value.
        indent: Indentation passed to `json.dumps` (``None`` for one line).
        durable: Fsync the file and its folder (see `atomic_write_bytes`).

    Returns:
        The destination path.

    Raises:
        TypeError: ``obj`` holds a value JSON cannot represent.
        OSError: The write failed; the destination is unchanged.
    """
    text = json.dumps(obj, indent=indent, ensure_ascii=False, default=_json_default)
    return atomic_write_text(path, text, durable=durable)


def read_json_or_none(path: Path) -> Any:
    """The JSON document at ``path`` (UTF-8), or None when it is missing, unreadable or not valid JSON.

    For readers that treat a torn, foreign or absent file as "nothing there"; a file holding JSON ``null``
    also reads as None.
    """
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


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

"""One writer per run folder: an advisory lock on ``<run>/.run.lock``, taken before the run writes anything.

Two runs pointed at the same ``hydra.run.dir`` would interleave their atomic writes and the last one to finish
would leave a ``metrics.json`` covering whatever it saw. The lock is an ``fcntl.flock`` on a file in the run
folder, held by the process for the run's lifetime and holding the holder's pid (so the refusal can name it).
The kernel drops a ``flock`` when its process dies, however it dies: a lock file left by a killed run holds a
pid but no lock, and the next run takes it over with a note. A run that ends normally empties the file.

Example:
    >>> hold_run_folder(Path("runs/s3"))  # doctest: +SKIP
    >>> hold_run_folder(Path("runs/s3"))  # again in the same process: a no-op  # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LOCK_NAME",
    "RunFolderBusy",
    "abandon_run_folder",
    "hold_run_folder",
    "refuse_if_busy",
    "release_run_folder",
    "run_folder_lock",
    "takeover_note",
]

LOCK_NAME = ".run.lock"
"""The lock file inside a run folder."""


class RunFolderBusy(RuntimeError):
    """Another live process holds the run folder's lock.

    Args:
        run_dir: The run folder.
        pid: The holder's pid (None when its lock file does not say).
    """

    def __init__(self, run_dir: Path, pid: int | None) -> None:
        who = f"pid {pid}" if pid is not None else "another process"
        super().__init__(
            f"run folder {run_dir} is in use by another run ({who}); wait for it to end or pick another "
            "hydra.run.dir"
        )
        self.run_dir = run_dir
        self.pid = pid


@dataclass
class _Held:
    fd: int
    path: Path
    owner: int  # the pid that took it: a forked worker inherits the descriptor but must not release it
    made: list[Path]  # what taking the lock created (the lock file, folders), newest first: undone on refusal


# Resolved run folder -> the open lock file. flock conflicts between two open files of one process too, so
# a second `hold_run_folder` from one process (the Hydra callback, then the run itself) reuses the first.
_held: dict[Path, _Held] = {}
_guard = threading.Lock()


def _read_pid(fd: int) -> int | None:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 64).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


def hold_run_folder(run_dir: str | Path) -> int | None:
    """Take the run folder's lock for the rest of this process's life (creating the folder if needed).

    Args:
        run_dir: The run folder.

    Returns:
        The pid of a dead run whose lock file was taken over (the caller tells the user), else None.

    Raises:
        RunFolderBusy: Another live process holds the lock; nothing was written.
        PermissionError: The folder cannot be created or the lock file cannot be written.
    """
    folder = Path(run_dir).expanduser()
    key = folder.resolve()
    with _guard:
        if key in _held:
            return None
        made = [p for p in (folder, *folder.parents) if not p.exists()]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / LOCK_NAME
        if not path.exists():
            made.insert(0, path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise RunFolderBusy(folder, pid) from None  # the folder and lock file were there: nothing made
        except BaseException:
            os.close(fd)
            raise
        previous = _read_pid(fd)
        if previous == os.getpid():
            previous = None
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        _held[key] = _Held(fd, path, os.getpid(), made)
    # We hold the flock, so whoever wrote that pid no longer does: it was killed or crashed mid-run.
    return previous


def refuse_if_busy(run_dir: str | Path) -> None:
    """Refuse a run folder another live process holds, without taking its lock or writing anything.

    Args:
        run_dir: The run folder.

    Raises:
        RunFolderBusy: Another live process holds the lock.
    """
    folder = Path(run_dir).expanduser()
    with _guard:
        if folder.resolve() in _held:
            return  # this process holds it (the callback took it before the run checks again)
    try:
        fd = os.open(folder / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return  # no lock file: nobody has started a run there
    try:
        # A read-only descriptor takes a flock as well (flock(2)); opening it changes no content nor mtime.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RunFolderBusy(folder, _read_pid(fd)) from None
    finally:
        os.close(fd)  # drops the probe's lock, if it got it


def takeover_note(run_dir: str | Path, pid: int) -> str:
    """The one line telling the user a dead run's lock was taken over.

    Args:
        run_dir: The run folder.
        pid: The dead run's pid (from `hold_run_folder`).

    Returns:
        The note.
    """
    return f"note: run folder {run_dir}: taking over the lock left by pid {pid} (no longer running)"


def release_run_folder(run_dir: str | Path) -> None:
    """Empty the lock file and drop the lock (a no-op when this process does not hold it).

    Args:
        run_dir: The run folder.
    """
    with _guard:
        held = _held.pop(Path(run_dir).expanduser().resolve(), None)
    if held is None or held.owner != os.getpid():
        return
    with contextlib.suppress(OSError):  # a vanished or read-only folder: the kernel still drops the lock
        os.ftruncate(held.fd, 0)
    os.close(held.fd)


def abandon_run_folder(run_dir: str | Path) -> None:
    """Drop the lock and remove what taking it created (the lock file, the folder if it was new).

    For a run refused after it took the lock (its config failed the preflight): a refused run leaves nothing.

    Args:
        run_dir: The run folder.
    """
    with _guard:
        held = _held.get(Path(run_dir).expanduser().resolve())
    if held is None or held.owner != os.getpid():
        return
    made = held.made
    release_run_folder(run_dir)
    for path in made:  # newest first: the lock file, then the folders from the innermost out
        with contextlib.suppress(OSError):  # a folder something else wrote into stays
            if path.is_dir():
                path.rmdir()
            else:
                path.unlink()


@contextlib.contextmanager
def run_folder_lock(run_dir: str | Path) -> Iterator[int | None]:
    """Hold the run folder's lock for a block; released at its end only when it was taken here.

    Args:
        run_dir: The run folder.

    Yields:
        The pid of a dead run whose lock was taken over, else None.

    Raises:
        RunFolderBusy: Another live process holds the lock.
    """
    with _guard:
        already = Path(run_dir).expanduser().resolve() in _held
    dead = hold_run_folder(run_dir)
    try:
        yield dead
    finally:
        if not already:
            release_run_folder(run_dir)


@atexit.register
def _release_all() -> None:
    # A clean exit leaves an empty lock file, so only a run that died leaves a pid behind (and a note later).
    for key in list(_held):
        release_run_folder(key)

"""Renders and views the tools already made, kept per process: the same file rendered the same way is one PNG.

Candidates of a dataset render the same raw files, mostly with the same arguments (S3's n candidates, every
revision round of S1/S2, a model rendering an image twice): reading, rendering and PNG encoding are pure
functions of the file's bytes and the arguments, so the encoded PNG and what the tool reports about it are
kept and written again for the next candidate. The key holds each file's identity (device, inode, size,
modification time in ns) besides its path, so a file changed in between is read again; folders (a DICOM
series) are never cached, since a file changed inside keeps the folder's identity. ``view_image`` keeps what
it shows the model the same way (an output image by the SHA-256 of its bytes, a dataset file by its
identity), and ``inspect`` its summary of a file (by the file's identity; failures are not kept). The cache
holds at most ``max_bytes`` (least recently used dropped first) and is shared by the threads of one process.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RENDERS", "InspectedFile", "RenderCache", "RenderedFile", "ViewedImage", "file_identity"]


def file_identity(path: Path) -> tuple[str, int, int, int, int] | None:
    """The identity of a regular file for a cache key, ``(path, device, inode, size, mtime_ns)``; None for a
    folder or an unreadable path.
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


@dataclass(frozen=True)
class RenderedFile:
    """One render, as the tool writes and reports it.

    Attributes:
        png: The encoded PNG.
        width: Width in pixels.
        height: Height in pixels.
        info: ``Rendered.info`` as `medio.render` returned it (absolute paths included).
        source: The source facts the tool reports (format, shape, axes, spacing ...).
        label_values: The distinct pixel values of a mask (None for an image).
    """

    png: bytes
    width: int
    height: int
    info: dict[str, Any]
    source: dict[str, Any]
    label_values: list[int] | None
    #: ``info`` with the dataset root stripped from its paths, by root (filled by the tool on first use).
    shown: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def nbytes(self) -> int:
        """The size counted against the cache's bound."""
        return len(self.png)


@dataclass(frozen=True)
class ViewedImage:
    """What ``view_image`` reports about one image.

    Attributes:
        summary: The text summary's fields after ``path`` (size, mode, min, max, mean, distinct values).
        url: The ``data:image/png;base64,...`` URL shown to a vision model, or None.
    """

    summary: dict[str, Any]
    url: str | None

    @property
    def nbytes(self) -> int:
        """The size counted against the cache's bound."""
        return len(self.url or "") + 256


@dataclass(frozen=True)
class InspectedFile:
    """What ``medio.inspect`` said about one file (absolute paths included; the tool relativizes them).

    Attributes:
        summary: The summary.
        size: Its length as JSON, counted against the cache's bound.
    """

    summary: dict[str, Any]
    size: int

    @property
    def nbytes(self) -> int:
        """The size counted against the cache's bound."""
        return self.size


Cached = RenderedFile | ViewedImage | InspectedFile


class RenderCache:
    """A bounded, thread-safe LRU of `RenderedFile` / `ViewedImage` / `InspectedFile` by key.

    Args:
        max_bytes: Most bytes held (PNGs and data URLs); a single larger item is not kept.
    """

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, Cached] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._making: dict[Hashable, threading.Event] = {}
        #: Lookups answered, and lookups missed (for perf scripts and tests).
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Cached | None:
        """Return the item kept for ``key``, or None.

        Args:
            key: From the caller (file identities and arguments).

        Returns:
            The item, or None.
        """
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return found

    def get_or_make(self, key: Hashable, make: Callable[[], Cached]) -> Cached:
        """The item kept for ``key``, or ``make()``'s (its exceptions reach the caller that called it), kept;
        made once when several threads ask at once.

        The candidates of S3/S4 render the same files with the same arguments, often at the same moment (their
        model calls return together): a caller that finds ``key`` being made by another thread waits for it
        instead of making it again. If that maker fails (or its item is too large to keep), the waiters make
        it themselves, one at a time, as if they had asked first.
        """
        while True:
            with self._lock:
                found = self._items.get(key)
                if found is not None:
                    self._items.move_to_end(key)
                    self.hits += 1
                    return found
                busy = self._making.get(key)
                if busy is None:
                    self.misses += 1
                    done = self._making[key] = threading.Event()
            if busy is not None:
                busy.wait()
                continue
            try:
                value = make()
                self.put(key, value)
                return value
            finally:
                with self._lock:
                    del self._making[key]
                done.set()

    def put(self, key: Hashable, value: Cached) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used items beyond ``max_bytes``.

        Args:
            key: From the caller.
            value: The render or view.
        """
        size = value.nbytes
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._items[key] = value
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, dropped = self._items.popitem(last=False)
                self._bytes -= dropped.nbytes

    def clear(self) -> None:
        """Drop every item and reset the counters."""
        with self._lock:
            self._items.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


#: The process's cache, used by every `ToolBox` of the process.
RENDERS = RenderCache()

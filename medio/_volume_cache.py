"""A bounded, per-process cache of decoded images (DICOM series volumes, one-file images), keyed by the exact
files they came from.

Why: a run reads each source many times (every candidate of S3/S4 reads it, the validator re-renders it for
every candidate, an agent's tools read it again), and decoding is reading and parsing the file (for a series,
every one of its files). An image is kept only while the files it was read from are unchanged: the key holds
each file's path, modification time and size (`medio.dicom_series`; `medio.read` adds the inode and change
time), so a rewritten file is a new key.

Readers get their own copy of the array and the header facts (callers may write into either). Concurrent
readers of one series wait for the first one's decode instead of decoding it once each. A forked child starts
with an empty cache and fresh locks (a lock held by another thread at the fork would never be released there).
"""

from __future__ import annotations

import copy
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from core.environment import read_cache_bytes
from medio.types import MedImage

#: The most bytes of pixel data the cache holds in one process; least recently used volumes go first.
MAX_BYTES = 256 * 2**20
#: A volume larger than this is never kept (one huge series must not evict every other one).
MAX_ENTRY_BYTES = 128 * 2**20


_lock = threading.Lock()
_volumes: OrderedDict[Hashable, MedImage] = OrderedDict()
_held = 0
_decoding: dict[Hashable, threading.Lock] = {}


def _copy(image: MedImage) -> MedImage:
    return MedImage(image.array.copy(), copy.deepcopy(image.meta))


def cached_volume(key: Hashable, decode: Callable[[], MedImage]) -> MedImage:
    """The volume of ``key`` (the volume and the file versions it is decoded from), as a copy the caller owns:
    of the kept one, else ``decode()``'s (kept when it fits; its errors reach the caller, nothing is kept).
    """
    global _held
    # MEDSTRAT_READ_CACHE_MB (`core.environment.READ_CACHE_ENV`) bounds it in MiB instead of `MAX_BYTES`, 0
    # keeps nothing; each process of a run has its own cache (workers, tool and validation processes). A
    # malformed value is an InputError (commands refuse it at start: `core.environment.check_environment`).
    limit = read_cache_bytes(MAX_BYTES)
    if limit == 0:
        return decode()
    with _lock:
        kept = _volumes.get(key)
        if kept is not None:
            _volumes.move_to_end(key)
            return _copy(kept)
        turn = _decoding.setdefault(key, threading.Lock())
    with turn:
        with _lock:
            kept = _volumes.get(key)
            if kept is not None:  # decoded by the reader this one waited for
                _volumes.move_to_end(key)
                return _copy(kept)
        try:
            image = decode()
        except BaseException:
            with _lock:
                _decoding.pop(key, None)
            raise
        size = int(image.array.nbytes)
        stored = _copy(image) if size <= min(MAX_ENTRY_BYTES, limit) else None
        with _lock:
            if stored is not None and key not in _volumes:
                _volumes[key] = stored
                _held += size
                while _held > limit:
                    _, dropped = _volumes.popitem(last=False)
                    _held -= int(dropped.array.nbytes)
            _decoding.pop(key, None)
        return image


def clear() -> None:
    """Forget every kept volume (and fresh locks: also what a forked child starts with)."""
    global _lock, _held
    _lock = threading.Lock()
    _volumes.clear()
    _decoding.clear()
    _held = 0


def held_bytes() -> int:
    """Bytes of pixel data kept now."""
    return _held


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=clear)

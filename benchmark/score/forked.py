"""Scoring the models of one dataset in this process and forked copies of it, for the per-dataset CLI.

``python -m benchmark.score --dataset-dir`` scores ~30 model folders of one dataset in ~150 ms, most of a run
that lasts ~250 ms. A process pool costs more than it saves at that size (spawning and importing alone take
~100 ms per worker), but `os.fork` after the imports costs ~2 ms: the child inherits the imported modules,
the loaded ground truth and its parsed context.

How the work is shared: before forking, the model indices are written into a pipe as fixed-size records.
Every process (this one and its children) takes the next index by reading one record, so whoever is free
takes the next model. The work is uneven (a model with a corrupt image pays Pillow's ~40 ms plugin import,
the others take ~4 ms), so a static split would leave one process waiting. A child pickles its results
into its own pipe when the queue is empty and exits; this process merges them in the original order.

Degrading: no `os.fork` (Windows), a fork that fails, or a child that dies (killed, crashed, unpickleable
output) never loses a model: whatever no process reported is scored here afterwards, with one warning line
when a child failed. A child is always reaped (no zombie), also when this process is interrupted. Results
do not depend on which process scored a model: scoring is deterministic and the shared context only memoises
values computed from the same inputs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_R = TypeVar("_R")

MIN_ITEMS_PER_PROCESS = 2
"""Fewer items than this per process are scored in one process: the fork and pickle would not pay."""

_RECORD = struct.Struct("=H")
_MAX_ITEMS = min(getattr(os, "PIPE_BUF", 512), 512) // _RECORD.size
"""The queue is written before forking, at once: it must fit in the pipe without blocking (POSIX guarantees
PIPE_BUF >= 512 bytes)."""


def can_fork() -> bool:
    """Whether this platform has `os.fork` (not Windows)."""
    return hasattr(os, "fork")


def processes_for(n_items: int, workers: int | None) -> int:
    """How many processes (this one included) to score ``n_items`` with.

    Args:
        n_items: Items (models) to score.
        workers: Wanted processes; None = the CPU count. 1 (or less) = this process only.

    Returns:
        At least 1; more only when forking is available, the CPU count allows it and every process gets at
        least `MIN_ITEMS_PER_PROCESS` items.
    """
    wanted = workers if workers is not None else (os.cpu_count() or 1)
    if wanted <= 1 or not can_fork() or n_items > _MAX_ITEMS:
        return 1
    return max(1, min(wanted, n_items // MIN_ITEMS_PER_PROCESS))


def map_forked(score: Callable[[_T], _R], items: Sequence[_T], processes: int) -> list[_R]:
    """``[score(item) for item in items]``, the items shared among this process and ``processes - 1`` forks.

    Args:
        score: Scores one item; must be deterministic (the same result in any process) and return plain
            picklable values.
        items: The items, in output order.
        processes: Total processes, this one included (see `processes_for`); 1 = plain serial loop.

    Returns:
        One result per item, in order. An exception raised by ``score`` in this process propagates (the
        children are killed and reaped first); one raised in a child makes this process score that child's
        items again, so it propagates from here just as in the serial loop.
    """
    if processes <= 1 or len(items) > _MAX_ITEMS or not can_fork():
        return [score(item) for item in items]
    queue_r, queue_w = os.pipe()
    os.write(queue_w, b"".join(_RECORD.pack(i) for i in range(len(items))))
    os.close(queue_w)  # an empty queue then reads as EOF in every process
    children: list[tuple[int, int]] = []  # (pid, read end of its result pipe)
    done: dict[int, _R] = {}
    try:
        # Buffered output would be written twice (by the child too) if it were still in the buffers.
        sys.stdout.flush()
        sys.stderr.flush()
        for _ in range(processes - 1):
            child = _fork_child(score, items, queue_r)
            if child is None:
                break
            children.append(child)
        for i in _take(queue_r, len(items)):
            done[i] = score(items[i])
        while children:
            done.update(_collect(*children.pop(0), len(items)))  # reaps the child, whatever happens
    finally:
        os.close(queue_r)
        for pid, result_r in children:  # only after an exception here: stop and reap the remaining children
            _kill_and_reap(pid, result_r)
    # Items no process reported (a child died): scored here, in order.
    return [done[i] if i in done else score(items[i]) for i in range(len(items))]


def _take(queue_r: int, n_items: int) -> Iterator[int]:
    """Yield the next item index from the shared queue until it is empty."""
    while True:
        record = os.read(queue_r, _RECORD.size)
        if len(record) != _RECORD.size:  # EOF (or a torn record: stop; the parent scores what is left)
            return
        (i,) = _RECORD.unpack(record)
        if i < n_items:
            yield i


def _fork_child(score: Callable[[_T], _R], items: Sequence[_T], queue_r: int) -> tuple[int, int] | None:
    """Fork a child that scores from the queue: ``(pid, read end of its result pipe)``; None if no fork."""
    result_r, result_w = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:  # out of processes or memory: the remaining processes take the child's share
        log.debug("no fork for scoring (%s); scoring in this process", exc)
        os.close(result_r)
        os.close(result_w)
        return None
    if pid == 0:  # pragma: no cover - runs in the child, which leaves by os._exit (coverage cannot see it)
        os.close(result_r)
        _child_main(score, items, queue_r, result_w)
    os.close(result_w)
    return pid, result_r


def _child_main(score: Callable[[_T], _R], items: Sequence[_T], queue_r: int, result_w: int) -> None:
    """Score from the queue and send ``{index: result}`` pickled; never returns (`os._exit`)."""
    code = 1
    try:
        import pickle

        results = {i: score(items[i]) for i in _take(queue_r, len(items))}
        payload = pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(result_w, "wb", closefd=True) as out:
            out.write(payload)
        code = 0
    except BaseException:  # reported by the parent, which scores these items again (and raises the same)
        code = 1
    finally:
        # os._exit: no atexit handlers, no flushing of buffers inherited from the parent, no finally blocks of
        # the parent's frames: the child's only job is done.
        os._exit(code)


def _collect(pid: int, result_r: int, n_items: int) -> dict[int, Any]:
    """Read a child's results to EOF and reap it; {} (with a warning) when it failed."""
    chunks: list[bytes] = []
    try:
        while chunk := os.read(result_r, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(result_r)
        _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        import pickle

        try:
            results = pickle.loads(b"".join(chunks))
        except Exception as exc:  # a torn payload: its items are scored here instead
            log.warning("scoring process %d sent unreadable results (%s); scoring its models here", pid, exc)
            return {}
        if isinstance(results, dict) and all(type(i) is int and 0 <= i < n_items for i in results):
            return results
        how = "sent results for unknown models"
    else:
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    log.warning("scoring process %d %s; scoring its models in this process", pid, how)
    return {}


def _kill_and_reap(pid: int, result_r: int) -> None:
    """Stop a child that is no longer wanted and wait for it, so no zombie is left."""
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.close(result_r)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)

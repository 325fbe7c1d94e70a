"""Scoring the models of one dataset in this process and forked copies of it, for the per-dataset CLI.

``medstrat score --dataset-dir`` scores ~30 model folders of one dataset in ~150 ms, most of a run
that lasts ~250 ms. A process pool costs more than it saves at that size (spawning and importing alone take
~100 ms per worker), but `os.fork` after the imports costs ~2 ms: the child inherits the imported modules,
the loaded ground truth and its parsed context.

How the work is shared: one byte per item in an anonymous shared memory map says whether it is claimed. Each
process claims the next unclaimed item and scores it, so whoever is free takes the next model; this process
goes from the front, the children from the back. A claim is a read then a write, not atomic: two processes
may, rarely, both score one item, which only costs time, as scoring is deterministic and either result is the
same.

Items with a costly one-time setup: a model with an image that is not a well-formed PNG is checked by Pillow,
whose first use loads all its plugins (~40 ms; a model otherwise takes ~4 ms). When each process met such a
model, each paid that. So this process first tells these items apart (``needs_setup``, a cheap look at the
files, ~0.1 ms a model) and then scores only the others, while the first child, which starts at once from the
back, takes the costly ones as soon as they are known; this process takes costly ones too only when so many
are left that sharing them pays for a second setup.

Degrading: no `os.fork` (Windows), a fork that fails, or a child that dies (killed, crashed, unpickleable
output) never loses an item: whatever no process reported is scored here afterwards, with one warning line
when a child failed. A child is always reaped (no zombie), also when this process is interrupted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_R = TypeVar("_R")

MIN_ITEMS_PER_PROCESS = 2
"""Fewer items than this per process are scored in one process: the fork and pickle would not pay."""

SETUP_IN_ITEMS = 10
"""What the costly setup costs, in items (Pillow's plugins ~40 ms, a model ~4 ms): a second process takes
costly items only when more than twice this many are left, where sharing them saves more than it costs."""

# The shared map: a claim byte per item, then a setup mark per item, then one byte set once all are marked.
_FREE, _CLAIMED = 0, 1
_UNKNOWN, _PLAIN, _COSTLY = 0, 1, 2


def can_fork() -> bool:
    """Whether this platform has `os.fork` (not Windows)."""
    return hasattr(os, "fork")


def processes_for(n_items: int, workers: int | None) -> int:
    """How many processes (this one included) to score ``n_items`` with.

    Args:
        n_items: Items (models) to score.
        workers: Wanted processes; None = the CPU count. 1 (or less) = this process only.

    Returns:
        At least 1; more only when forking is available, this process runs a single thread, the CPU count
        allows it and every process gets at least `MIN_ITEMS_PER_PROCESS` items.
    """
    wanted = workers if workers is not None else (os.cpu_count() or 1)
    # A fork copies only the calling thread: a lock another thread holds (logging's, an allocator's) would
    # stay locked forever in the child. The CLI is single-threaded; a threaded caller scores serially.
    if wanted <= 1 or not can_fork() or threading.active_count() > 1:
        return 1
    return max(1, min(wanted, n_items // MIN_ITEMS_PER_PROCESS))


def map_forked(
    score: Callable[[_T], _R],
    items: Sequence[_T],
    processes: int,
    *,
    needs_setup: Callable[[_T], bool] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> list[_R]:
    """``[score(item) for item in items]``, the items shared among this process and ``processes - 1`` forks.

    Args:
        score: Scores one item; must be deterministic (the same result in any process) and return picklable
            values.
        items: The items, in output order.
        processes: Total processes, this one included (see `processes_for`); 1 = plain serial loop.
        needs_setup: Whether scoring an item needs a costly one-time setup in its process (only a hint for who
            scores what, never for the result); None = no item does.
        meanwhile: Called once in this process when its share is scored, before it waits for the children
            (work of the caller's that then overlaps theirs); in the serial case, after the loop.

    Returns:
        One result per item, in order. An exception raised by ``score`` in this process propagates (the
        children are killed and reaped first); one raised in a child makes this process score that child's
        items again, so it propagates from here just as in the serial loop.
    """
    if processes <= 1 or not items or not can_fork():
        serial = [score(item) for item in items]
        if meanwhile is not None:
            meanwhile()
        return serial
    import mmap

    n = len(items)
    shared = mmap.mmap(-1, 2 * n + 1)  # anonymous, shared with the forks, zeroed
    children: list[tuple[int, int]] = []  # (pid, read end of its result pipe)
    done: dict[int, _R] = {}
    try:
        # Buffered output would be written twice (by the child too) if it were still in the buffers.
        sys.stdout.flush()
        sys.stderr.flush()
        for k in range(processes - 1):
            child = _fork_child(score, items, shared, takes_costly=k == 0)
            if child is None:
                break
            children.append(child)
        if children:
            for i, item in enumerate(items):
                shared[n + i] = _COSTLY if needs_setup is not None and needs_setup(item) else _PLAIN
            shared[2 * n] = 1
        for i in _parent_order(shared, n, alone=not children):
            done[i] = score(items[i])
        if meanwhile is not None:
            meanwhile()
        while children:
            done.update(_collect(*children.pop(0), n))  # reaps the child, whatever happens
    finally:
        for pid, result_r in children:  # only after an exception here: stop and reap the remaining children
            _kill_and_reap(pid, result_r)
        shared.close()
    # Items no process reported (a child died): scored here, in order.
    return [done[i] if i in done else score(items[i]) for i in range(n)]


def _claim(shared: Any, i: int) -> bool:
    if shared[i] != _FREE:
        return False
    shared[i] = _CLAIMED
    return True


def _parent_order(shared: Any, n: int, *, alone: bool) -> Iterator[int]:
    """Claim items from the front: those not marked costly, then the costly ones only if worth it."""
    paid = False  # whether this process scored an item marked costly (so it has paid the setup already)
    for i in range(n):
        if (alone or shared[n + i] != _COSTLY) and _claim(shared, i):
            yield i  # scored by the caller before the next step
            paid = paid or shared[n + i] == _COSTLY
    left = [i for i in range(n) if shared[i] == _FREE]
    if alone or paid or len(left) > 2 * SETUP_IN_ITEMS:
        for i in left:
            if _claim(shared, i):
                yield i


def _child_order(shared: Any, n: int, *, takes_costly: bool) -> Iterator[int]:
    """Claim items from the back; once the items are marked, the costly ones first if ``takes_costly``, else
    never a costly one (the first child or the parent takes those)."""
    back = n - 1  # items above are claimed
    front = 0  # costly items below are claimed
    while True:
        marked = shared[2 * n] == 1
        if marked and takes_costly:
            while front < n and not (shared[n + front] == _COSTLY and shared[front] == _FREE):
                front += 1
            if front < n:
                if _claim(shared, front):
                    yield front
                continue
        while back >= 0 and not (
            shared[back] == _FREE and (takes_costly or not marked or shared[n + back] != _COSTLY)
        ):
            back -= 1
        if back < 0:
            return
        if _claim(shared, back):
            yield back


def _fork_child(
    score: Callable[[_T], _R], items: Sequence[_T], shared: Any, *, takes_costly: bool
) -> tuple[int, int] | None:
    """Fork a child that scores claimed items: ``(pid, read end of its result pipe)``; None if no fork."""
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
        code = 1
        try:
            import pickle

            results = {
                i: score(items[i]) for i in _child_order(shared, len(items), takes_costly=takes_costly)
            }
            payload = pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(result_w, "wb", closefd=True) as out:
                out.write(payload)
            code = 0
        except BaseException:  # reported by the parent, which scores these items again (and raises the same)
            code = 1
        finally:
            # os._exit: no atexit handlers, no flushing of buffers inherited from the parent, no finally
            # blocks of the parent's frames: the child's only job is done.
            os._exit(code)
    os.close(result_w)
    return pid, result_r


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

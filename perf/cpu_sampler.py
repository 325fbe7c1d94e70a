"""CPU of a process, per thread group, and of its child processes, sampled from ``/proc`` (Linux) for
`perf/concurrency.py`."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

_TICKS = os.sysconf("SC_CLK_TCK")
# Thread-name prefixes in the main process: the event loop, the loop's default executor (LiteLLM's hop),
# our tool pool, the runner's worker pool (the validator).
_GROUPS: tuple[tuple[str, str], ...] = (
    ("event loop", "MainThread"),
    ("litellm worker hop", "asyncio_"),
    ("our tools", "litellm-agent-tools"),
    ("validator pool", "ThreadPoolExecutor"),
)


def _stat_cpu(path: str) -> float | None:
    """CPU seconds (user + system) from a ``/proc/.../stat`` file; None once the thread/process is gone."""
    try:
        with open(path) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _descendants(pid: int) -> list[int]:
    """Every live descendant process of ``pid`` (children are listed per creating thread)."""
    out: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tids = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as handle:
                    kids = [int(k) for k in handle.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


class CpuSampler:
    """Samples, every ``period_s``, the CPU time of this process and of each descendant process (the run's
    workers and pools), the fake server excepted, and with ``threads`` this process's thread groups.

    With ``threads`` the sampler is a daemon thread of this process (thread names are only known here);
    without, it is a forked child process, so this process stays single-threaded: `run.processes` forks its
    workers only from a single-threaded process (else it starts a fork server), and a sampler thread would
    change what is measured.
    """

    def __init__(self, exclude: Sequence[int] = (), period_s: float = 0.05, threads: bool = True) -> None:
        self.period_s = period_s
        self.exclude = set(exclude)
        self.threads = threads
        self.samples: list[tuple[float, dict[str, float], dict[int, float]]] = []
        self._main = os.getpid()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        self._ctx = multiprocessing.get_context("fork")
        self._conn, child = self._ctx.Pipe()
        self._process = self._ctx.Process(target=self._child, args=(child,), daemon=True)

    def _sample(self) -> None:
        # Only the grouped threads are read (never the many short-lived ones): a sample costs well under a
        # millisecond, so the sampler does not perturb what it measures.
        groups = dict.fromkeys([g for g, _ in _GROUPS], 0.0) if self.threads else {}
        for thread in threading.enumerate() if self.threads else ():
            for group, prefix in _GROUPS:
                if thread.name.startswith(prefix) and thread.native_id is not None:
                    groups[group] += _stat_cpu(f"/proc/self/task/{thread.native_id}/stat") or 0.0
                    break
        procs: dict[int, float] = {}
        for pid in [self._main, *_descendants(self._main)]:
            cpu = None if pid in self.exclude else _stat_cpu(f"/proc/{pid}/stat")
            if cpu is not None:
                procs[pid] = cpu
        self.samples.append((time.perf_counter(), groups, procs))

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self._sample()

    def _child(self, conn: Any) -> None:
        self.exclude.add(os.getpid())
        while not conn.poll(self.period_s):
            self._sample()
        self._sample()
        conn.send(self.samples)

    def __enter__(self) -> CpuSampler:
        if self.threads:
            self._sample()
            self._thread.start()
        else:
            self._process.start()
            self.exclude.add(self._process.pid or 0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.threads:
            self._stop.set()
            self._thread.join()
            self._sample()
        else:
            self._conn.send("stop")
            self.samples = self._conn.recv()
            self._process.join(timeout=30)

    def between(self, t0: float, t1: float) -> tuple[dict[str, float], dict[str, float]]:
        """Per-process and per-thread-group CPU spent between two ``perf_counter`` times.

        Returns:
            ``({"main": s, "child 1": s, ...}, {group: s})``: children in decreasing CPU; a process born
            in the window counts from 0, one that ended counts up to its last sample.
        """
        first = min(self.samples, key=lambda s: abs(s[0] - t0))
        last = min(self.samples, key=lambda s: abs(s[0] - t1))
        window = [s for s in self.samples if first[0] <= s[0] <= last[0]]
        groups = {g: last[1][g] - first[1][g] for g in last[1]}
        spent: dict[int, float] = {}
        for _, _, procs in window:
            for pid, cpu in procs.items():
                spent[pid] = cpu - first[2].get(pid, 0.0)
        main = spent.pop(self._main, 0.0)
        children = sorted(spent.values(), reverse=True)
        return {"main": main, **{f"child {k + 1}": v for k, v in enumerate(children) if v > 0}}, groups

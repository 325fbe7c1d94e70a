"""``run.processes=N``: a run's datasets split over N worker processes, merged back as one process would.

Why: a process spends CPU on every model call (LiteLLM's request and response handling, our agent loop, the
tools), all under one GIL; at many calls in flight one process is CPU-bound long before the provider is.
Datasets are independent, so N processes, each with its own event loop, semaphore and thread pools, use N
cores.

How a run is split (`split_tasks`): the datasets go to ``min(N, datasets, run.concurrency)`` workers,
largest expected work first (samples x candidates) onto the least loaded worker; each worker gets a share
of ``run.concurrency`` proportional to its work (the shares sum to the total, each >= 1).

What each worker does (`_worker`): rebuilds the strategy and the agent from the plain config
(`experiments.run.plan.build_components`; live objects never cross a process boundary) and runs its share with
`experiments.run.loop.run_tasks`, the code a one-process run executes, so it writes the same done-markers and
returns the same records. Its log records, finished candidates and datasets, and finally its records (or
the exception that stopped it) travel to the parent through its own pipe.

What is shared: the budget. Each worker's plan holds the run's one `agents.budget.Budget` (the same class
a one-process run uses), built over a `SharedLedger`: its spend and hit flag live in shared memory under one
lock, so ``run.budget_usd=X`` stops starting calls in every process once X is spent (overshoot: the calls in
flight, as in one process). Everything else is merged by the parent: records in the run's dataset order, the
progress bar, usage (from the records), errors; the run folder is written by the same `_finish`.

Start method (`start_method`): ``fork`` when the parent has one thread, which is what ``python -m
experiments`` is at this point (the workers start right after ``medio.preload()``, before the run creates a
thread pool or the progress bar): the workers inherit every imported module (litellm's import alone is
several CPU seconds) at no cost. When the caller already runs threads (a test's in-process fake server, a
profiler), one of them could hold a lock at the moment of the fork and deadlock the child, so
``forkserver`` is used instead, with the heavy modules the parent already imported preloaded once in the
server.

Failures: an exception that stops a one-process run (`FatalAgentError`, a storage failure, a bug) stops the
other workers and is raised again in the parent, so the command line prints the same one line and exit code;
a worker that dies (killed) is named with its datasets in `WorkerLost` once the others have finished (their
work stays on disk for resume); on SIGINT/SIGTERM the parent stops the workers (they ignore SIGINT, so a
terminal's Ctrl-C reaches the parent only) and raises ``KeyboardInterrupt``.
"""

from __future__ import annotations

import logging
import logging.handlers
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace
from multiprocessing.context import BaseContext
from typing import TYPE_CHECKING, Any

from agents.base import Agent, Candidate, calls_model
from agents.budget import Budget
from experiments.run.loop import TasksJob
from experiments.run.options import run_budget, whole_number

if TYPE_CHECKING:
    from experiments.run.plan import RunSettings

__all__ = [
    "SharedLedger",
    "WorkerLost",
    "name_worker_preloads",
    "resolve_processes",
    "run_in_processes",
    "split_tasks",
    "start_method",
]

log = logging.getLogger(__name__)

_STOP_TIMEOUT_S = 10.0
"""How long a stopped worker may take to exit before it is killed."""


class WorkerLost(RuntimeError):
    """A worker process died (killed, out of memory) before it returned its datasets' records.

    The message names the worker, how it died and its datasets; the other workers finished, and everything
    finished is on disk (done-markers), so ``run.resume=true`` continues the run.
    """


def resolve_processes(value: Any, agent: Agent) -> int:
    """``run.processes`` as a number of processes.

    Args:
        value: The config value: ``auto`` (or unset: a run folder from before the key existed), or a whole
            number >= 1.
        agent: The run's agent: ``auto`` is the CPU count for an agent that calls a model
            (`agents.base.calls_model`), else 1.

    Returns:
        The number of processes asked for (the run uses at most one per dataset).

    Raises:
        ValueError: Anything else (``0``, ``-1``, ``abc``, ``1.5``, ``true``).
    """
    if value is None or str(value).strip().lower() == "auto":
        return (os.cpu_count() or 1) if calls_model(agent) else 1
    what = "expected auto or a whole number >= 1 (worker processes for datasets)"
    return whole_number(value, f"run.processes={value!r}: {what}")


def _weight(job: TasksJob, index: int, candidates: int) -> int:
    return max(1, len(job.tasks[index].entries)) * candidates


def split_tasks(job: TasksJob, processes: int, candidates: Any = None) -> list[TasksJob]:
    """Split a run's datasets over worker processes, balancing their expected work.

    Args:
        job: The whole run.
        processes: Processes asked for (`resolve_processes`).
        candidates: Candidates per dataset (``strategy.n``; None counts 1): work = samples x candidates.

    Returns:
        One job per worker (datasets in the run's order, a share of ``job.concurrency`` proportional to
        the work, each >= 1, summing to the total); ``[job]`` when one process suffices.
    """
    count = min(processes, len(job.tasks), max(1, job.concurrency))
    if count <= 1:
        return [job]
    per = max(1, int(candidates or 1))
    loads = [0] * count
    owner: dict[int, int] = {}
    # Largest first onto the least loaded worker (ties: the lower worker), a classic greedy balance.
    for index in sorted(range(len(job.tasks)), key=lambda i: (-_weight(job, i, per), job.tasks[i].name)):
        worker = min(range(count), key=lambda w: (loads[w], w))
        owner[index] = worker
        loads[worker] += _weight(job, index, per)
    shares = _shares(job.concurrency, loads)
    return [
        replace(
            job,
            tasks=tuple(t for i, t in enumerate(job.tasks) if owner[i] == worker),
            concurrency=shares[worker],
        )
        for worker in range(count)
    ]


def _shares(total: int, loads: Sequence[int]) -> list[int]:
    """``total`` split in proportion to ``loads`` (largest remainders), each share >= 1."""
    spare = total - len(loads)
    exact = [spare * load / sum(loads) for load in loads]
    shares = [1 + int(x) for x in exact]
    by_remainder = sorted(range(len(loads)), key=lambda w: (-(exact[w] - int(exact[w])), w))
    for worker in by_remainder[: total - sum(shares)]:
        shares[worker] += 1
    return shares


class SharedLedger:
    """The run's spend (tokens, dollars) and budget-hit flag in shared memory under one lock, visible to every
    process of the run: the `agents.budget.Ledger` of a multi-process run.

    Args:
        ctx: The multiprocessing context the workers are started with.
    """

    def __init__(self, ctx: BaseContext) -> None:
        self._values = ctx.RawArray("d", 3)  # tokens, dollars, hit
        self.lock = ctx.Lock()

    def add(self, tokens: int, usd: float) -> None:
        """Add spend."""
        with self.lock:
            self._values[0] += tokens
            self._values[1] += usd

    def read(self) -> tuple[int, float]:
        """The ``(tokens, dollars)`` spent by every process, read as one snapshot."""
        with self.lock:
            return int(self._values[0]), float(self._values[1])

    def get_hit(self) -> bool:
        """Whether a process found the budget spent."""
        return bool(self._values[2])

    def set_hit(self) -> None:
        """Record that a process found the budget spent."""
        self._values[2] = 1.0


def start_method() -> str:
    """``fork`` while this process has a single thread, else ``forkserver`` (see the module docstring)."""
    return "fork" if threading.active_count() == 1 else "forkserver"


def _context(method: str) -> BaseContext:
    """The multiprocessing context for the workers: ``fork``, or the program's one fork server
    (`medio.processes`: the format readers preloaded) with this module, the run's builders and, when the
    parent imported it, litellm preloaded too (offline: `agents.model.offline`). litellm is never imported
    where it was not."""
    if method == "fork":
        return multiprocessing.get_context("fork")
    from medio.processes import worker_context

    name_worker_preloads(litellm="litellm" in sys.modules)
    return worker_context()


def name_worker_preloads(*, litellm: bool) -> None:
    """Name what the fork server preloads for run workers: this module and the run's builders, and with
    ``litellm`` the LiteLLM agent and litellm itself (offline: `agents.model.offline`).

    The server is one per program and takes the names given before its first worker starts (of any pool):
    a program that starts a pool before its first LiteLLM run calls this first with ``litellm=True``, or
    each later run worker imports litellm itself (several CPU seconds).

    Args:
        litellm: Whether the workers will run the LiteLLM agent.
    """
    from medio.processes import preload_in_workers

    modules = ["experiments.run.processes", "experiments.run.plan", "experiments.run.loop"]
    if litellm:
        modules += ["agents.llm.agent", "agents.model.offline"]
    preload_in_workers(*modules)


@dataclass(frozen=True)
class _WorkerSpec:
    """What a worker receives: plain data only."""

    number: int
    config: dict[str, Any]
    job: TasksJob
    log_level: int
    environ: dict[str, str]


class _Pipe:
    """The worker's end of its pipe, safe to send on from the event loop and the tool threads at once."""

    def __init__(self, conn: multiprocessing.connection.Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()

    def send(self, message: tuple[Any, ...]) -> None:
        with self._lock:
            self._conn.send(message)

    def put_nowait(self, record: logging.LogRecord) -> None:
        """The queue interface of `logging.handlers.QueueHandler`."""
        self.send(("log", record))

    def candidate_done(self, candidate: Candidate) -> None:
        """Report a finished candidate to the parent's progress bar."""
        self.send(("candidate", candidate))

    def dataset_done(self, name: str, *, reused: bool = False) -> None:
        """Report a finished dataset to the parent's progress bar."""
        self.send(("dataset", name, reused))


def _watch_parent(parent: int) -> None:
    """End this worker when its parent ``parent`` is gone (killed with SIGKILL): nobody reads its results.

    The pid is the one the worker saw first: read later (after the preload, seconds on a loaded machine), it
    could already be the reaper the orphan was given, and the watch would never fire.
    """
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _worker(spec: _WorkerSpec, conn: multiprocessing.connection.Connection, ledger: SharedLedger) -> None:
    """A worker process: run one share of the datasets and send the records (or the exception) back."""
    # The parent decides about interruptions: a terminal's Ctrl-C reaches the whole process group, and a
    # worker must neither print a traceback nor stop on its own; SIGTERM (from the parent) ends it at once.
    parent = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # The parent's environment as it is now (API keys set after start-up included): a fork-server worker would
    # otherwise see the server's, frozen when the server started.
    os.environ.clear()
    os.environ.update(spec.environ)
    pipe = _Pipe(conn)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(logging.handlers.QueueHandler(pipe))  # type: ignore[arg-type]
    root.setLevel(spec.log_level)
    try:
        import medio
        from experiments.run.loop import run_tasks
        from experiments.run.plan import build_from_plain
        from experiments.run.suite import format_families

        # Before this process starts a thread (docs/medio.md), the families its datasets' files name, as the
        # parent does (`format_families`); a no-op for those the parent imported before a fork.
        medio.preload(format_families(t.root for t in spec.job.tasks))
        _watch_parent(parent)
        log.info(
            "worker process %d (pid %d): %s; %d model calls in flight",
            spec.number,
            os.getpid(),
            ", ".join(t.name for t in spec.job.tasks),
            spec.job.concurrency,
        )
        plan = build_from_plain(spec.config, ledger)  # the run's budget over the shared ledger, in every role
        records = run_tasks(plan.settings.run, plan.strategy, plan.agent, spec.job, plan.budget, pipe)
        pipe.send(("done", records))
    except BaseException as exc:  # everything goes to the parent, which decides (and prints one line)
        pipe.send(("raised", _portable(exc), traceback.format_exc()))
    finally:
        conn.close()


def _portable(exc: BaseException) -> BaseException:
    """The exception itself when it survives pickling (the parent raises the same type), else its text."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


@dataclass
class _Running:
    """The parent's view of one worker."""

    spec: _WorkerSpec
    process: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection
    result: tuple[Any, ...] | None = None


def run_in_processes(
    settings: RunSettings, shares: Sequence[TasksJob], *, progress_enabled: bool
) -> tuple[dict[str, dict[str, Any]], Budget]:
    """Run each share in its own worker process and merge what they return.

    Args:
        settings: The run's settings (its plain config is what each worker builds its plan from).
        shares: One job per worker (`split_tasks`).
        progress_enabled: Show the progress bar (``run.progress``).

    Returns:
        The records by dataset name (in the shares' order), and the run's budget (spend over every
        process; ``hit`` when any process found the budget spent).

    Raises:
        FatalAgentError: A worker's agent hit a failure every candidate would hit; the others were stopped.
        OSError: A worker could no longer write the run folder; the others were stopped.
        WorkerLost: A worker died; the others finished first.
        KeyboardInterrupt: SIGINT/SIGTERM; the workers were stopped.
    """
    from experiments.run.progress import Progress

    method = start_method()
    ctx = _context(method)
    ledger = SharedLedger(ctx)
    budget = run_budget(settings.run, ledger)
    config = settings.config
    level = logging.getLogger().getEffectiveLevel()
    running: list[_Running] = []
    try:
        for number, job in enumerate(shares, 1):
            spec = _WorkerSpec(number, {str(k): v for k, v in config.items()}, job, level, dict(os.environ))
            receiver, sender = ctx.Pipe(duplex=False)
            process = ctx.Process(  # type: ignore[attr-defined]
                target=_worker, args=(spec, sender, ledger), name=f"medstrat-worker-{number}"
            )  # not a daemon: a worker may start its own process pool
            process.start()
            sender.close()  # the worker's end: closed here so a dead worker's pipe reads as closed
            running.append(_Running(spec, process, receiver))
        log.info("run.processes: %d worker processes (%s)", len(running), method)
        # Created after the workers started: tqdm's monitor thread must not exist at a fork.
        progress = Progress(sum(len(j.tasks) for j in shares), enabled=progress_enabled)
        try:
            _collect(running, progress)
        finally:
            progress.close()
    finally:
        _stop(running)
    records: dict[str, dict[str, Any]] = {}
    lost: list[str] = []
    for worker in running:
        if worker.result is None:
            lost.append(_obituary(worker))
            continue
        _, shard = worker.result
        records.update(shard)
    if lost:
        raise WorkerLost("; ".join(lost))
    return records, budget


def _collect(running: list[_Running], progress: Any) -> None:
    """Handle the workers' messages until each has returned or died; re-raise a worker's exception."""
    open_conns = {w.conn: w for w in running}
    while open_conns:
        for conn in multiprocessing.connection.wait(list(open_conns)):
            worker = open_conns[conn]  # type: ignore[index]
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):  # the worker exited: with its result sent, or killed
                del open_conns[worker.conn]
                worker.process.join(_STOP_TIMEOUT_S)
                continue
            kind = message[0]
            if kind == "log":
                record: logging.LogRecord = message[1]
                logging.getLogger(record.name).handle(record)
            elif kind == "candidate":
                progress.candidate_done(message[1])
            elif kind == "dataset":
                progress.dataset_done(message[1], reused=message[2])
            elif kind == "done":
                worker.result = message
            elif kind == "raised":
                exc: BaseException = message[1]
                exc.add_note(f"raised in worker process {worker.spec.number}:\n{message[2]}")  # for --debug
                if isinstance(exc, KeyboardInterrupt | SystemExit):
                    raise RuntimeError(f"worker {worker.spec.number} exited: {type(exc).__name__}")
                raise exc


def _stop(running: list[_Running]) -> None:
    """Stop the workers that are still running (SIGTERM, then SIGKILL) and reap every one."""
    for worker in running:
        if worker.process.is_alive():
            worker.process.terminate()
    for worker in running:
        worker.process.join(_STOP_TIMEOUT_S)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.conn.close()


def _obituary(worker: _Running) -> str:
    """One sentence on a worker that returned nothing: who, how it died, which datasets."""
    code = worker.process.exitcode
    how = f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
    names = ", ".join(t.name for t in worker.spec.job.tasks)
    return f"worker process {worker.spec.number} (pid {worker.process.pid}) died ({how}) running {names}"

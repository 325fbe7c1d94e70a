"""The LiteLLM agent's CPU-heavy tool calls, run in worker processes so the event loop keeps its GIL.

Rendering, PNG encoding, ``medio.inspect`` and the schema checks of the write tools are Python and NumPy
work; run in threads of the agent's own process they take the GIL from the event loop that sends and parses
model calls. `ToolPool` runs them in ``processes`` worker processes instead. A `ToolBox`'s only state is its
task and sandbox (written indices are read from disk), so a worker rebuilds it from picklable inputs
(`BoxSpec`, cached per candidate in the worker) and sends back the `ToolResult`; the agent keeps every piece
of bookkeeping (messages, trace, limits).

One call at a time per worker, each worker on its own pipe: the thread that runs an assistant turn's tools
hands the call to an idle worker and waits for the answer without holding the GIL. A worker that dies during
a call (a segfault in a reader, the OOM killer, SIGKILL) fails that call only: it becomes the tool's error
for the model (``worker_crash``), a fresh worker replaces the dead one on the next call, and the run goes
on. Workers start on first use from `medio.processes.worker_context` (forkserver, readers preloaded), ignore
SIGINT, exit when their parent goes away (their pipe closes) and are stopped by `ToolPool.close`.

Not pooled: ``list_dir``, ``read_text`` and ``finish`` (a few system calls, cheaper than the hop) and the code
tool (``run_python`` already runs its own subprocess).
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import signal
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from agents.base import Task
from agents.tools.review_tools import REVIEW_TOOLS
from agents.tools.sandbox import Sandbox, SandboxLimits
from agents.tools.tools import ToolBox, ToolResult
from medio.processes import init_worker, preload_in_workers, worker_context

__all__ = ["POOLED_TOOLS", "BoxSpec", "ToolPool"]

log = logging.getLogger(__name__)

POOLED_TOOLS: frozenset[str] = frozenset(
    {"inspect", "render", "view_image", "write_annotation", "write_data_meta", *REVIEW_TOOLS}
)
"""The tools `ToolPool.run` sends to a worker process; every other tool runs in the calling thread."""

preload_in_workers(__name__)  # the forkserver imports this module (and the tools) once for every worker

_WORKER_BOXES = 64
"""ToolBoxes a worker keeps (one per candidate it served recently); rebuilding one costs microseconds."""

_STOP_GRACE_S = 5.0
"""How long `ToolPool.close` lets a busy worker finish its call before terminating it."""


@dataclass(frozen=True)
class BoxSpec:
    """The picklable inputs of a candidate's `ToolBox` (its task, sandbox limits and vision flag).

    Attributes:
        task: The candidate's task (its dataset root and output folder define the sandbox).
        limits: The sandbox's size caps.
        vision: Whether ``view_image`` returns the image itself.
    """

    task: Task
    limits: SandboxLimits
    vision: bool

    @classmethod
    def of(cls, toolbox: ToolBox) -> BoxSpec:
        """The spec of the agent's toolbox: ``spec.build()`` runs the pooled tools exactly as ``toolbox``
        does.
        """
        return cls(toolbox.task, toolbox.sandbox.limits, toolbox.vision)

    def build(self) -> ToolBox:
        """A toolbox over the same task and sandbox (no opt-in tools: those are never pooled)."""
        return ToolBox(self.task, Sandbox(self.task.root, self.task.output_dir, self.limits), self.vision)


class _WorkerGone(Exception):
    """The worker's pipe broke: it died (or was stopped) before answering."""


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self.process = process
        self.conn = conn

    def call(self, payload: bytes) -> bytes:
        """Send one request and wait for its answer (the GIL is released while waiting)."""
        try:
            self.conn.send_bytes(payload)
            return self.conn.recv_bytes()
        except (EOFError, OSError) as exc:
            raise _WorkerGone from exc

    def stop(self, grace_s: float) -> None:
        """Ask the worker to exit, then terminate and kill it if it does not within ``grace_s``."""
        with contextlib.suppress(OSError):  # already gone
            self.conn.send_bytes(b"")
        self.process.join(grace_s)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(1.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(1.0)
        self.conn.close()

    def exit_description(self) -> str:
        """How the worker ended, for the model (``killed by signal SIGKILL``, ``exit code 1``)."""
        self.process.join(1.0)
        code = self.process.exitcode
        if code is None:
            return "stopped answering"
        if code < 0:
            try:
                return f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"


class ToolPool:
    """Run pooled tool calls in worker processes; blocking, called from the agent's tool threads.

    Args:
        processes: How many worker processes at most (started one by one, as calls need them).

    Raises:
        ValueError: ``processes`` is below 1.
    """

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise ValueError(f"a tool pool needs at least 1 process, got {processes}")
        self.processes = processes
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._starting = 0
        self._warming = False
        self._closed = False
        # One pickled spec per live toolbox: the agent makes one toolbox per candidate and reuses it.
        self._specs: weakref.WeakKeyDictionary[ToolBox, bytes] = weakref.WeakKeyDictionary()

    @property
    def pids(self) -> list[int]:
        """Process ids of the live workers (for tests and diagnostics)."""
        with self._cond:
            return [w.process.pid for w in self._workers if w.process.pid is not None]

    def run(self, toolbox: ToolBox, name: str, raw_arguments: str | None) -> ToolResult:
        """Run one tool call: pooled tools in a worker process, the others here.

        Args:
            toolbox: The candidate's toolbox (runs the call itself when the tool is not pooled).
            name: The tool name the model asked for.
            raw_arguments: The argument JSON string as the model produced it.

        Returns:
            The result, equal to ``toolbox.run(name, raw_arguments)``; a worker that died during the call
            gives a ``worker_crash`` error instead.
        """
        if name not in POOLED_TOOLS or not toolbox.offers(name):  # a tool outside the mode: refused there
            return toolbox.run(name, raw_arguments)
        payload = pickle.dumps((self._spec(toolbox), name, raw_arguments), pickle.HIGHEST_PROTOCOL)
        while True:
            try:
                worker = self._acquire()
            except Exception as exc:  # no worker could start (resource limits ...): this call's error
                log.warning("tool %s: no tool process could start: %s", name, exc)
                return ToolResult(f"{name} was not run: no tool process could start ({exc}).", "tool_error")
            if worker is None:
                return ToolResult(f"{name} was not run: the run is shutting down.", "tool_error")
            if not worker.process.is_alive():  # died while idle (killed from outside): not this call's fault
                self._discard(worker)
                continue
            try:
                reply = worker.call(payload)
            except _WorkerGone:
                how = worker.exit_description()
                self._discard(worker)
                log.warning("tool %s: its worker process %s; a new one replaces it", name, how)
                return ToolResult(
                    f"{name} crashed its tool process ({how}) and returned nothing. Files it was writing may "
                    "be missing; check them, or try other arguments or another approach.",
                    "worker_crash",
                )
            self._release(worker)
            result: ToolResult = pickle.loads(reply)
            return result

    def close(self) -> None:
        """Stop every worker (idle ones at once, busy ones after their call or a grace period); idempotent."""
        with self._cond:
            self._closed = True
            workers = list(self._workers)
            self._workers.clear()
            self._idle.clear()
            self._cond.notify_all()
        for worker in workers:
            worker.stop(_STOP_GRACE_S)

    def _spec(self, toolbox: ToolBox) -> bytes:
        with self._cond:
            spec = self._specs.get(toolbox)
            if spec is None:
                spec = self._specs[toolbox] = pickle.dumps(BoxSpec.of(toolbox), pickle.HIGHEST_PROTOCOL)
            return spec

    def warm(self) -> None:
        """Start the missing workers in a background thread, so the first tool calls find them ready.

        The first start also starts the forkserver, which loads the readers (about a second of CPU); the
        agent calls this when a candidate starts, so that cost overlaps the first model call.
        """
        with self._cond:
            if self._closed or self._warming or len(self._workers) + self._starting >= self.processes:
                return
            self._warming = True
        threading.Thread(target=self._warm, name="litellm-tool-pool-start", daemon=True).start()

    def _warm(self) -> None:
        try:
            while (worker := self._new_worker()) is not None:
                self._release(worker)
        except Exception as exc:  # the calls themselves will report it, one tool error each
            log.warning("the tool processes could not start: %s", exc)
        finally:
            with self._cond:
                self._warming = False

    def _acquire(self) -> _Worker | None:
        """An idle worker, else a new one while fewer than ``processes`` exist, else the next one released;
        None once the pool is closed.
        """
        with self._cond:
            while True:
                if self._closed:
                    return None
                if self._idle:
                    return self._idle.pop()
                if len(self._workers) + self._starting < self.processes:
                    break
                self._cond.wait()
        worker = self._new_worker()
        return worker if worker is not None else self._acquire()

    def _new_worker(self) -> _Worker | None:
        """Start one more worker, or None when the pool is full or closed."""
        with self._cond:
            if self._closed or len(self._workers) + self._starting >= self.processes:
                return None
            self._starting += 1
        # Started outside the lock: the first start also starts the forkserver (about a second).
        try:
            worker = self._start()
        finally:
            with self._cond:
                self._starting -= 1
                self._cond.notify_all()
        with self._cond:
            if not self._closed:
                self._workers.add(worker)
                return worker
        worker.stop(0.0)
        return None

    def _release(self, worker: _Worker) -> None:
        with self._cond:
            if not self._closed and worker in self._workers:
                self._idle.append(worker)
                self._cond.notify()
                return
        worker.stop(_STOP_GRACE_S)

    def _discard(self, worker: _Worker) -> None:
        with self._cond:
            self._workers.discard(worker)
            self._cond.notify()
        worker.stop(0.0)

    @staticmethod
    def _start() -> _Worker:
        context = worker_context()
        parent, child = context.Pipe()
        process = context.Process(target=_serve, args=(child,), name="litellm-tool-worker", daemon=True)
        process.start()
        # Only the worker may hold its end: a dead worker must read as EOF on ours.
        child.close()
        return _Worker(process, parent)


def _serve(conn: Connection) -> None:
    """A worker's loop: answer tool calls until the empty request, or until the parent's end closes."""
    init_worker()
    boxes: OrderedDict[bytes, ToolBox] = OrderedDict()
    while True:
        try:
            request = conn.recv_bytes()
        except (EOFError, OSError):
            return  # the parent is gone
        if not request:
            return
        spec, name, raw_arguments = pickle.loads(request)
        box = boxes.pop(spec, None) or pickle.loads(spec).build()
        boxes[spec] = box
        if len(boxes) > _WORKER_BOXES:
            boxes.popitem(last=False)
        result = box.run(name, raw_arguments)  # never raises: failures are results
        try:
            reply = pickle.dumps(result, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # defensive: every field of a ToolResult is a str, a bool or None
            reply = pickle.dumps(ToolResult(f"{name} failed: {type(exc).__name__}: {exc}", "tool_error"))
        conn.send_bytes(reply)

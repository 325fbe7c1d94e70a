"""The run's CPU executor: threads for the strategies' file steps, optionally processes for validation.

Strategies hand their CPU-bound steps to the validator's executor (`strategies.base.run_cpu`): validation,
and the file work of adopting, selecting and assembling outputs. ``run.workers`` threads serve them all by
default. With ``run.validation_processes=N`` (N > 0) the calls to `ProfileValidator.validate` go to N worker
processes instead, so that the checks never hold the GIL of the process whose event loop talks to the model;
the other steps stay on the threads (they mutate objects the strategy keeps, and their selectors may not
pickle). A report computed in a worker is equal to the one the thread would compute: the validator reads only
the candidate folder, the raw data and the profile, all of them paths. Workers start on first use (forkserver,
readers and validator preloaded, SIGINT ignored: `medio.processes`) and stop with `RunExecutor.shutdown`,
which the run calls at its end and on Ctrl-C.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, TypeVar

from medio.processes import init_worker, preload_in_workers, worker_context
from strategies.base import ProfileValidator

# The forkserver imports the validator once for every worker (strategies.base has imported it already).
preload_in_workers("validator.validate")

__all__ = ["RunExecutor", "close_agent", "validation_executor"]

T = TypeVar("T")


def validation_executor(run: Mapping[str, Any]) -> Executor:
    """Build the run's CPU executor from the ``run`` config node.

    Args:
        run: ``cfg.run``: ``workers`` (threads; null = CPU count) and ``validation_processes`` (0 = none).

    Returns:
        A thread pool, or a `RunExecutor` when ``validation_processes`` is above 0.

    Raises:
        ValueError: A negative ``run.validation_processes``.
    """
    threads = int(run.get("workers") or os.cpu_count() or 2)
    processes = int(run.get("validation_processes") or 0)
    if processes < 0:
        raise ValueError(f"run.validation_processes must be 0 or more, got {processes}")
    if processes == 0:
        return ThreadPoolExecutor(max_workers=threads)
    return RunExecutor(threads, processes)


class RunExecutor(ThreadPoolExecutor):
    """A thread pool that sends `ProfileValidator.validate` calls to a process pool.

    Args:
        threads: Threads for every other call.
        processes: Worker processes for validation (started on the first validation).
    """

    def __init__(self, threads: int, processes: int) -> None:
        super().__init__(max_workers=threads)
        self.processes = processes
        self._pool: ProcessPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Schedule ``fn(*args, **kwargs)``: in a worker process for a validation, else in a thread.

        Args:
            fn: The callable (``run_in_executor`` passes it here).
            *args: Its positional arguments.
            **kwargs: Its keyword arguments.

        Returns:
            The future of the call.
        """
        if getattr(fn, "__func__", None) is ProfileValidator.validate:
            return self._validation_pool().submit(fn, *args, **kwargs)
        return super().submit(fn, *args, **kwargs)

    def _validation_pool(self) -> ProcessPoolExecutor:
        with self._pool_lock:
            # A worker that died (OOM killer ...) breaks the whole pool: the next validation gets a new one.
            if self._pool is None or getattr(self._pool, "_broken", False):
                self._pool = ProcessPoolExecutor(
                    max_workers=self.processes,
                    mp_context=worker_context(),
                    initializer=init_worker,
                )
            return self._pool

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop the threads and the validation processes.

        Args:
            wait: Wait for running calls to finish.
            cancel_futures: Cancel the calls not started yet.
        """
        super().shutdown(wait=wait, cancel_futures=cancel_futures)
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def close_agent(agent: object) -> None:
    """Stop the pools an agent keeps (the LiteLLM agent's tool threads and processes), if it has any.

    Args:
        agent: The run's agent; one without a ``close`` method is left alone.
    """
    close = getattr(agent, "close", None)
    if callable(close):
        close()

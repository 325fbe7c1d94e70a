"""Worker processes that are safe to start from a threaded program, with the format readers already loaded.

A threaded program must not ``fork`` (a lock another thread holds at that moment stays locked in the child),
and a ``spawn`` worker pays every import again (about a second of CPU: numpy, Pillow, pydicom, nibabel ...).
`worker_context` gives the ``forkserver`` start method instead: one clean, single-threaded server process
starts on first use, imports the readers once (`medio.preload`, through ``medio._forkserver_preload``) and
the modules pools name with `preload_in_workers`, and forks every worker from itself, so a worker starts in
milliseconds with complete modules (docs/medio.md, the import race). `init_worker` is the pool initializer:
workers ignore SIGINT, because the parent decides when they stop (it shuts its pools down on Ctrl-C) and a
worker's KeyboardInterrupt traceback would only be noise.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from multiprocessing.context import ForkServerContext

from medio.libraries import preload

__all__ = ["init_worker", "preload_in_workers", "worker_context"]

_LOCK = threading.Lock()
_PRELOADS: set[str] = {"medio._forkserver_preload"}


def preload_in_workers(*modules: str) -> None:
    """Name modules the forkserver imports once for all workers (called when a pool's module is imported).

    The server is one per program and starts with the first worker of any pool; a module named after that is
    imported by each worker instead (correct, only slower), so pools name their modules before any starts.

    Args:
        *modules: Importable module names (e.g. ``"validator.validate"``).
    """
    with _LOCK:
        _PRELOADS.update(modules)


def worker_context() -> ForkServerContext:
    """The ``forkserver`` start method, with the readers and the modules of `preload_in_workers` preloaded.

    Returns:
        The multiprocessing context to start workers (``Process`` or ``ProcessPoolExecutor(mp_context=)``).
    """
    context = multiprocessing.get_context("forkserver")
    assert isinstance(context, ForkServerContext)  # typed as the base class by typeshed
    with _LOCK:
        context.set_forkserver_preload(sorted(_PRELOADS))
    return context


def init_worker() -> None:
    """Prepare a worker process: ignore SIGINT and make sure the readers are loaded (free when preloaded)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    preload()

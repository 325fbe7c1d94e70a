"""Commands run inside the test process, for tests of what a command does and says (exit code, stdout, stderr,
files) rather than of a fresh interpreter (a plain module: test files import it by a unique name):
`run_cli_in_process` for ``python -m experiments`` with a given environment and folder, `run_as_main` for
``python -m MODULE`` of any command, as the interpreter's ``-m`` runs it.

A fresh interpreter pays for its imports again (litellm's alone is ~6 CPU s); here the worker's modules are
reused. What a run changes in the process is put back afterwards, so that the next test of the worker sees
what it would have seen: the environment, ``sys.argv``, the working directory, the warning filters, every
logger (Hydra's ``job_logging`` replaces the root handlers), Hydra's singletons, the signal handlers and
LiteLLM's callback lists. Python warnings are recorded by pytest here, not written to ``stderr``.
Properties of a fresh process (what gets imported or fetched, signals, a crash, stray warnings on stderr)
still need `cli_process.run_cli`.
"""

from __future__ import annotations

import importlib
import logging
import os
import runpy
import signal
import subprocess
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

# LiteLLM's module-level lists a run could append to (agents.adapters adds a usage logger to `callbacks`);
# a callback left behind would see every later test's calls.
_LITELLM_LISTS = (
    "callbacks",
    "input_callback",
    "success_callback",
    "failure_callback",
    "service_callback",
    "_async_input_callback",
    "_async_success_callback",
    "_async_failure_callback",
)
_LITELLM_VALUES = ("cache", "suppress_debug_info", "disable_aiohttp_transport", "turn_off_message_logging")


def _all_loggers() -> list[logging.Logger]:
    """The root logger and every named one (``loggerDict`` also holds placeholders)."""
    named = logging.Logger.manager.loggerDict.values()
    return [logging.getLogger(), *(lg for lg in named if isinstance(lg, logging.Logger))]


@contextmanager
def _loggers_kept() -> Iterator[None]:
    """Every logger's handlers, level, propagation and disabled flag as they were; handlers added are
    closed."""
    saved = {id(lg): (lg, list(lg.handlers), lg.level, lg.propagate, lg.disabled) for lg in _all_loggers()}
    before = {h for _, handlers, *_ in saved.values() for h in handlers}
    manager = logging.Logger.manager
    disable = manager.disable
    try:
        yield
    finally:
        now = _all_loggers()
        added = {h for lg in now for h in lg.handlers} - before
        for lg in now:
            if id(lg) in saved:
                _, handlers, level, propagate, disabled = saved[id(lg)]
                lg.handlers[:] = handlers
                lg.setLevel(level)
                lg.propagate, lg.disabled = propagate, disabled
            else:  # a logger created by the run: it keeps its name, not the run's handlers
                lg.handlers[:] = []
        manager.disable = disable
        for handler in added:
            handler.close()  # Hydra's FileHandler on the run's __main__.log


@contextmanager
def _hydra_kept() -> Iterator[None]:
    """Hydra's process-wide singletons (the run's config, its job runtime) as they were."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import JobRuntime

    was_initialized = GlobalHydra.instance().is_initialized()
    hydra_cfg, runtime = HydraConfig.instance().cfg, JobRuntime.instance().conf
    try:
        yield
    finally:
        HydraConfig.instance().cfg = hydra_cfg  # type: ignore[assignment]
        JobRuntime.instance().conf = runtime
        if not was_initialized:
            GlobalHydra.instance().clear()  # hydra.main clears it itself; a failure before that may not


@contextmanager
def _litellm_kept() -> Iterator[None]:
    """LiteLLM's module globals a run may touch, when the worker has imported it (restored in place)."""
    litellm = sys.modules.get("litellm")
    lists = {
        n: list(getattr(litellm, n)) for n in _LITELLM_LISTS if isinstance(getattr(litellm, n, None), list)
    }
    values = {n: getattr(litellm, n) for n in _LITELLM_VALUES if hasattr(litellm, n)}
    try:
        yield
    finally:
        if litellm is not None:
            for name, items in lists.items():
                getattr(litellm, name)[:] = items
            for name, value in values.items():
                setattr(litellm, name, value)


@contextmanager
def _process_kept(env: Mapping[str, str], cwd: Path, argv: list[str]) -> Iterator[None]:
    """The environment set to exactly ``env`` (as a subprocess would get it), ``cwd`` and ``argv``; the
    warning filters and the SIGINT/SIGTERM handlers; all of it put back afterwards (``cli`` sets
    HYDRA_FULL_ERROR and MEDSTRAT_DEBUG, litellm's import sets LITELLM_LOCAL_MODEL_COST_MAP)."""
    env = dict(env)  # a copy: the caller may pass os.environ itself, which is cleared below
    environ, old_cwd, old_argv = dict(os.environ), Path.cwd(), sys.argv
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = argv
    try:
        with warnings.catch_warnings():
            yield
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(environ)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def _exit_code(exc: SystemExit) -> int:
    """The exit status a ``SystemExit`` gives the interpreter (a message is printed on stderr, status 1)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def run_cli_in_process(
    args: Sequence[str], env: Mapping[str, str], cwd: Path, capture: pytest.CaptureFixture[str]
) -> subprocess.CompletedProcess[str]:
    """``python -m experiments ARGS`` with ``env`` in ``cwd``, run here; what `cli_process.run_cli` returns.

    Args:
        args: The command line after ``python -m experiments``.
        env: The whole environment of the run (the test's own is restored afterwards).
        cwd: The working directory of the run.
        capture: The test's ``capfd`` (or ``capsys``); what it held before the run is dropped.

    Returns:
        The exit code, stdout and stderr of the run.
    """
    from experiments.__main__ import PROG, cli

    argv = [PROG, *args]
    capture.readouterr()
    code: Any
    with _loggers_kept(), _hydra_kept(), _litellm_kept(), _process_kept(env, cwd, argv):
        try:
            code = cli()
        except SystemExit as exc:  # `main` exits with the run's status from inside Hydra's task function
            code = _exit_code(exc)
    out, err = capture.readouterr()
    return subprocess.CompletedProcess(argv, int(code), out, err)


MEDSTRAT = "experiments.cli"
"""The module of the ``medstrat`` console script: ``run_as_main(MEDSTRAT, ["reselect", ...])`` is
``medstrat reselect ...``. Its `main` is called rather than its console entry, which may leave by ``os._exit``
(a reselection skips the interpreter's tear-down) and would end the test process too; the code `main`
returns is what the process would exit with."""


def run_as_main(module: str, args: Sequence[str]) -> int:
    """Run ``python -m MODULE ARGS`` here, in this process's environment and folder; return its exit status.

    `runpy` executes the module as ``__main__``, so its ``raise SystemExit(main())`` (or ``cli()``) runs
    (`MEDSTRAT`: its `main`, see there). What the command changes in the process is put back as in
    `run_cli_in_process`. Keep at least one fresh-process test per command
    (`cli_process.run_cli`).

    Args:
        module: The module ``-m`` names (``experiments``, ``benchmark.score``), or `MEDSTRAT`.
        args: Its arguments.

    Returns:
        The exit status: the ``SystemExit`` code (0 when it ends normally; 1 for a message, as Python does).
    """
    from hydra.core.global_hydra import GlobalHydra

    with (
        _loggers_kept(),
        _hydra_kept(),
        _litellm_kept(),
        _process_kept(dict(os.environ), Path.cwd(), [module, *args]),
    ):
        if module == MEDSTRAT:
            return int(importlib.import_module(module).main(list(args)))
        # A test module that imported ``PKG.__main__`` (for its `main`) makes runpy warn; ``-m`` would not.
        warnings.filterwarnings("ignore", r"'.*' found in sys\.modules after import", RuntimeWarning)
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as stopped:
            return _exit_code(stopped)
        finally:
            # hydra.main clears it on every path; a command that left it set would break the next call.
            assert not GlobalHydra.instance().is_initialized()
    return 0

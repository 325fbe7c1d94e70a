"""``python -m MODULE ARGS`` inside the test process, as the interpreter's ``-m`` runs it (a plain module:
test files import it by a unique name).

A fresh interpreter costs ~1–2 CPU s of start-up and imports before a command does anything; a test that
checks a command's message, exit code or files (not a property of a new process: signals, import-time
behaviour, a crash) can run it here instead. `runpy` executes the module as ``__main__``, so its
``raise SystemExit(main())`` / ``cli()`` line and an old command name's finder (`experiments._commands`) are
on the path. Keep at least one fresh-process test per command (`cli_process.run_cli`).
"""

from __future__ import annotations

import importlib
import logging
import os
import runpy
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig

ENDS_WITH_OS_EXIT = ("experiments.reselect",)
"""Commands whose ``__main__`` block leaves by ``os._exit`` (a reselection skips the interpreter's tear-down):
run as ``__main__`` they would end the test process too, so their ``main(argv)`` is called instead, the code
it returns being what ``os._exit`` passes on."""


SET_BY_CLI = ("HYDRA_FULL_ERROR", "MEDSTRAT_DEBUG")
"""Environment variables ``experiments.__main__.cli`` sets for the rest of its process."""


@contextmanager
def isolated() -> Iterator[None]:
    """Undo what a command changes in the process: environment, warning filters, logging, Hydra's globals.

    ``python -m experiments`` sets ``HYDRA_FULL_ERROR`` and ``MEDSTRAT_DEBUG``, a warning filter, and (when a
    job runs) Hydra's logging set-up and its `HydraConfig` singleton; `GlobalHydra` must be clean after every
    call, or the next one would fail.
    """
    # `cli()` sets both; restored by hand: monkeypatch.delenv of an unset variable records nothing to undo.
    saved = {name: os.environ.pop(name, None) for name in SET_BY_CLI}
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        with warnings.catch_warnings():
            yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:  # e.g. Hydra's per-run log file
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
        HydraConfig.instance().cfg = None  # type: ignore[assignment]
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    assert not GlobalHydra.instance().is_initialized()


def run_as_main(module: str, args: Sequence[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """Run ``python -m MODULE ARGS`` here, inside `isolated`; return its exit status.

    Args:
        module: The module ``-m`` names (``experiments``, ``benchmark.score``, ``experiments.ablation``).
        args: Its arguments.
        monkeypatch: The test's, to restore ``sys.argv``.

    Returns:
        The exit status: the ``SystemExit`` code (0 when it ends normally; 1 for a message, as Python does).
    """
    monkeypatch.setattr(sys, "argv", [module, *args])
    with isolated():
        if module in ENDS_WITH_OS_EXIT:
            return int(importlib.import_module(module).main(list(args)))
        # A test module that imported ``PKG.__main__`` (for its `main`) makes runpy warn; ``-m`` would not.
        warnings.filterwarnings("ignore", r"'.*' found in sys\.modules after import", RuntimeWarning)
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as stopped:
            if stopped.code is None or isinstance(stopped.code, int):
                return stopped.code or 0
            return 1
    return 0

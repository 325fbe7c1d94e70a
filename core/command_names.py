"""Command names that live elsewhere: a short alias that forwards, or an old name that points to the new one.

A command is ``python -m <module>``, so its name is a module's path. Two kinds of such modules exist, each a
three-line file built with one of the functions below:

- a **short name** (``python -m experiments.reselect`` for ``experiments.selection.reselect``): run, it
  runs the target as ``__main__`` (its own ``if __name__ == "__main__"`` block, exit codes included);
  imported, its attributes are the target's (a stored run's ``_target_: experiments.reselect.ReplayAgent``
  keeps resolving to the one class). The target is imported only when used, never twice;
- a **moved name** (``python -m benchmark.synth``, now ``testbed.synth``): run, it fails with one line
  naming the new command (exit 2, ``docs/cli.md``); imported, it raises `ModuleNotFoundError` with the same
  words. It imports nothing from the new place, so a floor never reaches the package that replaced it.
"""

from __future__ import annotations

import importlib
import runpy
import sys
from collections.abc import Callable
from typing import NoReturn

__all__ = ["moved", "short_name"]


def short_name(name: str, target: str) -> Callable[[str], object]:
    """Make the module ``name`` a short name of the module ``target``.

    Args:
        name: The alias module's ``__name__`` (``"__main__"`` when it is run).
        target: The dotted path of the module it stands for.

    Returns:
        The alias module's ``__getattr__``: an attribute read imports ``target`` and returns its attribute.
    """
    if name == "__main__":
        # SystemExit from the target's main block ends the process here, as when the target is run itself.
        runpy.run_module(target, run_name="__main__", alter_sys=True)

    def forward(attribute: str) -> object:
        return getattr(importlib.import_module(target), attribute)

    return forward


def moved(name: str, old: str, new: str) -> NoReturn:
    """Fail with one line: the command (or module) ``old`` is now ``new``.

    Args:
        name: The stub module's ``__name__`` (``"__main__"`` when it is run as a command).
        old: The old dotted path.
        new: The dotted path that replaced it.

    Raises:
        SystemExit: Run as a command: exit code 2 after the line on stderr.
        ModuleNotFoundError: Imported: the same line as its message.
    """
    line = f"python -m {old} moved: run python -m {new} (same arguments; docs/cli.md)"
    if name == "__main__":
        print(f"{line}", file=sys.stderr)
        raise SystemExit(2)
    raise ModuleNotFoundError(f"{old} moved to {new}: import {new}", name=old)

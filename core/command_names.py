"""A command that moved: the module left at its old path fails with one line naming the new command.

Such a module is three lines, ``moved(__name__, old, new)``. Run as a command it fails with exit 2
(``docs/cli.md``); imported, it raises `ModuleNotFoundError` with the same words. It imports nothing from the
new place, so a floor never reaches the package that replaced it.
"""

from __future__ import annotations

import sys
from typing import NoReturn

__all__ = ["moved"]


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

"""Every Python a test starts is the test's own interpreter (issue 33 item 4; installed by tests/conftest.py).

Why: a test that runs ``python`` from PATH, or a symlink to ``sys.executable`` placed outside the virtual
environment, starts an interpreter that does not see the venv's ``pyvenv.cfg`` and runs as the base
interpreter (another ``sys.prefix``, other packages). It passes on a machine whose base interpreter happens to
have the dependencies and fails on a fresh one. The guard makes it fail everywhere, at the start of the
subprocess, with the command and both prefixes.

How: `install` wraps `subprocess.Popen` (which ``subprocess.run``, ``asyncio``'s subprocesses and pytest-xdist
use too). For every start it finds the Pythons the command will run: the program itself or an argument named
like ``python``/``python3.11`` (``timeout 5 python ...``), and for a shell (``bash -c``, ``shell=True``) every
``python`` word of the script. Each is resolved on the child's PATH and asked once for its ``sys.prefix``; one
that differs from the test's raises `EscapedInterpreter` (an `AssertionError`: the test fails). The question
goes to the interpreter itself, not to a rule about paths, because only it knows where it will look for its
packages.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["EscapedInterpreter", "install", "python_prefix", "pythons_started"]

_PYTHON_NAME = re.compile(r"python(?:3(?:\.\d+)?)?")
# A word of a shell script that runs a Python: ``python``, ``python3``, ``/usr/bin/python3.11`` ...
_PYTHON_WORD = re.compile(r"(?:^|(?<=[\s;&|(`]))((?:[^\s;&|()`]*/)?python(?:3(?:\.\d+)?)?)(?=[\s;&|)`]|$)")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_PROBE = "import sys; print(sys.prefix)"
_prefixes: dict[tuple[str, str | None], str] = {}


class EscapedInterpreter(AssertionError):
    """A test started a Python that is not its own interpreter (another ``sys.prefix``)."""


def pythons_started(args: Any, *, executable: Any = None, shell: bool = False) -> list[str]:
    """The Python programs (as written: a name or a path) a `subprocess.Popen` of these arguments runs.

    Args:
        args: Popen's ``args`` (a sequence, or one string).
        executable: Popen's ``executable``.
        shell: Popen's ``shell``.

    Returns:
        The programs, in order; empty when the command runs no Python that can be told from its words.
    """
    argv = (
        [os.fsdecode(args)] if isinstance(args, str | bytes | os.PathLike) else [os.fsdecode(a) for a in args]
    )
    if not argv:
        return []
    program = os.fsdecode(executable) if executable is not None else argv[0]
    if shell:
        return _PYTHON_WORD.findall(argv[0])
    if os.path.basename(program) in _SHELLS:
        scripts = [a for i, a in enumerate(argv[1:], 1) if i > 1 and argv[i - 1] == "-c"]
        return [word for script in scripts for word in _PYTHON_WORD.findall(script)]
    named = [a for a in [program, *argv[1:]] if _PYTHON_NAME.fullmatch(os.path.basename(a))]
    return list(dict.fromkeys(named))


def python_prefix(program: str, env: Mapping[str, str] | None = None) -> str:
    """The ``sys.prefix`` of the Python ``program`` (a path), asked once per program and ``PYTHONHOME``."""
    environ = dict(os.environ if env is None else env)
    key = (program, environ.get("PYTHONHOME"))
    if key not in _prefixes:
        done = subprocess.run(
            [program, "-c", _PROBE],  # not checked itself (`_check`)
            env=environ,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        _prefixes[key] = done.stdout.strip() or f"(none: exit {done.returncode})"
    return _prefixes[key]


def _check(args: Any, executable: Any, shell: bool, env: Mapping[str, str] | None) -> None:
    if isinstance(args, Sequence) and not isinstance(args, str | bytes) and list(args[1:]) == ["-c", _PROBE]:
        return  # `python_prefix` asking
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    for word in pythons_started(args, executable=executable, shell=shell):
        found = word if os.sep in word else shutil.which(word, path=path)
        if found is None or os.path.abspath(found) == sys.executable:
            continue  # not found: the command fails by itself; ours: nothing to ask
        prefix = python_prefix(found, env)
        if os.path.realpath(prefix) != os.path.realpath(sys.prefix):
            raise EscapedInterpreter(
                f"the subprocess {_shown(args)} runs {found} (sys.prefix {prefix}), not the tests' "
                f"interpreter {sys.executable} (sys.prefix {sys.prefix}): start sys.executable, or put "
                "Path(sys.executable).parent first on PATH where a command says `python`"
            )


def _shown(args: Any) -> str:
    text = args if isinstance(args, str) else " ".join(map(str, args)) if isinstance(args, Sequence) else args
    text = str(text)
    return repr(text if len(text) <= 120 else text[:117] + "...")


def install() -> None:
    """Check every `subprocess.Popen` of this process from now on (idempotent)."""
    if getattr(subprocess.Popen.__init__, "_interpreter_guard", False):
        return
    original = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        executable = kwargs.get("executable", rest[1] if len(rest) > 1 else None)
        shell = bool(kwargs.get("shell", rest[7] if len(rest) > 7 else False))
        _check(args, executable, shell, kwargs.get("env", rest[9] if len(rest) > 9 else None))
        original(self, args, *rest, **kwargs)

    guarded._interpreter_guard = True  # type: ignore[attr-defined]
    subprocess.Popen.__init__ = guarded  # type: ignore[method-assign]

"""``python -m experiments`` (and the other commands) in a fresh interpreter, as a user or a script runs it
(a plain module: test files import it by a unique name)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest


def run_cli(
    args: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m experiments ARGS`` with ``env`` in ``cwd``; its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "experiments", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_cli_in_process(
    args: Sequence[str], cwd: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> subprocess.CompletedProcess[str]:
    """``python -m experiments ARGS`` in this process (`experiments.__main__.cli`): for a test of the
    command's messages, exit code and files rather than of a fresh process; its output captured as text.

    What the command changes in this process is put back: the working folder, ``sys.argv``, its warning
    filters, the root logger's handlers and level (Hydra's job logging replaces them), and the two variables
    it sets (unset before each call: a second call must not inherit them). The variables of the environment
    the command should see are the caller's to set (``monkeypatch.setenv``).
    """
    import logging
    import warnings

    from experiments.__main__ import PROG, cli

    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", [PROG, *args])
    for name in ("HYDRA_FULL_ERROR", "MEDSTRAT_DEBUG"):  # `cli` sets them
        # setenv first: monkeypatch records (and puts back at teardown) only a variable it saw set.
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    capfd.readouterr()  # what came before is not the command's
    try:
        with warnings.catch_warnings():
            try:
                code = cli()
            except SystemExit as exc:  # `main` exits with the run's code, as the process does
                if exc.code is not None and not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
                code = 1 if exc.code is not None and not isinstance(exc.code, int) else (exc.code or 0)
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        for handler in handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(level)
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess([PROG, *args], code, out, err)


def nonblank_lines(text: str) -> list[str]:
    """The lines of ``text`` that are not blank (what a one-line failure is checked against)."""
    return [line for line in text.splitlines() if line.strip()]


# Exec'd by `start_as_background_job`: SIGINT set to "ignore" survives exec (POSIX exec: ignored signals stay
# ignored), which is what a shell does for `CMD &` in a script (POSIX Shell Command Language, 2.11).
_IGNORE_SIGINT_THEN_EXEC = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def start_as_background_job(args: Sequence[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """Start ``python ARGS`` the way ``python ARGS &`` in a script does: SIGINT ignored, output piped.

    A small exec wrapper sets the disposition (``preexec_fn`` is unsafe in a threaded test process); the
    pid stays the command's own, as ``$!`` is.
    """
    return subprocess.Popen(
        [sys.executable, "-c", _IGNORE_SIGINT_THEN_EXEC, sys.executable, *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# Exec'd by `start_as_terminal_command`: SIGINT back at its default before exec, so that the interpreter
# installs its KeyboardInterrupt handler (it does so only where SIGINT is not ignored) even when the test
# suite itself was started with SIGINT ignored (`pytest ... &` in a script, nohup), which a plain child
# inherits.
_DEFAULT_SIGINT_THEN_EXEC = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def start_as_terminal_command(
    args: Sequence[str],
    env: dict[str, str],
    cwd: Path,
    *,
    stdout: int | None = subprocess.PIPE,
    stderr: int | None = subprocess.PIPE,
) -> subprocess.Popen[str]:
    """Start ``python ARGS`` as a user types it in a terminal: SIGINT at its default (Ctrl-C raises
    KeyboardInterrupt) whatever this process's disposition, output piped (or as ``stdout``/``stderr`` say).

    The same exec wrapper as `start_as_background_job`; the pid stays the command's own.
    """
    return subprocess.Popen(
        [sys.executable, "-c", _DEFAULT_SIGINT_THEN_EXEC, sys.executable, *args],
        env=env,
        cwd=cwd,
        stdout=stdout,
        stderr=stderr,
        text=True,
    )


def sigint_ignored(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGINT (Linux's ``/proc/PID/status``; True where it cannot be read)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    mask = next(int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigIgn:"))
    return bool(mask & (1 << (signal.SIGINT - 1)))


def end_with_sigterm(proc: subprocess.Popen[str], within_s: float = 10.0) -> tuple[float, str]:
    """Send SIGTERM to ``proc`` and wait at most ``within_s`` for it to exit.

    Returns:
        The seconds it took and its stderr.

    Raises:
        AssertionError: It was still running after ``within_s`` (it is killed then), or a process it
            started still holds its output open.
    """
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=within_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"still running {within_s:g} s after SIGTERM") from None
    took = time.monotonic() - start
    try:
        _, err = proc.communicate(timeout=within_s)
    except subprocess.TimeoutExpired:  # a child it left behind still holds its output open
        raise AssertionError("a process it started outlived it (its output is still open)") from None
    return took, err

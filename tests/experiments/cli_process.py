"""``python -m experiments`` (and the other commands) in a fresh interpreter, as a user or a script runs it
(a plain module: test files import it by a unique name)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

_REPO = Path(__file__).resolve().parents[2]
_FAKES = _REPO / "tests" / "strategies"


def subprocess_env(cache: Path) -> dict[str, str]:
    """This process's environment for a ``python -m experiments`` subprocess: this checkout first on the path
    (a subprocess in a temp folder would otherwise import the installed snapshot), then the protocol test
    agents; the cache under ``cache``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(_REPO), str(_FAKES), env.get("PYTHONPATH", "")])
    env["MEDSTRAT_CACHE"] = str(cache)
    return env


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

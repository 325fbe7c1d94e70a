"""`core.cli_errors.interruptions_never_lost` (inside every command's `sigterm_stops`): a Ctrl-C or SIGTERM
that Python drops, because it was handled inside a finalizer or an at-fork callback, still stops the command
(one line, exit 130) instead of a traceback followed by a run that finishes with exit 0."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from core.cli_errors import Terminated, interruptions_never_lost, sigterm_stops


class _Dropped:
    """An object whose finalizer raises what a signal handler raised there (Python drops it)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __del__(self) -> None:
        raise self.exc


def _wait_to_be_interrupted(seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.005)


def test_an_interruption_dropped_in_a_finalizer_is_raised_again_in_the_block() -> None:
    before = signal.getsignal(signal.SIGINT)
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt), interruptions_never_lost():
        _Dropped(KeyboardInterrupt())  # freed at once: Python calls __del__ and drops what it raises
        _wait_to_be_interrupted()
    assert time.monotonic() - start < 2
    assert signal.getsignal(signal.SIGINT) == before


def test_a_dropped_sigterm_comes_back_as_terminated() -> None:
    with pytest.raises(Terminated), sigterm_stops("prog"):
        _Dropped(Terminated())
        _wait_to_be_interrupted()


def test_an_interruption_dropped_as_the_block_ends_is_raised_as_it_ends_and_nothing_arrives_later() -> None:
    with pytest.raises(KeyboardInterrupt), interruptions_never_lost():
        _Dropped(KeyboardInterrupt())
    _wait_to_be_interrupted(0.2)  # the timer was stopped: no stray Ctrl-C reaches the caller


def test_two_interruptions_dropped_in_a_row_are_raised_once_and_nothing_arrives_later() -> None:
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(Terminated), interruptions_never_lost():
        _Dropped(KeyboardInterrupt())
        _Dropped(Terminated())  # the later one is raised (a second Ctrl-C, or SIGTERM after Ctrl-C)
        _wait_to_be_interrupted()
    _wait_to_be_interrupted(0.2)
    assert signal.getsignal(signal.SIGINT) == before


def test_other_dropped_exceptions_are_reported_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(unraisable.exc_value))
    with interruptions_never_lost():
        _Dropped(ValueError("a broken finalizer"))
    assert [type(e) for e in seen] == [ValueError]
    assert sys.unraisablehook is not None and sys.unraisablehook.__name__ == "<lambda>"


# A command under `cli_main` whose parent-side at-fork callback receives the signal, as when Ctrl-C or
# `kill PID` arrives while logging releases its lock after `os.fork` (the scorer forks). The fork is the
# first thing the command does; then it "works" for 10 s and would print "finished".
_COMMAND = """
import os, signal, sys, time
from core.cli_errors import cli_main
SIGNAL = signal.{signal}
signal.signal(signal.SIGINT, signal.{sigint})
def _signal_lands_in_the_callback():
    os.kill(os.getpid(), SIGNAL)
    time.sleep(0)  # a call: the interpreter runs the Python handler here, inside the callback
os.register_at_fork(after_in_parent=_signal_lands_in_the_callback)
@cli_main("prog")
def main(argv):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.01)
    print("finished")
    return 0
raise SystemExit(main([]))
"""


@pytest.mark.parametrize(
    ("sent", "sigint"),
    [("SIGINT", "default_int_handler"), ("SIGTERM", "SIG_IGN"), ("SIGTERM", "default_int_handler")],
    ids=["ctrl-c", "sigterm-in-a-background-job", "sigterm"],
)
def test_a_signal_handled_inside_an_at_fork_callback_still_stops_the_command(sent: str, sigint: str) -> None:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_COMMAND).format(signal=sent, sigint=sigint)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    took = time.monotonic() - start
    # Before: "Exception ignored in: <function ...>" with a traceback, then "finished" and exit 0 (Ctrl-C),
    # or the 5 s SIGTERM grace period's line (SIGTERM).
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "prog: interrupted\n")
    assert took < 4

"""The one error policy of every command line of the project (``docs/cli.md``).

An expected failure (bad input, missing path, unknown option) ends with exactly one line on stderr that
names the thing and what was expected, and a documented exit code; never a traceback. ``--debug`` on the
command line or ``HYDRA_FULL_ERROR=1`` in the environment adds the traceback. Every CLI imports this module
(``core`` is the lowest floor: every other package uses it).

Example:
    >>> from core.cli_errors import CliError, cli_main
    >>> @cli_main("python -m tool")
    ... def main(argv=None):
    ...     raise CliError("--dataset-dir nope: no such folder")
    >>> main([])  # prints "python -m tool: error: --dataset-dir nope: no such folder" on stderr
    2
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import math
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TypeVar

from core.environment import check_environment
from core.errors import InputError

__all__ = [
    "EXIT_INCOMPLETE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NOTHING",
    "EXIT_OK",
    "EXIT_USAGE",
    "GRACE_ENV",
    "REDELIVERY_DELAY_S",
    "TERMINATION_GRACE_S",
    "CliError",
    "OneLineParser",
    "Terminated",
    "cli_main",
    "debug_requested",
    "existing_dir",
    "existing_path",
    "interruptions_never_lost",
    "one_line",
    "report_error",
    "report_interrupted",
    "run_coroutine",
    "sigterm_stops",
    "termination_grace_s",
]

EXIT_OK = 0
"""Success."""
EXIT_INTERNAL = 1
"""An unexpected internal error (a bug): one line; the traceback with ``--debug`` / ``HYDRA_FULL_ERROR=1``."""
EXIT_USAGE = 2
"""Bad input or config: unknown option, missing path, missing API key, resume config mismatch."""
EXIT_INCOMPLETE = 3
"""The run is incomplete (budget reached, a dataset failed); the tables are marked."""
EXIT_NOTHING = 4
"""The run produced nothing usable (no candidate wrote a sample, or a non-transient agent failure)."""
EXIT_INTERRUPTED = 130
"""Interrupted by SIGINT (Ctrl-C) or SIGTERM; finished work is kept."""

# Errors that mean "the user gave us something wrong", not "we have a bug": they get one line and exit 2.
_INPUT_ERRORS: tuple[type[BaseException], ...] = (
    InputError,
    FileNotFoundError,
    NotADirectoryError,
    IsADirectoryError,
    PermissionError,
)

F = TypeVar("F", bound=Callable[..., int])
_T = TypeVar("_T")


class CliError(Exception):
    """An expected failure of a command: its message is the one line the user sees.

    Args:
        message: What was wrong and what was expected (e.g. ``"--root x: no such folder"``).
        code: The exit code (default `EXIT_USAGE`).

    Attributes:
        code: The exit code.
    """

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def one_line(text: object) -> str:
    """Collapse a (possibly multi-line) message into one line.

    Args:
        text: Any message.

    Returns:
        The non-empty lines, stripped and joined with ``"; "``.

    Example:
        >>> one_line("Could not find 'x'\\n\\n  Available: a")
        "Could not find 'x'; Available: a"
    """
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


def debug_requested(argv: Sequence[str] | None = None) -> bool:
    """Whether the user asked for tracebacks: ``--debug`` in ``argv`` or ``HYDRA_FULL_ERROR=1``.

    Args:
        argv: The command-line arguments (default ``sys.argv[1:]``).

    Returns:
        True when tracebacks should be shown.
    """
    args = sys.argv[1:] if argv is None else argv
    return "--debug" in args or os.environ.get("HYDRA_FULL_ERROR", "") not in ("", "0")


def report_error(prog: str, exc: BaseException, *, debug: bool = False) -> int:
    """Print the one line for ``exc`` (and the traceback when ``debug``) and return its exit code.

    Args:
        prog: The program name that starts the line (``medstrat score``).
        exc: The exception.
        debug: Also print the traceback first.

    Returns:
        The exit code: ``exc.code`` for a `CliError`, `EXIT_USAGE` for bad input (missing path, unreadable
        file), `EXIT_INTERNAL` otherwise.
    """
    if debug:
        traceback.print_exception(exc)
    if isinstance(exc, CliError):
        code, text = exc.code, str(exc)
    elif isinstance(exc, _INPUT_ERRORS):
        code, text = EXIT_USAGE, _os_error_text(exc)
    else:
        code = EXIT_INTERNAL
        text = f"internal error: {type(exc).__name__}: {exc}"
        if not debug:
            text += " (rerun with --debug for the traceback)"
    print(f"{prog}: error: {one_line(text)}", file=sys.stderr, flush=True)
    return code


def _os_error_text(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {(exc.strerror or str(exc)).lower()}"
    return str(exc)


def cli_main(prog: str, *, expected: tuple[type[BaseException], ...] = ()) -> Callable[[F], F]:
    """Decorate a ``main(argv) -> int`` so that every failure follows the policy.

    `CliError`, ``expected`` and the input errors (a missing path, a `core.errors.InputError` such as
    `medio.MedioError`) give one line and their exit code; Ctrl-C and SIGTERM (`sigterm_stops`) give
    ``interrupted`` and 130; a closed stdout pipe (``| head``) ends quietly; anything else is an internal
    error (one line, exit 1).
    ``--debug`` / ``HYDRA_FULL_ERROR=1`` adds the traceback.

    Args:
        prog: The program name printed at the start of the line.
        expected: Further exception types that mean bad input (exit `EXIT_USAGE`, or their ``code``
            attribute when they have one).

    Returns:
        The decorator.
    """

    def decorate(main: F) -> F:
        @functools.wraps(main)
        def wrapper(argv: Sequence[str] | None = None, *args: Any, **kwargs: Any) -> int:
            debug = debug_requested(argv)
            try:
                check_environment()
                with sigterm_stops(prog):
                    return int(main(argv, *args, **kwargs))
            except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (`Terminated`)
                report_interrupted(f"{prog}: interrupted")
                return EXIT_INTERRUPTED
            except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as Unix tools do
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return EXIT_INTERNAL
            except expected as exc:  # the caller's own "bad input" types
                if debug:
                    traceback.print_exception(exc)
                print(f"{prog}: error: {one_line(exc)}", file=sys.stderr, flush=True)
                return int(getattr(exc, "code", EXIT_USAGE) or EXIT_USAGE)
            except Exception as exc:
                return report_error(prog, exc, debug=debug)

        return wrapper  # type: ignore[return-value]

    return decorate


class OneLineParser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` whose usage errors are one line (exit 2) and that accepts ``--debug``.

    Args:
        *args: As for `argparse.ArgumentParser`.
        **kwargs: As for `argparse.ArgumentParser`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument(
            "--debug", action="store_true", help="show the traceback of a failure (also HYDRA_FULL_ERROR=1)"
        )

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE (see --help)`` on one line and exit 2.

        Args:
            message: argparse's description of the problem.
        """
        print(f"{self.prog}: error: {one_line(message)} (see --help)", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_USAGE)


def existing_path(option: str, value: str | os.PathLike[str]) -> Path:
    """``value`` as a `Path` that must exist; never creates anything.

    Args:
        option: How the user named it (``--dataset-dir``, ``CANDIDATE_DIR``).
        value: The path given.

    Returns:
        The path.

    Raises:
        CliError: The path does not exist.
    """
    path = Path(value)
    if not path.exists():
        raise CliError(f"{option} {value}: no such file or folder")
    return path


def existing_dir(option: str, value: str | os.PathLike[str]) -> Path:
    """``value`` as a `Path` that must be an existing folder; never creates it.

    Args:
        option: How the user named it.
        value: The path given.

    Returns:
        The folder.

    Raises:
        CliError: It does not exist or is not a folder.
    """
    path = existing_path(option, value)
    if not path.is_dir():
        raise CliError(f"{option} {value}: expected a folder, found a file")
    return path


class Terminated(KeyboardInterrupt):
    """SIGTERM ended the command (``kill PID``, ``timeout``, a supervisor, SLURM's ``scancel``).

    A `KeyboardInterrupt`, so every path that handles Ctrl-C (finished work kept, one line, exit 130) handles
    it too.
    """


_INTERRUPTION_SAID = threading.Event()
"""Set once the command has printed its one line about the interruption (`report_interrupted`)."""


def report_interrupted(line: str) -> None:
    """Print the command's one line about an interruption (Ctrl-C, SIGTERM) to stderr.

    After it, what is left of the exit (joining worker threads, an executor's running calls) is silent: if
    it outlasts the SIGTERM grace period, the process ends with `EXIT_INTERRUPTED` without a second line,
    since the user has been told already and the line may hold the command that resumes the run.

    Args:
        line: The whole line, e.g. ``"interrupted — resume with: python -m experiments ..."``.
    """
    _INTERRUPTION_SAID.set()
    print(line, file=sys.stderr, flush=True)


TERMINATION_GRACE_S = 5.0
"""How long a command may clean up after SIGTERM before it exits anyway (`sigterm_stops`), unless
``MEDSTRAT_TERMINATION_GRACE_S`` says otherwise (`termination_grace_s`)."""

GRACE_ENV = "MEDSTRAT_TERMINATION_GRACE_S"


def termination_grace_s() -> float:
    """The SIGTERM clean-up allowance: ``MEDSTRAT_TERMINATION_GRACE_S`` seconds, else `TERMINATION_GRACE_S`.

    Why a setting: a supervisor gives a stopped job a fixed time before its SIGKILL (SLURM's ``KillWait``,
    30 s by default; Kubernetes' ``terminationGracePeriodSeconds``), and a command that exits on its own
    before that prints its one line, which a SIGKILL never lets it do.

    Returns:
        Seconds, > 0.

    Raises:
        CliError: The variable is set to something that is not a positive finite number (exit 2; the
            commands enter `sigterm_stops` before any work, so nothing has started).
    """
    raw = os.environ.get(GRACE_ENV, "").strip()
    if not raw:
        return TERMINATION_GRACE_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise CliError(f"{GRACE_ENV} must be a number of seconds > 0, got {raw!r}")
    return value


def run_coroutine(main: Coroutine[Any, Any, _T]) -> _T:
    """`asyncio.run`, except that an interruption raised inside one of its tasks is not reported twice.

    Why: a signal handler raises `KeyboardInterrupt` / `Terminated` wherever the main thread is. When that is
    inside a task's step (not the loop's wait), asyncio stores the interruption on the task *and* lets it
    propagate; the task that awaited it is then destroyed with that exception unread, and asyncio logs
    "Task exception was never retrieved" with a traceback: a second message after the command's one
    interruption line. With gathers inside gathers (the run's datasets, each gathering its candidates) the
    loop is left before the outer task has seen its cancellation through, and asyncio then logs "Task was
    destroyed but it is pending!" and "_GatheringFuture exception was never retrieved" (a `CancelledError`).
    This loop's exception handler drops the reports of interruptions, and once the run was interrupted also
    the reports of what the interruption left behind (pending tasks, cancellations); every other report
    goes to asyncio's default handler, as under `asyncio.run`.

    Args:
        main: The coroutine to run to completion on a new event loop.

    Returns:
        What ``main`` returns.
    """
    interrupted = False

    def _report(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, KeyboardInterrupt):
            return  # the command prints the one line for it (`report_interrupted`)
        if interrupted and (exc is None or isinstance(exc, asyncio.CancelledError)):
            return  # what stopping mid-run leaves behind, not an error of its own
        loop.default_exception_handler(context)

    with asyncio.Runner() as runner:
        runner.get_loop().set_exception_handler(_report)
        try:
            return runner.run(main)
        except KeyboardInterrupt:
            interrupted = True
            raise


@contextlib.contextmanager
def sigterm_stops(prog: str, grace_s: float | None = None) -> Iterator[None]:
    """While inside, SIGTERM stops the command as Ctrl-C does, whatever SIGINT's disposition is.

    Why not re-send SIGINT: a job started with ``&`` from a script (or under ``nohup``, or by a supervisor)
    inherits SIGINT set to "ignore" (POSIX, "Shell Command Language", 2.11 *Signals and Error Handling*), so
    a SIGINT raised for it does nothing and the process keeps running. Instead the handler calls the Python
    SIGINT handler when there is one (asyncio's, which cancels the main task; or the default, which raises
    `KeyboardInterrupt`) and raises `Terminated` itself otherwise. Then:

    - a second SIGTERM kills the process at once (the default action is back);
    - if the clean-up takes more than ``grace_s`` (a thread stuck in a model call that interpreter exit
      would join, a pool waiting for its running tasks), one line on stderr and exit 130 without waiting:
      finished work is on disk already (every done-marker is written atomically);
    - a process forked inside (a pool worker) that receives SIGTERM dies of it, as by default.

    Outside the main thread (signal handlers can only be set there) it does nothing.

    Args:
        prog: The program name of the line printed when the grace period runs out.
        grace_s: Seconds of clean-up allowed after SIGTERM; None: `termination_grace_s` (read on entry, so a
            bad value fails before the command does any work).

    Yields:
        Nothing; the previous SIGTERM handler is restored on exit.

    Example:
        >>> with sigterm_stops("python -m tool"):
        ...     pass  # `kill PID` here raises Terminated (a KeyboardInterrupt)
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    grace = termination_grace_s() if grace_s is None else grace_s
    owner = os.getpid()

    def _handler(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if os.getpid() != owner:  # a forked child inherited this handler: end as SIGTERM ends it by default
            os.kill(os.getpid(), signal.SIGTERM)
            return
        _exit_after(prog, grace)
        on_sigint = signal.getsignal(signal.SIGINT)
        if callable(on_sigint):
            on_sigint(signal.SIGINT, frame)  # asyncio cancels its main task; the default raises
            return
        raise Terminated

    previous = signal.signal(signal.SIGTERM, _handler)
    try:
        with interruptions_never_lost():
            yield
    finally:
        signal.signal(signal.SIGTERM, previous)


REDELIVERY_DELAY_S = 0.01
"""How long after Python dropped an interruption it is raised again (`interruptions_never_lost`): long
enough for the interpreter to leave the callback that dropped it (at-fork callbacks take microseconds)."""


class _Redelivery:
    """An interruption Python dropped, armed to be raised again in the main thread.

    Why a signal and not a plain raise: the interruption must surface in the command's own code, and only a
    signal handler can raise there. The SIGINT handler is swapped for one that puts the previous handler back
    and raises the dropped exception (a `Terminated` stays a `Terminated`); a sender thread then signals the
    main thread, which also wakes it from a blocking wait. If that lands in a callback once more, the hook
    arms it again.
    """

    def __init__(self) -> None:
        self.pending: KeyboardInterrupt | None = None
        self._installed = False
        self._restore: Any = signal.SIG_DFL
        self._stop = threading.Event()
        self._sender: threading.Thread | None = None

    def arm(self, exc: KeyboardInterrupt) -> None:
        """Raise ``exc`` in the main thread in `REDELIVERY_DELAY_S` (call from the main thread)."""
        self.pending = None  # an earlier sender's signal handled while arming raises nothing inside the hook
        self._stop_sender()
        if not self._installed:
            current = signal.getsignal(signal.SIGINT)
            self._restore = signal.SIG_DFL if current is None else current
            signal.signal(signal.SIGINT, self._raise_pending)
            self._installed = True
        self.pending = exc
        main, stop = threading.main_thread().ident, threading.Event()
        assert main is not None

        def _send() -> None:
            if not stop.wait(REDELIVERY_DELAY_S):
                signal.pthread_kill(main, signal.SIGINT)

        self._stop, self._sender = stop, threading.Thread(target=_send, name="redeliver-interruption")
        self._sender.daemon = True
        self._sender.start()

    def _stop_sender(self) -> None:
        """After this no redelivery signal is on its way, and one already sent has been handled.

        Call with `pending` cleared: that handling then does nothing.
        """
        if self._sender is None:
            return
        self._stop.set()
        self._sender.join()
        self._sender = None
        # A system call: a signal the sender already sent to this thread is taken on the way back from it,
        # and its handler runs at the next call, before the caller puts SIGINT's handler back.
        signal.pthread_sigmask(signal.SIG_BLOCK, [])

    def _raise_pending(self, signum: int, frame: FrameType | None) -> None:
        exc, self.pending = self.pending, None
        if exc is None:  # a redelivery signal that arrived after its interruption was dealt with
            return
        self._put_back()
        raise exc

    def _put_back(self) -> None:
        self._stop_sender()
        if self._installed:
            signal.signal(signal.SIGINT, self._restore)
            self._installed = False

    def disarm(self) -> KeyboardInterrupt | None:
        """Stop the sender and put SIGINT's handler back; return the interruption still pending, if any."""
        exc, self.pending = self.pending, None
        self._put_back()
        return exc


@contextlib.contextmanager
def interruptions_never_lost() -> Iterator[None]:
    """While inside, a Ctrl-C or SIGTERM that Python drops is raised again in the command's own code.

    Why: Python raises `KeyboardInterrupt` (or `Terminated`) wherever the main thread is when the signal is
    handled. Inside a finalizer (``__del__``, a weakref callback) or an at-fork callback (logging's lock
    release after every ``os.fork``, as the scorer forks) it cannot propagate: Python prints "Exception
    ignored in ..." with a traceback and goes on, so a Ctrl-C was a traceback and then a run that finished
    with exit 0. Here the dropped interruption is raised again a moment later (`REDELIVERY_DELAY_S`) in the
    main thread, nothing is printed for it, and the command stops as for any Ctrl-C (one line, exit 130).
    If the block ends first, the interruption is raised as it ends. Other dropped exceptions are reported
    as before (the previous ``sys.unraisablehook``).

    Outside the main thread it does nothing (signal handlers run in the main thread only).

    Yields:
        Nothing; the previous ``sys.unraisablehook`` and SIGINT handler are restored on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = sys.unraisablehook
    redelivery = _Redelivery()

    def _hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
            redelivery.arm(exc)
            return
        previous(unraisable)

    sys.unraisablehook = _hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
        dropped = redelivery.disarm()
    if dropped is not None:
        raise dropped


def _exit_after(prog: str, grace_s: float) -> None:
    """End the process in ``grace_s`` seconds unless it has ended by itself (a daemon thread)."""

    def _watch() -> None:
        time.sleep(grace_s)
        if _INTERRUPTION_SAID.is_set():  # the one line is out; only the exit itself was slow
            os._exit(EXIT_INTERRUPTED)
        with contextlib.suppress(OSError, ValueError):
            print(
                f"{prog}: stopped after SIGTERM without finishing the clean-up in {grace_s:g} s; "
                "finished work is kept",
                file=sys.stderr,
                flush=True,
            )
        os._exit(EXIT_INTERRUPTED)

    threading.Thread(target=_watch, name="sigterm-grace", daemon=True).start()

"""``medstrat <command> [args]``: the one entry to the project's tools beside ``python -m experiments``.

Each subcommand hands its arguments, untouched, to the ``main(argv) -> int`` of the module that owns it, and
its exit code becomes the process's (``docs/cli.md``). The table below names each module as a string: a
command's imports (litellm, matplotlib, Hydra) are paid only when that command runs, so ``medstrat --help``
answers at once. This module sits at the top of ``experiments`` (the one package that may import every
floor) because its commands come from all of them, the test material's included.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["COMMANDS", "PROG", "Command", "main", "run"]

PROG = "medstrat"


@dataclass(frozen=True)
class Command:
    """One subcommand of ``medstrat``.

    Attributes:
        name: What the user types after ``medstrat``.
        module: The module whose ``main(argv) -> int`` runs it.
        summary: The one line ``medstrat --help`` shows.
        lead: Arguments put before the user's (a command that is one verb of a module's own subcommands).
        process_entry: A function of ``module`` the console script calls instead of ``main``, for a command
            that ends its own process when done (it never returns; the code is still ``main``'s).
    """

    name: str
    module: str
    summary: str
    lead: tuple[str, ...] = ()
    process_entry: str | None = None

    def call(self, args: Sequence[str], function: str = "main") -> int:
        """Import the command's module and run ``function`` on ``lead`` + ``args``; return its exit code."""
        entry: Callable[[list[str]], int] = getattr(importlib.import_module(self.module), function)
        return entry([*self.lead, *args])


COMMANDS: tuple[Command, ...] = (
    Command("inspect", "medio.__main__", "a JSON summary of a raw file or DICOM folder", ("inspect",)),
    Command("render", "medio.__main__", "render a raw image, slice or frame to an 8-bit PNG", ("render",)),
    Command("validate", "validator.__main__", "validate a candidate folder; export the output schema"),
    Command("score", "benchmark.score.__main__", "the eleven MDS-Bench metrics of a dataset or a root"),
    Command("report", "experiments.report.__main__", "write report.html for a run or sweep folder"),
    Command("merge", "experiments.run.merge", "combine the shards of a benchmark.shard=k/n run"),
    Command("ablation", "experiments.analysis.ablation", "the S0-S4 ablation table and figure of a sweep"),
    Command("passk", "experiments.analysis.passk", "pass@k, pass^k and selected@k curves of S3 runs"),
    Command(
        "budget-matched",
        "experiments.analysis.budget_matched",
        "S3 held to the budget another strategy spent",
    ),
    Command(
        "validator-eval",
        "experiments.analysis.validator_eval.__main__",
        "the validator against the ground truth, check by check; --fit weights",
    ),
    Command(
        "reselect",
        "experiments.selection.reselect",
        "re-choose among a finished S3/S4 run's stored candidates (no agent call)",
        process_entry="command",
    ),
    Command(
        "leaderboard",
        "experiments.selection.leaderboard",
        "every selector x validator profile on finished S3 runs",
    ),
    Command("synth", "testbed.synth.__main__", "generate a synthetic suite (bundled, realfiles, ...)"),
    Command("replica", "testbed.replica.__main__", "build the suite of real-dataset replicas"),
    Command("perturb", "testbed.perturb.__main__", "a correct output folder with sampled mistakes"),
    Command("fakeserver", "testbed.fakeserver.__main__", "serve a scripted fake model provider (offline)"),
)
"""Every subcommand, in the order ``medstrat --help`` lists them."""

_EPILOG = (
    "Runs and sweeps are the Hydra app: python -m experiments [overrides] (docs/experiments.md).\n"
    "Each command's own options: medstrat COMMAND --help. Exit codes: docs/cli.md."
)


def _parser() -> argparse.ArgumentParser:
    """The top-level parser: it lists the subcommands and rejects an unknown one (exit 2)."""
    width = max(len(c.name) for c in COMMANDS) + 2
    listing = "".join(f"  {c.name:<{width}}{c.summary}\n" for c in COMMANDS)
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} COMMAND [ARGS ...]",
        description="The tools of medstrat: inspect raw data, validate, score, study and report runs.",
        epilog=f"commands:\n{listing}\n{_EPILOG}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", help="one of the commands below")
    for command in COMMANDS:
        # add_help=False: ``medstrat X --help`` is never answered here but by X itself (see `main`).
        sub.add_parser(command.name, add_help=False)
    return parser


def _exit_status(stopped: SystemExit) -> int:
    """The status the interpreter would exit with for ``stopped`` (a message: printed, status 1)."""
    if stopped.code is None or isinstance(stopped.code, int):
        return stopped.code or 0
    print(stopped.code, file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``medstrat ARGV``: the named command with the rest of the arguments.

    Args:
        argv: The arguments after ``medstrat`` (default: ``sys.argv[1:]``).

    Returns:
        The command's exit code; 0 for ``--help``; 2 for no command or an unknown one.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    by_name = {c.name: c for c in COMMANDS}
    if args and args[0] in by_name:
        # The rest goes to the command as typed: argparse here would reorder or swallow its options.
        try:
            return by_name[args[0]].call(args[1:])
        except SystemExit as stopped:  # the command's argparse: its --help (0) and usage errors (2)
            return _exit_status(stopped)
    parser = _parser()
    try:
        parser.parse_args(args)
    except SystemExit as stopped:  # --help (0) or an unknown command (2), printed by argparse
        return _exit_status(stopped)
    parser.print_help(sys.stderr)
    return 2


def run() -> None:
    """The ``medstrat`` console script: `main` with the process's arguments; its code is the exit status."""
    args = sys.argv[1:]
    command = next((c for c in COMMANDS if args and c.name == args[0]), None)
    if command is not None and command.process_entry is not None:
        command.call(args[1:], command.process_entry)  # ends the process itself
    raise SystemExit(main(args))


if __name__ == "__main__":
    run()

"""Every analysis, selection and run command answers ``--help`` with its usage and exit 0.

``python -m experiments.passk --help`` once failed with exit 1 (an import of a module that no longer existed,
made only inside ``main``): nothing but running each command's ``main`` finds that.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import pytest

COMMANDS = {
    "experiments.report": "experiments.report.__main__",
    "experiments.merge": "experiments.run.merge",
    "experiments.ablation": "experiments.analysis.ablation",
    "experiments.validator_eval": "experiments.analysis.validator_eval.__main__",
    "experiments.passk": "experiments.analysis.passk",
    "experiments.budget_matched": "experiments.analysis.budget_matched",
    "experiments.leaderboard": "experiments.selection.leaderboard",
    "experiments.reselect": "experiments.selection.reselect",
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_prints_the_usage_and_exits_zero(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    main: Callable[[list[str]], int] = importlib.import_module(COMMANDS[command]).main
    try:
        code = main(["--help"])
    except SystemExit as stopped:  # argparse's help exits; a hand-written usage returns
        code = stopped.code
    assert code == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert f"python -m {command} " in first + " ", first

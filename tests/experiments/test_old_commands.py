"""The commands of the flat layout (``python -m experiments.reselect`` ...) reach the moved modules."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

import experiments  # noqa: F401  (installs the finder of the old names)
from experiments._commands import MOVED, new_name


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_command_runs_the_code_of_the_module_at_its_new_path(old: str) -> None:
    target = MOVED[old] + (".__main__" if old.endswith("validator_eval") else "")
    spec = importlib.util.find_spec(old + (".__main__" if old.endswith("validator_eval") else ""))
    real = importlib.util.find_spec(target)
    assert spec is not None and real is not None and spec.loader is not None and real.loader is not None
    assert spec.origin == real.origin  # what python -m shows as the file, and runs
    assert spec.loader.get_code(spec.name) == real.loader.get_code(real.name)  # type: ignore[attr-defined]


def test_an_object_reached_by_its_old_path_is_the_same_object() -> None:
    old = importlib.import_module("experiments.reselect")
    new = importlib.import_module("experiments.selection.reselect")
    assert old.ReplayAgent is new.ReplayAgent  # a stored run's agent._target_ keeps resolving to one class


def test_only_the_moved_commands_are_renamed() -> None:
    assert new_name("experiments.validator_eval.fit") == "experiments.analysis.validator_eval.fit"
    assert new_name("experiments.reselection") is None
    assert new_name("experiments.report") is None

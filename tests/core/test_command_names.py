"""Short command names forward to their module; moved names fail with one line naming the new command."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHORT = {
    "experiments.ablation": "experiments.analysis.ablation",
    "experiments.budget_matched": "experiments.analysis.budget_matched",
    "experiments.leaderboard": "experiments.selection.leaderboard",
    "experiments.merge": "experiments.run.merge",
    "experiments.passk": "experiments.analysis.passk",
    "experiments.reselect": "experiments.selection.reselect",
    "experiments.validator_eval": "experiments.analysis.validator_eval",
}
MOVED = {
    "benchmark.synth": "testbed.synth",
    "benchmark.perturb": "testbed.perturb",
    "benchmark.replica": "testbed.replica",
}


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", module, *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("short", sorted(SHORT))
def test_a_short_name_answers_with_the_modules_own_objects(short: str) -> None:
    # Every public name read through the short name is the module's object itself, not a copy.
    alias = importlib.import_module(short)
    target = importlib.import_module(SHORT[short])
    names = [n for n in vars(target) if not n.startswith("_")]
    assert names and all(getattr(alias, n) is getattr(target, n) for n in names)


def test_a_stored_target_by_the_short_path_is_the_same_class() -> None:
    alias = importlib.import_module("experiments.reselect")
    assert alias.ReplayAgent is importlib.import_module("experiments.selection.reselect").ReplayAgent
    with pytest.raises(AttributeError):
        _ = alias.NoSuchThing


@pytest.mark.heavy
def test_a_short_name_runs_the_command_with_its_exit_codes() -> None:
    ok = _run("experiments.passk", "--help")
    assert ok.returncode == 0 and "python -m experiments.passk" in ok.stdout
    bad = _run("experiments.reselect", str(ROOT / "no-such-run"))
    assert bad.returncode == 2
    assert [line for line in bad.stderr.splitlines() if line.strip()] == [
        f"python -m experiments.reselect: error: RUN {ROOT / 'no-such-run'}: no such file or folder"
    ]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_moved_command_fails_with_one_line_naming_the_new_one(old: str) -> None:
    proc = _run(old, "anything")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"python -m {old} moved: run python -m {MOVED[old]} (same arguments; docs/cli.md)"
    ]
    assert proc.stdout == ""


@pytest.mark.parametrize("old", sorted(MOVED))
def test_importing_a_moved_module_names_the_new_one(old: str) -> None:
    sys.modules.pop(old, None)
    with pytest.raises(ModuleNotFoundError, match=f"{old} moved to {MOVED[old]}"):
        importlib.import_module(old)

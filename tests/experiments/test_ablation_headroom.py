"""The offline ablation has headroom, and selection is what earns it: on stored S3 candidates of the rules
agent (T = 0.7, n = 5, fixed seeds) the leaderboard must rank a working selector above a broken one.

No dataset is picked for its outcome: the fast test takes every fourth dataset of the suite in name order,
at four samples each, the slow one the whole suite at ten. The properties hold for any working selector and
fail for a broken one:

- per dataset, ``validator_max`` is never worse than ``first`` (candidate 0, which is S0's output at the same
  seed): the validator's favourite is at least as good as an arbitrary candidate;
- the stored candidates differ in E2E (the oracle bound exceeds the worst choice: there is headroom), and a
  selector that keeps the validator's least favourite candidate is strictly worse than ``validator_max``,
  with a negative dataset-level difference and a larger gap to the oracle.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from omegaconf import DictConfig

from agents.base import Candidate, Task
from experiments import compose_config
from experiments.run.experiment import run_experiment
from experiments.selection.leaderboard import leaderboard
from strategies.selectors import selectors
from testbed.synth.suite import dataset_names, generate_suite
from validator.report import Report


def worst_by_validator(
    index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task
) -> int:
    """A broken selector: the lowest validator total (an inverted validator_max)."""

    def total(k: int) -> float:
        sample = reports[k].samples.get(index)
        return sample.total if sample is not None else 0.0

    return min(range(len(candidates)), key=lambda k: (total(k), k))


def _cfg(root: Path, datasets: list[str]) -> DictConfig:
    return compose_config(
        [
            "benchmark=dir",
            f"benchmark.root={root}",
            f"benchmark.datasets=[{','.join(datasets)}]",
            "agent=rules",
            "agent.temperature=0.7",
            "run.seed=0",
            "run.progress=false",
            "run.report=false",
            "strategy=s3",
            "strategy.n=5",
        ]
    )


def _check(tmp_path: Path, datasets: list[str], samples: int | None = None) -> None:
    root = tmp_path / "suite"
    generate_suite(root, size="small", seed=0, only=datasets, samples=samples)
    run_experiment(_cfg(root, datasets), tmp_path / "s3")
    selectors.add("test_worst_by_validator", worst_by_validator)
    frame, stats = leaderboard(
        [tmp_path / "s3"], ["validator_max", "first", "test_worst_by_validator"], ["evidence"]
    )
    rows = frame.set_index("selector")
    per = stats["per_dataset_E2E"]
    best, first = per["evidence/validator_max"], per["evidence/first"]
    assert set(best) == set(first) and len(best) == len(datasets)
    slips = {d: (best[d], first[d]) for d in best if best[d] < first[d]}
    assert not slips, f"validator_max kept worse candidates than candidate 0 on {slips}"
    worst = rows.loc["test_worst_by_validator"]
    assert rows.loc["validator_max", "oracle_E2E"] > worst["E2E"], "no headroom: every candidate scores alike"
    assert worst["E2E"] < rows.loc["validator_max", "E2E"]
    assert worst["dE2E_vs_validator_max"] < 0
    assert worst["gap_to_oracle"] > rows.loc["validator_max", "gap_to_oracle"]


SAMPLES = 4
"""Samples per dataset in the fast test (10 in the slow one): the suite's traps alternate every other sample,
so four hold both kinds; more add runtime, not cases."""


@pytest.mark.heavy
def test_selection_headroom_on_every_fourth_dataset(tmp_path: Path) -> None:
    _check(tmp_path, dataset_names()[::4], samples=SAMPLES)


@pytest.mark.slow
def test_selection_headroom_on_the_whole_suite(tmp_path: Path) -> None:
    names = dataset_names()
    _check(tmp_path, names)

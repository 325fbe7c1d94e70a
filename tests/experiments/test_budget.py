"""The S3 budget curve from stored candidates equals fresh runs with fewer candidates; the budget-matched
comparison picks the largest n' within another strategy's spend."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rules_runs import CHEAP_DATASETS, N, rules_cfg

from experiments.analysis.ablation import load_runs
from experiments.analysis.budget_matched import budget_curve, budget_matched
from experiments.run.experiment import run_experiment


def test_best_of_fewer_from_stored_candidates_equals_a_fresh_smaller_run(
    rules_s3_run_small, tmp_path: Path
) -> None:
    root, src = rules_s3_run_small
    curve = budget_curve(src).set_index("n")
    assert list(curve.index) == list(range(1, N + 1))
    assert list(curve["candidates"]) == [n * len(CHEAP_DATASETS) for n in range(1, N + 1)]
    assert curve.loc[N, "E2E"] == pytest.approx(
        json.loads((src / "metrics.json").read_text())["macro"]["E2E"]
    )
    run_experiment(rules_cfg(root, "strategy=s3", "strategy.n=2", datasets=CHEAP_DATASETS), tmp_path / "n2")
    fresh = json.loads((tmp_path / "n2" / "metrics.json").read_text())["macro"]["E2E"]
    assert curve.loc[2, "E2E"] == pytest.approx(fresh)
    run_experiment(rules_cfg(root, "strategy=s0", datasets=CHEAP_DATASETS), tmp_path / "s0")
    s0 = json.loads((tmp_path / "s0" / "metrics.json").read_text())["macro"]["E2E"]
    assert curve.loc[1, "E2E"] == pytest.approx(s0)  # best-of-1 is S0 at the same seed


def test_budget_matched_reads_the_largest_affordable_n(rules_s3_run_small, tmp_path: Path) -> None:
    root, src = rules_s3_run_small
    sweep = tmp_path / "sweep"
    shutil.copytree(src, sweep / "1_s3", symlinks=True)
    run_experiment(rules_cfg(root, "strategy=s1", datasets=CHEAP_DATASETS), sweep / "0_s1")
    table = budget_matched(load_runs(sweep))
    row = table.set_index("strategy").loc["s1"]
    spent = json.loads((sweep / "0_s1" / "usage.json").read_text())["candidates"]
    assert row["axis"] == "candidates" and row["budget"] == spent
    assert row["s3_n"] == min(N, spent // len(CHEAP_DATASETS)) and row["s3_cost"] <= spent

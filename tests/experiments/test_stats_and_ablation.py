"""Statistics with datasets as the unit, seeds aggregated as mean ± spread, cost columns in the ablation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmark.score.constants import METRIC_NAMES
from experiments.analysis.ablation import load_runs, summary_frame, write_ablation
from experiments.publish.stats import cluster_diffs, mean_spread, paired_cluster_test


def test_the_paired_test_uses_datasets_not_samples() -> None:
    """Three datasets that all improve: a sample-level test over 3 x 100 samples would give p ~ 1e-4; with
    three clusters the smallest two-sided sign-flip p is 2/8 = 0.25 (plus the +1 correction)."""
    diffs = cluster_diffs({"a": 0.9, "b": 0.8, "c": 0.95}, {"a": 0.5, "b": 0.6, "c": 0.55})
    d, lo, hi, p = paired_cluster_test(diffs)
    assert d == pytest.approx(np.mean([0.4, 0.2, 0.4]))
    assert lo <= d <= hi
    assert p >= 0.2
    many = paired_cluster_test({f"d{i}": 0.1 + 0.01 * i for i in range(12)})
    assert many[3] < 0.01  # twelve datasets all improving is significant


def test_mean_spread_over_seeds() -> None:
    assert mean_spread([0.5, 0.7, None, 0.9]) == pytest.approx((0.7, 0.2))
    assert mean_spread([0.4]) == (0.4, 0.0)
    assert mean_spread([None]) == (None, None)


def _fake_run(folder: Path, strategy: str, seed: int, per_dataset: dict[str, float], calls: int) -> None:
    folder.mkdir(parents=True)
    metric = {k: 0.9 for k in METRIC_NAMES}
    datasets = {d: {**metric, "E2E": v} for d, v in per_dataset.items()}
    macro = {**metric, "E2E": sum(per_dataset.values()) / len(per_dataset)}
    (folder / "metrics.json").write_text(
        json.dumps({"profile": "official", "macro": macro, "datasets": datasets})
    )
    (folder / "usage.json").write_text(
        json.dumps(
            {
                "total": {
                    "calls": calls,
                    "prompt_tokens": 10 * calls,
                    "completion_tokens": calls,
                    "cost_usd": 0.01 * calls,
                },
                "candidates": calls,
            }
        )
    )
    (folder / "run.json").write_text(
        json.dumps({"strategy": strategy, "wall_s": 2.0, "config": {"run": {"seed": seed}}})
    )
    (folder / ".hydra").mkdir()
    (folder / ".hydra" / "overrides.yaml").write_text(f"- strategy={strategy}\n- run.seed={seed}\n")


def test_a_three_seed_sweep_gives_mean_spread_clustered_ci_and_cost(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    job = 0
    for seed, shift in enumerate((0.0, 0.1, 0.2)):
        for strategy, base, calls in (("s0", 0.5, 1), ("s3", 0.7, 5)):
            values = {f"d{i}": min(1.0, base + shift + 0.01 * i) for i in range(6)}
            _fake_run(sweep / f"{job}_{strategy}", strategy, seed, values, calls)
            job += 1
    runs = load_runs(sweep)
    assert [r.label for r in runs].count("s3") == 3  # seeds are repeats of one row, not rows
    table = summary_frame(runs).set_index("strategy")
    s3 = table.loc["s3"]
    assert s3["seeds"] == 3
    per_seed = [np.mean([min(1.0, 0.7 + sh + 0.01 * i) for i in range(6)]) for sh in (0.0, 0.1, 0.2)]
    assert s3["E2E"] == pytest.approx(np.mean(per_seed))
    assert s3["E2E_sd"] == pytest.approx(np.std(per_seed, ddof=1))
    assert s3["calls"] == 5 and s3["prompt_tokens"] == 50 and s3["USD"] == pytest.approx(0.05)
    assert s3["wall_s"] == 2.0
    assert s3["E2E_lo"] <= s3["E2E"] <= s3["E2E_hi"]
    assert s3["dE2E_vs_s0"] > 0 and s3["n_datasets"] == 6
    written = {p.name for p in write_ablation(sweep)}
    assert {"ablation.png", "ablation_cost.png"} <= written
    md = (sweep / "ablation.md").read_text()
    assert "± " in md and "wall_s" in md
    assert pd.read_csv(sweep / "ablation.csv")["seeds"].tolist() == [3, 3]

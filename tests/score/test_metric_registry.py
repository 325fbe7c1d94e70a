"""The scorer's metrics come from one registry: the eleven always, in the paper's order; a registered extra
metric only when the scoring rules name it, after the eleven, averaged in the macro but never in Avg."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from score_builders import Builder

from benchmark.score.aggregate import avg_11, macro
from benchmark.score.constants import METRIC_NAMES
from benchmark.score.evaluate import score_dataset
from benchmark.score.metrics import METRICS, MetricInputs, UnknownNameError, check_names, metric
from benchmark.score.profiles import ScoringRules

ROOT = Path(__file__).resolve().parents[2]


@metric("test_missing_annotations")
def missing_annotations(data: MetricInputs) -> float:
    """How many GT samples have no valid annotation (a count, so a test can predict it)."""
    return float(sum(not r.json_valid for r in data.records))


def test_the_eleven_are_registered_as_official_in_the_papers_order() -> None:
    assert METRICS.names_where(official=True) == sorted(METRIC_NAMES)
    assert "test_missing_annotations" not in METRICS.names_where(official=True)


def test_a_scored_model_has_the_eleven_and_nothing_else_by_default(build_dataset: Builder) -> None:
    res = score_dataset(build_dataset(n=3), profile="official")
    assert list(res["models"]["m"]["metrics"]) == list(METRIC_NAMES)


@pytest.mark.parametrize("profile", ["official", "strict"])
def test_an_extra_metric_named_by_the_rules_follows_the_eleven(build_dataset: Builder, profile: str) -> None:
    root = build_dataset(n=3, edit=lambda i, a: ... if i == 2 else None)
    plain = score_dataset(root, profile=profile)["models"]["m"]["metrics"]
    rules = ScoringRules.named(profile).with_metrics(("test_missing_annotations",))
    res = score_dataset(root, profile=rules)
    metrics = res["models"]["m"]["metrics"]
    assert list(metrics) == [*METRIC_NAMES, "test_missing_annotations"]
    assert metrics["test_missing_annotations"] == 1.0
    assert {k: metrics[k] for k in METRIC_NAMES} == plain  # the eleven are untouched
    assert res["profile"] == profile  # the rules keep their name: files and tables are unchanged
    agg = macro({"tiny": res})["models"]["m"]
    assert agg["metrics"]["test_missing_annotations"] == 1.0
    assert agg["avg_11"] == avg_11(plain)


def test_names_are_checked_before_scoring() -> None:
    with pytest.raises(UnknownNameError, match=r"valid metrics: .*E2E"):
        check_names(["no_such_metric"])
    with pytest.raises(ValueError, match="one of the eleven"):
        check_names(["E2E"])
    assert check_names(["test_missing_annotations", "test_missing_annotations"]) == (
        "test_missing_annotations",
    )


def test_the_cli_refuses_an_unknown_metric_in_one_line(build_dataset: Builder) -> None:
    root = build_dataset(n=1)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmark.score", "--dataset-dir", str(root), "--metric", "nope"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--metric: unknown metric 'nope'" in proc.stderr
    assert not (root / "VLM" / "eval_results_official.json").exists()

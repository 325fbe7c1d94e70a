"""The validator meta-evaluation: its measures against brute force, the per-check table on evidence built by
hand, weights fitted toward the check that carries the truth, and the CLI with --fit on a stored run (the
fitted profile usable as validator=<file>, marked as fitted)."""

from __future__ import annotations

import itertools
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from experiments import compose_config
from experiments.analysis.validator_eval.collect import Evidence, SampleRow
from experiments.analysis.validator_eval.fit import fit_weights
from experiments.analysis.validator_eval.measures import auroc, calibration, failure_precision_recall
from experiments.analysis.validator_eval.tables import check_frame
from validator.registry import Profile, get_check, load_profile, registered_checks

REPO = Path(__file__).resolve().parents[2]


def test_auroc_equals_the_share_of_correctly_ordered_pairs() -> None:
    rng = random.Random(3)
    scores = [rng.choice([0.0, 0.25, 0.5, 1.0]) for _ in range(40)]  # many ties
    truth = [rng.random() < 0.4 for _ in range(40)]
    pos = [s for s, t in zip(scores, truth, strict=True) if t]
    neg = [s for s, t in zip(scores, truth, strict=True) if not t]
    brute = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    assert auroc(scores, truth) == pytest.approx(brute / (len(pos) * len(neg)))
    assert auroc([1.0, 0.0], [True, True]) != auroc([1.0, 0.0], [True, True])  # NaN: one class only


def test_calibration_and_failure_rates_by_hand() -> None:
    cal = calibration([0.05, 0.05, 0.95, 0.95], [False, True, True, True], bins=10)
    assert cal.counts[0] == 2 and cal.counts[9] == 2
    assert cal.ece == pytest.approx((2 * abs(0.5 - 0.05) + 2 * abs(1.0 - 0.95)) / 4)
    precision, recall, fails = failure_precision_recall(
        [True, True, False, False], [True, False, True, False]
    )
    assert (precision, recall, fails) == (0.5, 0.5, 2)


def _evidence(n: int = 60) -> Evidence:
    """Samples where `source_in_dataset` decides E2E, `record` says nothing, `boxes_inside_image` abstains."""
    rng = random.Random(0)
    names = ("source_in_dataset", "record", "boxes_inside_image")
    registered_checks()  # imports the built-in check modules
    profile = Profile("hand", tuple((get_check(c), 1.0) for c in names))
    rows = []
    for i in range(n):
        for k in range(2):
            passes = (i + k) % 2 == 0
            row = SampleRow(f"run/d{i % 3}", f"d{i % 3}", k, i, passes, 1.0 if passes else 0.2)
            row.scores["hand"] = {
                "source_in_dataset": 1.0 if passes else 0.0,
                "record": rng.random(),
                "boxes_inside_image": 1.0,
            }
            row.totals["hand"] = sum(row.scores["hand"].values()) / 3
            row.abstain["hand"] = {"boxes_inside_image"} if i % 2 else set()
            rows.append(row)
    return Evidence(rows, [], {"hand": {}}, {"hand": profile})


def test_check_table_ranks_the_deciding_check_first_and_counts_abstentions() -> None:
    frame = check_frame(_evidence(), "hand").set_index("check")
    assert frame.loc["source_in_dataset", "AUROC"] == 1.0
    assert frame.loc["source_in_dataset", "fail_precision"] == 1.0
    assert frame.loc["source_in_dataset", "fail_recall"] == 1.0
    assert (
        frame.loc["boxes_inside_image", "AUROC"] == 0.5 and frame.loc["boxes_inside_image", "failures"] == 0
    )
    assert frame.loc["boxes_inside_image", "coverage"] == pytest.approx(0.5)
    assert frame.index[0] == "source_in_dataset"


def test_fitted_weights_are_non_negative_and_follow_the_truth() -> None:
    weights, pairs = fit_weights(
        _evidence(),
        "hand",
        {"d0", "d1", "d2"},
        {"source_in_dataset": 1.0, "record": 1.0, "boxes_inside_image": 1.0},
    )
    assert pairs == 60  # one pass/fail pair per sample
    assert all(w >= 0 for w in weights.values()) and sum(weights.values()) == pytest.approx(1.0)
    assert weights["source_in_dataset"] > 0.8
    none, zero = fit_weights(
        _evidence(), "hand", set(), {"source_in_dataset": 1.0, "record": 3.0, "boxes_inside_image": 0.0}
    )
    assert zero == 0 and none == {"source_in_dataset": 0.25, "record": 0.75, "boxes_inside_image": 0.0}


@pytest.mark.heavy
def test_cli_evaluates_fits_and_the_fitted_profile_runs(
    rules_s3_run: tuple[Path, Path], tmp_path: Path
) -> None:
    _, src = rules_s3_run
    run = tmp_path / "run"
    shutil.copytree(src, run, symlinks=True)  # the evaluation stores mdsbench reports beside the candidates
    out = tmp_path / "eval"
    done = subprocess.run(
        [sys.executable, "-m", "experiments.cli", "validator-eval", str(run), "--fit", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    for name in ("validator_eval.md", "totals.csv", "checks_evidence.csv", "checks_mdsbench.png", "fit.csv"):
        assert (out / name).is_file(), name
    fitted_path = out / "validator" / "evidence_fitted.yaml"
    profile = load_profile(fitted_path)
    assert profile.fitted is not None and profile.fitted["base_profile"] == "evidence"
    weights = [w for _, w in profile.checks]
    assert min(weights) >= 0 and sum(weights) == pytest.approx(1.0, abs=1e-4)
    assert "held_out_selection_E2E" in profile.fitted and "hand_set_selection_E2E" in profile.fitted
    assert "leave-one-dataset-out" in (out / "validator_eval.md").read_text()
    cfg = compose_config([f"validator={fitted_path}"])
    assert cfg.validator.profile == "evidence_fitted" and cfg.validator.fitted.base_profile == "evidence"
    bad = subprocess.run(
        [sys.executable, "-m", "experiments", f"validator={tmp_path / 'nothere.yaml'}"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert bad.returncode == 2 and "no such profile file" in bad.stderr and bad.stderr.count("\n") == 1
    assert not json.loads((run / "run.json").read_text()).get("validator_fitted")  # the source is untouched
    assert yaml.safe_load(fitted_path.read_text())["profile"] == "evidence_fitted"

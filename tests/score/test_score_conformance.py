"""`official` reproduces the reference scorer on every conformance dataset × model, per sample and metric."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from benchmark.score.aggregate import macro
from benchmark.score.constants import METRIC_NAMES, ROUNDED_METRICS
from benchmark.score.evaluate import score_root

PER_SAMPLE_FIELDS = (
    "matched_annotation_index",
    "image_exists",
    "image_valid",
    "json_present",
    "json_valid",
    "path_consistent",
    "pair_valid",
    "source_score",
    "schema_valid_score",
    "semantic_score",
    "content_fidelity_score",
)
IQ_FIELDS = ("completeness", "validity", "non_redundancy")


def _conformance_cases() -> list[tuple[str, str]]:
    """(dataset, model) pairs listed in the shared vectors, found the same way as tests/conftest.py."""
    env = os.environ.get("MEDSTRAT_SHARED")
    base = Path(env) if env else Path(__file__).resolve().parents[3] / "shared"
    listing = base / "mdsbench" / "conformance" / "cases" / "_datasets.json"
    if not listing.is_file():
        return [("<absent>", "<absent>")]
    return [(d["dataset"], m) for d in json.loads(listing.read_text()) for m in d["models"]]


CASES = _conformance_cases()


@pytest.fixture(scope="module")
def official(conformance_dir: Path) -> dict[str, Any]:
    return score_root(conformance_dir / "cases", profile="official")


@pytest.fixture(scope="module")
def expected(conformance_dir: Path) -> dict[str, Any]:
    return {p.stem: json.loads(p.read_text()) for p in (conformance_dir / "expected").glob("*.json")}


@pytest.mark.parametrize(("dataset", "model"), CASES, ids=[f"{d}/{m}" for d, m in CASES])
def test_official_matches_reference_per_sample_and_metrics(
    official: dict[str, Any], expected: dict[str, Any], dataset: str, model: str
) -> None:
    if dataset == "<absent>":
        pytest.skip("conformance vectors absent")
    want = expected[dataset]["models"][model]
    got = official[dataset]["models"][model]
    assert got["error"] is None
    for name in METRIC_NAMES:
        if name in ROUNDED_METRICS:
            assert got["metrics"][name] == want["metrics"][name], name
        else:
            assert got["metrics"][name] == pytest.approx(want["metrics"][name], abs=1e-9), name
    assert len(got["per_sample"]) == len(want["per_sample"])
    for g, w in zip(got["per_sample"], want["per_sample"], strict=True):
        assert g["index"] == w["index"]
        for f in PER_SAMPLE_FIELDS:
            assert g[f] == w[f], (w["index"], f)
        for f in IQ_FIELDS:
            assert g["information_quality_details"][f] == w[f"information_quality_details.{f}"], (
                w["index"],
                f,
            )
        assert g["schema_checks"] == w["schema_checks"], w["index"]


def test_macro_table_reproduces_reference_aggregation(
    official: dict[str, Any], expected: dict[str, Any]
) -> None:
    got = macro(official)["models"]
    for model, want in expected["_macro"]["models"].items():
        assert got[model]["n_datasets"] == want["n_datasets"]
        for name in METRIC_NAMES:
            assert got[model]["metrics"][name] == pytest.approx(want["metrics"][name], abs=1e-9)
        assert got[model]["avg_11"] == pytest.approx(want["avg_11"], abs=1e-9)
        assert got[model]["weighted"] == pytest.approx(want["weighted"], abs=1e-9)


def test_strict_scores_every_conformance_case_without_errors(conformance_dir: Path) -> None:
    strict = score_root(conformance_dir / "cases", profile="strict")
    for dataset, res in strict.items():
        for model, mres in res["models"].items():
            assert mres["error"] is None, (dataset, model)
            assert set(mres["metrics"]) == set(METRIC_NAMES)
            assert all(0.0 <= v <= 1.0 for v in mres["metrics"].values())

"""The mdsbench profile + strategies.paper reproduce the reference S3 selection and S4 vote
(conformance/s3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmark.discover import Dataset
from strategies.paper import Selection, Voting, discover_candidates, select_reference, vote_reference
from validator.validate import validate

DATASETS = ("kits23", "microscopy-demo")


def _as_float(value: Any) -> float:
    return float(value) if not isinstance(value, bool) else (1.0 if value else 0.0)


@pytest.fixture(scope="module", params=DATASETS)
def case(request: pytest.FixtureRequest, conformance_dir: Path) -> dict[str, Any]:
    root = conformance_dir / "s3" / request.param
    if not root.is_dir():
        pytest.skip(f"no S3 vectors for {request.param}")
    dataset = Dataset.from_root(root)
    candidates = discover_candidates(root / "prompt_experiment" / "candidates")
    indices = dataset.indices
    reports = {c.name: validate(c.root, dataset, profile="mdsbench") for c in candidates}
    selection = select_reference(candidates, indices, reports)
    voting = vote_reference(
        candidates,
        indices,
        reports,
        selection,
        entries={e.index: e for e in dataset.entries()},
        dataset_root=root,
    )
    return {
        "root": root,
        "candidates": candidates,
        "selection": selection,
        "voting": voting,
        "expected_selection": json.loads((root / "expected_selection.json").read_text()),
        "expected_voting": json.loads((root / "expected_voting.json").read_text()),
    }


def test_candidates_are_discovered_in_reference_order(case: dict[str, Any]) -> None:
    assert [c.name for c in case["candidates"]] == case["expected_selection"]["candidates_in_discovery_order"]


def test_s3_selects_the_reference_candidate_with_reference_scores(case: dict[str, Any]) -> None:
    selection: Selection = case["selection"]
    for key, exp in case["expected_selection"]["per_index"].items():
        got = selection.per_index[int(key)]
        assert got.selected == exp["selected"], key
        assert got.score == pytest.approx(exp["selected_score"], abs=5e-5)
        assert got.scores == pytest.approx(exp["scores"], abs=5e-5)
        for cand, checks in exp["check_scores"].items():
            for name, value in checks.items():
                if name == "valid_json_object":
                    continue  # not a weighted check: a candidate without a JSON object is not scored at all
                assert round(got.check_scores[cand][name], 4) == pytest.approx(_as_float(value), abs=5e-5), (
                    key,
                    cand,
                    name,
                )


def test_s3_meta_choice_and_patched_data_meta_match(case: dict[str, Any]) -> None:
    exp = case["expected_selection"]
    meta = case["selection"].meta
    assert meta.selected_from == exp["meta"]["selected_meta_from"]
    assert meta.pre_patch_score == pytest.approx(exp["meta"]["pre_patch_score"])
    assert meta.data_meta == exp["output_data_meta"]


def test_s4_decision_votes_branch_source_and_extra_votes_match(case: dict[str, Any]) -> None:
    voting: Voting = case["voting"]
    for key, exp in case["expected_voting"]["per_index"].items():
        got = voting.per_index[int(key)]
        assert got.decision == exp["decision"]
        assert got.base_candidate == exp["base_candidate"]
        assert got.best_score == pytest.approx(exp["best_score"], abs=5e-5)
        assert got.voted_score == pytest.approx(exp["voted_score_before_fallback"], abs=5e-5)
        assert got.final_score == pytest.approx(exp["final_score"], abs=5e-5)
        for path, vote in exp["field_votes"].items():
            assert got.field_votes[path]["winner_key"] == vote["winner_key"]
            assert got.field_votes[path]["winner_weight"] == pytest.approx(vote["winner_weight"], abs=5e-5)
            assert [(d["key"], d["n"], d["candidates"]) for d in got.field_votes[path]["distribution"]] == [
                (d["key"], d["n"], d["candidates"]) for d in vote["distribution"]
            ]
        assert {k: got.branch_selection[k] for k in exp["branch_selection"]} == exp["branch_selection"]
        assert {k: {"new": v["new"], "n_votes": v["n_votes"]} for k, v in got.extra_voting.items()} == exp[
            "extra_voting"
        ]
        assert got.id_type_changes == exp["id_type_changes"]
        assert got.image_from == exp["selected_image_from"]
        for name, value in exp["final_check_scores"].items():
            if name != "valid_json_object":
                assert round(got.final_check_scores[name], 4) == pytest.approx(_as_float(value), abs=5e-5)


def test_s4_merged_annotations_equal_the_reference_outputs(case: dict[str, Any]) -> None:
    out = case["root"] / "prompt_experiment" / "S4" / "agent1_data_organization"
    for index, got in case["voting"].per_index.items():
        expected = json.loads((out / "standardized_annotations" / f"{index}.json").read_text())
        assert got.annotation == expected, index
    assert case["voting"].meta.data_meta == case["expected_voting"]["output_data_meta"]
    assert case["voting"].meta.selected_from == "f01_wrong_source"

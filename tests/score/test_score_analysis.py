"""Threshold sensitivity, breakdowns and error attribution on small hand-made results."""

from __future__ import annotations

from typing import Any

import pytest

from benchmark.score import analysis as A
from benchmark.score.constants import METRIC_NAMES


def _ps(i: int, g: float, q: float, f: float) -> dict[str, Any]:
    return {
        "index": str(i),
        "pair_valid": True,
        "source_score": 1.0,
        "schema_valid_score": g,
        "semantic_score": q,
        "content_fidelity_score": f,
    }


def _results() -> dict[str, Any]:
    metrics_a = dict.fromkeys(METRIC_NAMES, 0.8)
    metrics_b = dict.fromkeys(METRIC_NAMES, 0.4)
    return {
        "d1": {
            "info": {"task_type": "segmentation", "modality": "CT"},
            "models": {
                "A": {
                    "metrics": metrics_a,
                    "per_sample": [_ps(0, 1.0, 1.0, 1.0), _ps(1, 0.8571, 0.55, 0.45)],
                    "error": None,
                },
                "B": {
                    "metrics": metrics_b,
                    "per_sample": [_ps(0, 0.7, 1.0, 1.0), _ps(1, 0.9, 0.9, 0.9)],
                    "error": None,
                },
            },
        },
        "d2": {
            "info": {"task_type": "classification", "modality": "MR"},
            "models": {
                "A": {"metrics": metrics_a, "per_sample": [_ps(0, 1.0, 1.0, 1.0)], "error": None},
                "B": {"metrics": {}, "per_sample": [], "error": "crashed"},
            },
        },
    }


def test_grid_covers_every_threshold_triple_and_skips_errored_datasets() -> None:
    grid = A.e2e_grid(_results())
    assert len(grid) == 7 * 5 * 5 * 2
    row = grid[(grid.model == "A") & (grid.g == 0.85) & (grid.q == 0.5) & (grid.f == 0.4)]
    assert float(row.E2E.iloc[0]) == pytest.approx((1.0 + 1.0) / 2)  # d1: both pass at f=0.4; d2: 1
    row_b = grid[(grid.model == "B") & (grid.g == 0.85) & (grid.q == 0.5) & (grid.f == 0.5)]
    assert float(row_b.E2E.iloc[0]) == 0.5  # only d1 counts for B


def test_slices_vary_one_threshold_with_others_at_default() -> None:
    sl = A.threshold_slices(_results())
    assert set(sl.varied) == {"g", "q", "f"}
    at_default = sl[(sl.varied == "f") & (sl.value == 0.5)]
    assert float(at_default["A"].iloc[0]) == pytest.approx(0.75)


def test_error_attribution_counts_datasets_below_half() -> None:
    table = A.error_attribution(_results()).set_index("model")
    assert table.loc["A", "Joint # fail"] == 0 and table.loc["B", "Joint # fail"] == 1
    assert table.loc["B", "Content score"] == pytest.approx(0.4)


def test_breakdown_groups_datasets_by_attribute() -> None:
    table = A.breakdown(_results(), "task_type").set_index("model")
    assert list(table.columns) == ["classification (n=1)", "segmentation (n=1)"]
    assert table.loc["A", "segmentation (n=1)"] == pytest.approx(0.8)


def test_markdown_render_has_header_rule_and_rows() -> None:
    text = A.render(A.macro_table(_results()), "md")
    lines = text.strip().splitlines()
    assert lines[0].startswith("| model | SV") and lines[1].startswith("| ---") and len(lines) == 4
    with pytest.raises(ValueError, match="valid: md, csv, tex"):
        A.render(A.macro_table(_results()), "html")

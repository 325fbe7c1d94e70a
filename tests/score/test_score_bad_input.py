"""Bad input becomes a scored failure with a reason, never an exception."""

from __future__ import annotations

import json
from pathlib import Path

from score_builders import Builder

from benchmark.score.dataset import score_prediction
from benchmark.score.evaluate import score_dataset
from benchmark.score.images import png_problem


def test_corrupt_png_is_invalid_with_reason(build_dataset: Builder) -> None:
    root = build_dataset()
    (root / "VLM/m/agent1_data_organization/images/0.png").write_bytes(b"\x00" * 256)
    res = score_dataset(root)["models"]["m"]
    s0 = res["per_sample"][0]
    assert s0["image_exists"] and not s0["image_valid"] and not s0["pair_valid"]
    assert "PNG" in s0["reason"] or "image" in s0["reason"]
    assert res["metrics"]["E2E"] == 0.5


def test_png_walk_catches_truncation_and_bad_crc(tmp_path: Path) -> None:
    import numpy as np
    from score_builders import write_png

    write_png(tmp_path / "a.png", np.zeros((4, 4)))
    data = (tmp_path / "a.png").read_bytes()
    assert png_problem(data) is None
    assert png_problem(data[:-20]) is not None
    broken = bytearray(data)
    broken[30] ^= 0xFF
    assert "CRC" in (png_problem(bytes(broken)) or "")


def test_non_json_annotation_and_null_are_invalid_samples(build_dataset: Builder) -> None:
    root = build_dataset()
    ann_dir = root / "VLM/m/agent1_data_organization/standardized_annotations"
    (ann_dir / "0.json").write_text("{not json", encoding="utf-8")
    (ann_dir / "1.json").write_text("null", encoding="utf-8")
    res = score_dataset(root)["models"]["m"]
    assert res["error"] is None
    assert [s["json_valid"] for s in res["per_sample"]] == [False, False]
    assert "not valid JSON" in res["per_sample"][0]["reason"]
    assert res["metrics"]["SV"] == 0.0


def test_missing_data_meta_zeroes_the_meta_scores(build_dataset: Builder) -> None:
    root = build_dataset()
    (root / "VLM/m/agent1_data_organization/data_meta.json").unlink()
    res = score_dataset(root)["models"]["m"]
    assert res["metrics"]["MSC"] == 0.0
    assert res["metrics"]["MSJ"] < 1e-5
    assert "data_meta.json missing" in res["breakdown"]["data_meta_reason"]


def test_model_without_annotations_scores_zero(build_dataset: Builder) -> None:
    root = build_dataset()
    for p in (root / "VLM/m/agent1_data_organization/standardized_annotations").iterdir():
        p.unlink()
    res = score_dataset(root)["models"]["m"]
    assert res["error"] is None and res["metrics"]["E2E"] == 0.0 and res["metrics"]["SV"] == 0.0
    assert all(s["reason"] and "no annotation" in s["reason"] for s in res["per_sample"])


def test_ground_truth_without_samples_is_an_error_not_an_exception(
    build_dataset: Builder, tmp_path: Path
) -> None:
    root = build_dataset()
    gt = json.loads((root / "VLM/ground_truth_tiny.json").read_text())
    del gt["samples"]
    assert (
        score_prediction(root / "VLM/m/agent1_data_organization", gt).error == "ground truth has no samples"
    )
    (root / "VLM/ground_truth_tiny.json").write_text(json.dumps(gt))
    res = score_dataset(root)
    assert res["models"]["m"]["error"]


def test_oracle_like_prediction_scores_full_marks(build_dataset: Builder) -> None:
    res = score_dataset(build_dataset())["models"]["m"]
    assert res["metrics"]["E2E"] == 1.0 and res["metrics"]["SV"] == 1.0 and res["metrics"]["MSC"] == 1.0

"""Issue 24, item 3: checks for evidence the official scorer cannot see. Each has a candidate it must flag and
a valid alternative representation it must accept; the S3 trap (an empty detection outscoring an honest
unknown label) is measured on whole validator totals."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from validator import dataset_facts
from validator.validate import clear_cache, validate

pytest.importorskip("skimage")

NAMES = [
    "fx-us-study-labels",
    "fx-ihc-parallel-masks",
    "fx-fundus-nnunet",
    "fx-rtimage-sop-labels",
    "fx-bids-func-4d",
    "fx-tiff-stations",
]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from testbed.foreign import build_foreign

    out = tmp_path_factory.mktemp("fx")
    build_foreign(out, only=NAMES, oracle="oracle")
    return out


Edit = Callable[[dict[str, Any]], None]


def _candidate(suite: Path, name: str, tmp: Path, edit: Edit | None = None, index: int = 0) -> Path:
    """A copy of the oracle answer of ``name`` with ``edit`` applied to sample ``index``'s JSON."""
    src = suite / name / "VLM" / "oracle" / "agent1_data_organization"
    dst = tmp / f"{name}-{index}" / "agent1_data_organization"
    shutil.copytree(src, dst)
    if edit is not None:
        path = dst / "standardized_annotations" / f"{index}.json"
        doc = json.loads(path.read_text(encoding="utf-8"))
        edit(doc)
        path.write_text(json.dumps(doc), encoding="utf-8")
    return dst


def _score(suite: Path, name: str, folder: Path, check: str, index: int = 0) -> tuple[float, str, float]:
    clear_cache()
    dataset_facts.clear()
    report = validate(folder, suite / name, use_cache=False)
    sample = report.samples[index]
    outcome = sample.checks[check]
    return outcome.result.score, outcome.result.message, sample.total


def _as_empty_detection(doc: dict[str, Any]) -> None:
    branch = doc["tasks"]["classification"]
    doc["tasks"] = {
        "classification": {},
        "segmentation": {},
        "detection": {"schema_variant": "2d", "class_names": branch["class_names"], "boxes2d": []},
    }
    doc["media_geometry"]["media"]["task_type"] = "detection"
    doc["context"]["sample"]["extra"]["map_type"] = "bbox"


def _as_unknown_label(doc: dict[str, Any]) -> None:
    doc["tasks"]["classification"]["label_name"] = "NA"
    doc["context"]["sample"]["extra"]["label_text"] = doc["context"]["sample"]["extra"]["class_name"] = "NA"


def test_empty_detection_without_box_file_scores_below_an_honest_unknown_label(
    suite: Path, tmp_path: Path
) -> None:
    name = "fx-us-study-labels"
    det = _candidate(suite, name, tmp_path / "det", _as_empty_detection)
    honest = _candidate(suite, name, tmp_path / "honest", _as_unknown_label)
    score, message, det_total = _score(suite, name, det, "task_support")
    assert score == 0.0 and "box list is empty" in message and "classification" in message
    honest_score, _, honest_total = _score(suite, name, honest, "task_support")
    assert honest_score == 1.0
    assert det_total < honest_total


def test_empty_box_list_backed_by_a_box_file_is_accepted(suite: Path, tmp_path: Path) -> None:
    def boxes_in_file(doc: dict[str, Any]) -> None:
        _as_empty_detection(doc)
        doc["context"]["sample"]["extra"]["bbox_file"] = "data/labels.json"

    folder = _candidate(suite, "fx-us-study-labels", tmp_path, boxes_in_file)
    assert _score(suite, "fx-us-study-labels", folder, "task_support")[0] == 1.0


def test_mask_without_any_annotation_file_is_flagged(suite: Path, tmp_path: Path) -> None:
    def invented_mask(doc: dict[str, Any]) -> None:
        doc["tasks"] = {
            "classification": {},
            "detection": {},
            "segmentation": {
                "schema_variant": "2d_coco",
                "classes": {"0": "background", "1": "nodule"},
                "coco_2d": {"format": "label_map_png", "mask_path": "masks/0.png", "label_values": [0, 1]},
            },
        }
        doc["media_geometry"]["media"]["task_type"] = "segmentation"

    folder = _candidate(suite, "fx-us-study-labels", tmp_path, invented_mask)
    score, message, _ = _score(suite, "fx-us-study-labels", folder, "task_support")
    assert score == 0.0 and "no annotation file" in message
    # The same representation where a label map exists on disk (nnU-Net labelsTr) is accepted.
    ok = _candidate(suite, "fx-fundus-nnunet", tmp_path)
    assert _score(suite, "fx-fundus-nnunet", ok, "task_support")[0] == 1.0


def test_label_found_nowhere_in_the_raw_data_is_flagged(suite: Path, tmp_path: Path) -> None:
    def guessed(doc: dict[str, Any]) -> None:
        doc["tasks"]["classification"]["label_name"] = "malignant"

    folder = _candidate(suite, "fx-us-study-labels", tmp_path, guessed)
    score, message, _ = _score(suite, "fx-us-study-labels", folder, "task_support")
    assert score < 1.0 and "'malignant' appears nowhere" in message
    # A class name only a cp1252 semicolon table holds ("décalé") has its source.
    rt = _candidate(suite, "fx-rtimage-sop-labels", tmp_path, index=1)
    assert _score(suite, "fx-rtimage-sop-labels", rt, "task_support", index=1)[0] == 1.0


def test_mask_named_after_another_image_is_flagged(suite: Path, tmp_path: Path) -> None:
    name = "fx-ihc-parallel-masks"

    def swapped(doc: dict[str, Any]) -> None:
        # sample 1 is slides/S01/tile_r0_c1; give it tile_r1_c0's mask (same digits, another image).
        extra = doc["context"]["sample"]["extra"]
        extra["mask_file"] = extra["label_file"] = "data/masks/S01/tile_r1_c0.png"

    folder = _candidate(suite, name, tmp_path, swapped, index=1)
    score, message, _ = _score(suite, name, folder, "mask_names_other_image", index=1)
    assert score == 0.0 and "tile_r1_c0" in message and "data/masks/S01/tile_r0_c1.png" in message
    ok = _candidate(suite, name, tmp_path / "ok", index=1)
    assert _score(suite, name, ok, "mask_names_other_image", index=1)[0] == 1.0


def test_mask_with_a_name_of_its_own_is_accepted(suite: Path, tmp_path: Path) -> None:
    # nnU-Net pairs <case>_0000 with <case>: the channel suffix is not another image's name.
    folder = _candidate(suite, "fx-fundus-nnunet", tmp_path)
    doc = json.loads((folder / "standardized_annotations" / "0.json").read_text(encoding="utf-8"))
    assert doc["context"]["sample"]["extra"]["mask_file"].endswith("labelsTr/retina_000.png")
    assert _score(suite, "fx-fundus-nnunet", folder, "mask_names_other_image")[0] == 1.0


def test_classification_beside_its_own_label_map_is_flagged(suite: Path, tmp_path: Path) -> None:
    name = "fx-fundus-nnunet"

    def as_classification(doc: dict[str, Any]) -> None:
        doc["tasks"] = {
            "segmentation": {},
            "detection": {},
            "classification": {
                "schema_variant": "multiclass",
                "class_names": {"0": "Dataset042_RetinaVessel"},
                "label": 0,
                "label_name": "Dataset042_RetinaVessel",
            },
        }
        doc["media_geometry"]["media"]["task_type"] = "classification"

    folder = _candidate(suite, name, tmp_path, as_classification)
    score, message, _ = _score(suite, name, folder, "task_support")
    assert score < 1.0 and "labelsTr/retina_000.png" in message
    # Classification where no label map pairs with the image (an ultrasound study) is not flagged.
    us = _candidate(suite, "fx-us-study-labels", tmp_path)
    assert _score(suite, "fx-us-study-labels", us, "task_support")[0] == 1.0

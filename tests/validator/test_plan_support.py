"""`validator.plan_support`: a plan the raw data contradicts scores below one it supports."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from validator import dataset_facts
from validator.plan_support import (
    CLASSES_WEIGHT,
    DIMENSION_WEIGHT,
    MODALITY_WEIGHT,
    TASK_WEIGHT,
    plan_support,
    reads_as,
)


def _png(path: Path, values: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(values.astype(np.uint8)).save(path)


def _dataset(root: Path, *, masks: bool, table: bool) -> list[str]:
    """Three 2D PNG images of skin lesions; masks beside them and/or a label table, as asked."""
    rng = np.random.default_rng(0)
    paths = []
    for i in range(3):
        _png(root / "data" / "images" / f"lesion_{i}.png", rng.integers(0, 255, (16, 16)))
        if masks:
            _png(root / "data" / "masks" / f"lesion_{i}_mask.png", (rng.random((16, 16)) > 0.5) * 255)
        paths.append(f"data/images/lesion_{i}.png")
    if table:
        rows = "".join(f"lesion_{i},{'nevus' if i % 2 else 'melanoma'}\n" for i in range(3))
        (root / "data" / "labels.csv").write_text("image,diagnosis\n" + rows, encoding="utf-8")
    (root / "VLM").mkdir()
    (root / "VLM" / "random.txt").write_text(
        "".join(f"{i} /authors/x/{p}\n" for i, p in enumerate(paths)), encoding="utf-8"
    )
    dataset_facts.clear()
    return paths


def _plan(
    task: str, classes: list[str], modality: str = "dermoscopy", dimension: str = "2D"
) -> dict[str, object]:
    return {"task_type": task, "modality": modality, "dimension": dimension, "classes": classes}


def test_a_segmentation_plan_without_mask_files_scores_below_one_with_them(tmp_path: Path) -> None:
    bare = _dataset(tmp_path / "bare", masks=False, table=False)
    masked = _dataset(tmp_path / "masked", masks=True, table=False)
    plan = _plan("segmentation", ["background", "lesion"])

    without = plan_support(tmp_path / "bare", bare, plan)
    with_masks = plan_support(tmp_path / "masked", masked, plan)

    assert with_masks.score == 1.0 and with_masks.reasons == ()
    assert without.score == pytest.approx(1.0 - TASK_WEIGHT)
    assert len(without.reasons) == 1 and "no mask-like file" in without.reasons[0]


def test_a_classification_table_supports_classification_over_segmentation(tmp_path: Path) -> None:
    paths = _dataset(tmp_path, masks=False, table=True)

    classification = plan_support(tmp_path, paths, _plan("classification", ["melanoma", "nevus"]))
    segmentation = plan_support(tmp_path, paths, _plan("segmentation", ["background", "melanoma"]))
    detection = plan_support(tmp_path, paths, _plan("detection", ["melanoma"]))

    assert classification.score == 1.0, classification.reasons
    assert segmentation.score < classification.score
    assert detection.score == pytest.approx(1.0 - TASK_WEIGHT) and "boxes" in detection.reasons[0]


def test_a_classification_plan_beside_masks_without_a_label_source_is_contradicted(tmp_path: Path) -> None:
    paths = _dataset(tmp_path, masks=True, table=False)

    found = plan_support(tmp_path, paths, _plan("classification", ["lesion"]))

    assert found.score == pytest.approx(1.0 - TASK_WEIGHT)
    assert "mask-like files" in found.reasons[0]


def test_classes_nothing_in_the_data_names_cost_their_share(tmp_path: Path) -> None:
    paths = _dataset(tmp_path, masks=False, table=True)

    found = plan_support(tmp_path, paths, _plan("classification", ["melanoma", "pneumonia"]))

    assert found.score == pytest.approx(1.0 - CLASSES_WEIGHT / 2)
    assert "pneumonia" in found.reasons[0] and "melanoma" not in found.reasons[0]


def test_a_2d_image_planned_as_3d_is_contradicted_but_not_the_reverse(tmp_path: Path) -> None:
    paths = _dataset(tmp_path, masks=False, table=True)

    found = plan_support(tmp_path, paths, _plan("classification", ["melanoma"], dimension="3D"))

    assert found.score == pytest.approx(1.0 - DIMENSION_WEIGHT)
    assert "2D images" in found.reasons[0]


def test_a_modality_the_dicom_header_contradicts_lowers_the_score(tmp_path: Path) -> None:
    from testbed.synth.write_dicom import write_image

    (tmp_path / "data" / "glaucoma").mkdir(parents=True)
    write_image(
        tmp_path / "data" / "glaucoma" / "eye0.dcm",
        np.zeros((16, 16), np.uint16),
        patient_id="P0",
        modality="OP",
        series_key="eye0",
    )
    (tmp_path / "VLM").mkdir()
    (tmp_path / "VLM" / "random.txt").write_text("0 /x/data/glaucoma/eye0.dcm\n", encoding="utf-8")
    dataset_facts.clear()
    paths = ["data/glaucoma/eye0.dcm"]

    ct = plan_support(tmp_path, paths, _plan("classification", ["glaucoma"], modality="CT"))
    fundus = plan_support(
        tmp_path, paths, _plan("classification", ["glaucoma"], modality="Fundus photography")
    )

    assert fundus.score == 1.0, fundus.reasons
    assert ct.score == pytest.approx(1.0 - MODALITY_WEIGHT)
    assert "Modality OP" in ct.reasons[0]


def test_an_rgb_image_reads_as_2d_and_a_stack_as_3d_with_its_shape(tmp_path: Path) -> None:
    rgb = np.zeros((12, 10, 3), dtype=np.uint8)
    np.save(tmp_path / "rgb.npy", rgb)
    np.save(tmp_path / "stack.npy", np.zeros((6, 12, 10), dtype=np.uint8))

    assert reads_as(tmp_path, "rgb.npy") == "2D (shape [12, 10, 3], axes YXC)"
    assert str(reads_as(tmp_path, "stack.npy")).startswith("3D (shape [6, 12, 10]")
    assert reads_as(tmp_path, "missing.npy") is None
    assert reads_as(tmp_path, "../outside.npy") is None


def test_a_table_with_box_columns_supports_a_detection_plan(tmp_path: Path) -> None:
    paths = _dataset(tmp_path, masks=False, table=False)
    rows = "".join(f"lesion_{i},3,4,9,12\n" for i in range(3))

    before = plan_support(tmp_path, paths, _plan("detection", ["lesion"]))
    (tmp_path / "data" / "boxes.csv").write_text("image,x_min,y_min,x_max,y_max\n" + rows, encoding="utf-8")
    dataset_facts.clear()
    from validator import _tables

    _tables.clear_caches()
    after = plan_support(tmp_path, paths, _plan("detection", ["lesion"]))

    assert before.score == pytest.approx(1.0 - TASK_WEIGHT)
    assert after.score == 1.0, after.reasons

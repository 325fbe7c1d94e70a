"""Label and box heuristics of the rules baseline, on small hand-made inputs."""

from __future__ import annotations

import pandas as pd
import pytest

from agents.rules.labels import (
    box_convention_hypotheses,
    boxes_from_rows,
    class_order_hypotheses,
    code_maps_from_text,
    label_column_hypotheses,
    yolo_boxes,
)
from agents.rules.source import subject_hypotheses


def test_readme_code_lists_become_code_maps_keyed_by_their_column_word() -> None:
    text = "# Cine\n\ngroup_code: 0 = normal, 1 = dilated cardiomyopathy, 2 = hypertrophic cardiomyopathy.\n"
    maps = code_maps_from_text(text + "Target 1 = Lung Opacity.\n")
    assert maps["group_code"] == {0: "normal", 1: "dilated cardiomyopathy", 2: "hypertrophic cardiomyopathy"}
    assert maps["target"] == {1: "Lung Opacity"}


def test_a_readable_diagnosis_column_beats_codes_and_measurements() -> None:
    frame = pd.DataFrame(
        {
            "image_id": [f"I{i}" for i in range(6)],
            "dx": ["mel", "nv", "bkl", "nv", "mel", "nv"],
            "diagnosis": ["melanoma", "nevus", "keratosis", "nevus", "melanoma", "nevus"],
            "age": ["40", "51", "62", "33", "47", "58"],
            "site": ["trunk"] * 6,
        }
    )
    ranked = [h.value for h in label_column_hypotheses(frame, "image_id", {})]
    assert ranked[0] == "diagnosis"
    assert "site" not in ranked  # a single value is no label


def test_class_orders_put_the_negative_class_first_then_alphabetical() -> None:
    hyps = class_order_hypotheses(["fracture", "normal"], ["fracture", "normal"])
    assert hyps[0].value == ["normal", "fracture"]
    assert {h.name for h in hyps} == {"normal_first", "alphabetical", "first_seen"}


@pytest.mark.parametrize(
    ("columns", "row", "expected"),
    [
        ({"x_min": 10, "y_min": 20, "x_max": 30, "y_max": 50}, "xyxy", [10, 20, 20, 30]),
        ({"x": 10, "y": 20, "width": 5, "height": 6}, "xywh", [10, 20, 5, 6]),
        ({"cx": 10, "cy": 20, "width": 4, "height": 6}, "cxcywh", [8, 17, 4, 6]),
    ],
)
def test_box_conventions_convert_to_coco_xywh(
    columns: dict[str, float], row: str, expected: list[float]
) -> None:
    frame = pd.DataFrame([columns])
    assert box_convention_hypotheses(frame)[0].value == row
    assert boxes_from_rows(frame, row, {}) == [pytest.approx(expected)]


def test_world_centres_map_to_pixels_with_origin_and_spacing() -> None:
    frame = pd.DataFrame(
        [{"seriesuid": "s", "coordX": -90.0, "coordY": -60.0, "coordZ": 0.0, "diameter_mm": 7.0}]
    )
    assert box_convention_hypotheses(frame)[0].value == "world"
    box = boxes_from_rows(frame, "world", {"origin": [-100.0, -80.0, 0.0], "spacing": [0.5, 0.5, 2.0]})[0]
    assert box == pytest.approx([13.0, 33.0, 14.0, 14.0])  # centre (20, 40) px, radius 7 px


def test_yolo_lines_are_normalised_centre_boxes() -> None:
    boxes = yolo_boxes("0 0.5 0.25 0.2 0.1\nnot a box\n", (200, 100))
    assert boxes == [
        ([pytest.approx(80.0), pytest.approx(20.0), pytest.approx(40.0), pytest.approx(10.0)], 0)
    ]


def test_subject_of_a_generic_file_name_is_its_case_folder_not_the_study() -> None:
    hyps = subject_hypotheses(
        "data/Patients/LIVER-7/Study_20200101/Series_2 CT/IM0001.dcm",
        patient_id=None,
        join_value=None,
        mask=None,
        label_word=None,
    )
    assert hyps[0].value == "LIVER-7"


def test_subject_is_the_name_part_an_image_shares_with_its_mask() -> None:
    hyps = subject_hypotheses(
        "data/images/ProstateX-0004_t2w.mha",
        patient_id=None,
        join_value=None,
        mask="data/masks/ProstateX-0004_gland.mha",
        label_word=None,
    )
    assert hyps[0].value == "ProstateX-0004"

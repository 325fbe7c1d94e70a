"""Class-id evidence: a label table keyed by a relative path names the class of the source under it, and a
class id written as a string fails the schema (it is an integer by SPEC §2.2) as one error, not as one per
union member."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from pydantic import ValidationError

from benchmark.answer_shape import sample_annotation
from validator.checks.structure import distinct_errors
from validator.schema import Annotation
from validator.validate import clear_cache, validate

CLASSES = {"0": "normal", "1": "abnormal"}
# Two series of two patients share the folder name "s1": only the path below data/media tells them apart.
SOURCES = ("data/media/p1/s1/a.png", "data/media/p2/s1/b.png")
TABLE = "series_folder,label\np1/s1,normal\np2/s1,abnormal\n"


def _annotation(index: int, source: str, label: Any) -> dict[str, Any]:
    subject = source.split("/")[2]
    return sample_annotation(
        dataset_name="paths",
        index=index,
        subject_id=subject,
        modality="CT",
        anatomy=["head"],
        extra={
            "subject_id": subject,
            "source_file": source,
            "original_filename": Path(source).name,
            "map_type": "image_level_label",
        },
        task="classification",
        leaf_task="series_classification",
        annotation_type="multiclass",
        dimension="2D",
        spatial={"common": {"pixel_size_px": [16, 16]}, "three_d": {}, "video": {}},
        tasks={
            "classification": {
                "schema_variant": "multiclass",
                "class_names": dict(CLASSES),
                "label": label,
                "label_name": CLASSES.get(str(label), "normal"),
            },
            "segmentation": {},
            "detection": {},
        },
        timestamp_utc="2026-01-01T00:00:00Z",
        notes=f"Converted from: {source}",
    )


def _dataset(root: Path, labels: tuple[Any, Any]) -> Path:
    """A dataset whose label table keys each series by ``patient/series``, and a candidate with ``labels``."""
    pixels = (np.arange(256, dtype=np.uint8).reshape(16, 16) * 3).astype(np.uint8)
    lines = []
    for i, source in enumerate(SOURCES):
        path = root / source
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(path)
        lines.append(f"{i} /authors/disk/paths/{source}")
    (root / "data" / "series_labels.csv").write_text(TABLE, encoding="utf-8")
    (root / "VLM").mkdir()
    (root / "VLM" / "random.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = root / "VLM" / "cand" / "agent1_data_organization"
    (out / "standardized_annotations").mkdir(parents=True)
    (out / "images").mkdir()
    for i, (source, label) in enumerate(zip(SOURCES, labels, strict=True)):
        Image.fromarray(pixels).save(out / "images" / f"{i}.png")
        doc = _annotation(i, source, label)
        (out / "standardized_annotations" / f"{i}.json").write_text(json.dumps(doc), encoding="utf-8")
    return out


def _label_check(tmp_path: Path, labels: tuple[Any, Any]) -> list[Any]:
    clear_cache()
    out = _dataset(tmp_path, labels)
    report = validate(out, tmp_path, profile="evidence", use_cache=False)
    return [report.samples[i].checks["label_in_class_table"].result for i in range(len(SOURCES))]


def test_a_label_table_keyed_by_a_relative_path_is_evidence(tmp_path: Path) -> None:
    right = _label_check(tmp_path / "right", (0, 1))
    assert [r.score for r in right] == [1.0, 1.0]
    swapped = _label_check(tmp_path / "swapped", (1, 0))
    assert [r.score for r in swapped] == [0.0, 0.0]
    assert "contradicts the raw evidence" in swapped[0].message


def test_a_string_id_that_names_the_wrong_class_is_a_wrong_label_first(tmp_path: Path) -> None:
    results = _label_check(tmp_path, ("0", "0"))
    assert results[0].score == 0.5 and "integer id" in results[0].message  # right class, string id
    assert results[1].score == 0.0 and "contradicts" in results[1].message  # wrong class as well


def _schema_errors(doc: dict[str, Any]) -> list[Any]:
    try:
        Annotation.model_validate(doc)
    except ValidationError as exc:
        return distinct_errors(exc.errors())
    return []


@pytest.mark.parametrize("label", ["1", True, [0, "1"]])
def test_a_class_id_that_is_no_integer_is_one_schema_error(label: Any) -> None:
    good = _annotation(0, SOURCES[0], 1)
    assert _schema_errors(good) == []
    bad = copy.deepcopy(good)
    bad["tasks"]["classification"]["label"] = label
    errors = _schema_errors(bad)
    assert len(errors) == 1 and "label" in errors[0]["loc"], errors


def test_string_box_and_mask_ids_fail_the_schema() -> None:
    doc = _annotation(0, SOURCES[0], 1)
    doc["tasks"] = {
        "classification": {},
        "segmentation": {},
        "detection": {
            "schema_variant": "2d",
            "class_names": {"1": "lesion"},
            "boxes2d": [{"bbox": [1, 1, 4, 4], "category_id": "1", "category_name": "lesion"}],
        },
    }
    assert [e["loc"][-1] for e in _schema_errors(doc)] == ["category_id"]
    doc["tasks"]["detection"]["boxes2d"][0]["category_id"] = 1
    assert _schema_errors(doc) == []
    doc["tasks"] = {
        "classification": {},
        "detection": {},
        "segmentation": {
            "schema_variant": "2d_coco",
            "classes": {"0": "background", "1": "lesion"},
            "coco_2d": {"format": "label_map_png", "mask_path": "masks/0.png", "label_values": ["0", "1"]},
        },
    }
    assert len(_schema_errors(doc)) == 1  # one wrong field, whatever the number of its elements

"""A tiny dataset whose sources end in extensions the official scorer does not strip, its ground truth written
the way the real benchmark writes it (``source_stem`` = the bare file stem, as 8045940's ``P001`` for
``P001.dat``), annotations that name each source exactly as the standard asks, and the official score.

A plain module (not conftest) so the writer tests import it by a unique name.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from benchmark.score.dataset import DatasetScore, score_prediction

NAME = "tiny_stems"
# Index -> source. Five extensions outside the scorer's list (a gzip-compressed DICOM, raw bytes, JPEG 2000,
# ENVI data, NRRD) and one inside it (the control: nothing may change there).
SOURCES = {
    0: "data/scans/P001.dat",
    1: "data/scans/case_2.dcm.gz",
    2: "data/scans/vol_3.raw",
    3: "data/scans/slide_4.jp2",
    4: "data/scans/ct_5.nrrd",
    5: "data/scans/img_6.png",
}
STEMS = {0: "P001", 1: "case_2", 2: "vol_3", 3: "slide_4", 4: "ct_5", 5: "img_6"}
UNSTRIPPED = (0, 1, 2, 3, 4)


def make_dataset(root: Path) -> Path:
    """Write the raw files (a few bytes each, the PNG a real image), the manifest and the ground truth."""
    rng = np.random.default_rng(0)
    for rel in SOURCES.values():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".png"):
            Image.fromarray(rng.integers(0, 255, (8, 8), dtype=np.uint8)).save(path)
        elif rel.endswith(".gz"):
            path.write_bytes(gzip.compress(b"DICM" + bytes(64)))
        else:
            path.write_bytes(rng.integers(0, 255, 64, dtype=np.uint8).tobytes())
    vlm = root / "VLM"
    vlm.mkdir(parents=True, exist_ok=True)
    (vlm / "random.txt").write_text(
        "".join(f"{i} /authors/{NAME}/{rel}\n" for i, rel in SOURCES.items()), encoding="utf-8"
    )
    (vlm / f"ground_truth_{NAME}.json").write_text(json.dumps(ground_truth()), encoding="utf-8")
    return root


def ground_truth() -> dict[str, Any]:
    """A classification GT (schema 1.1) whose ``source_stem`` is the bare file stem of each source."""
    samples = {
        str(i): {
            "source_stem": STEMS[i],
            "class": "lesion",
            "map_type": "image_level_label",
            "expected_record": {"dataset_name": NAME},
            "expected_context_sample": {"modality_primary": "CT"},
            "expected_extra": {"source_file": rel, "original_filename": rel.rsplit("/", 1)[-1]},
            "expected_extra_keys": ["source_file", "original_filename"],
            "expected_tasks": {
                "classification": {"schema_variant": "multiclass", "label": 1, "label_name": "lesion"}
            },
        }
        for i, rel in SOURCES.items()
    }
    return {
        "schema_version": "1.1",
        "dataset_name": NAME,
        "expected_count": len(SOURCES),
        "modality_primary": "CT",
        "task_type": "classification",
        "dimension": "2d",
        "format": {"extra_required_any": ["source_file"], "task_required_fields": {}},
        "content": {"expected_dataset_name": NAME},
        "classes": ["normal", "lesion"],
        "samples": samples,
    }


def annotation(index: int, **extra: Any) -> dict[str, Any]:
    """A correct annotation of sample ``index``: ``source_file`` and ``original_filename`` name its file
    exactly as the standard asks; ``extra`` adds or overrides keys (``source_stem="..."``)."""
    rel = SOURCES[index]
    return {
        "record": {"schema_version": "1.0.1", "dataset_name": NAME, "image_path": f"images/{index}.png"},
        "context": {
            "sample": {
                "subject_id": "NA",
                "age_years": 0,
                "sex": "unknown",
                "race_ethnicity": "NA",
                "site_id": "NA",
                "modality_primary": "CT",
                "anatomical_structure": ["NA"],
                "extra": {
                    "source_file": rel,
                    "original_filename": rel.rsplit("/", 1)[-1],
                    "map_type": "image_level_label",
                    **extra,
                },
            },
            "text": {},
        },
        "media_geometry": {
            "media": {"task_type": "classification", "annotation_type": "multiclass", "dimension": "2D"},
            "spatial": {"common": {"pixel_size_px": [8, 8]}, "three_d": {}, "video": {}},
        },
        "tasks": {
            "classification": {
                "schema_variant": "multiclass",
                "class_names": {"0": "normal", "1": "lesion"},
                "label": 1,
                "label_name": "lesion",
            },
            "segmentation": {},
            "detection": {},
        },
        "provenance": {"notes": "NA"},
    }


DATA_META = {
    "schema_version": "1.0.2",
    "dataset_name": NAME,
    "modality_primary": ["CT"],
    "task_type": ["classification"],
    "data_volume": {"total": len(SOURCES)},
    "valid_image_n": {"total": len(SOURCES)},
    "num_classes_per_task": {"classification": {"num_classes": 2}},
}


def write_images(out: Path) -> None:
    """``images/<i>.png`` for every sample (the scorer's pair check needs them; the source gate does not)."""
    (out / "images").mkdir(parents=True, exist_ok=True)
    for index in SOURCES:
        Image.fromarray(np.full((8, 8), 40 * index, np.uint8)).save(out / "images" / f"{index}.png")


def write_folder(out: Path, annotations: dict[int, dict[str, Any]]) -> Path:
    """An output folder holding ``annotations``, the images and data_meta.json."""
    (out / "standardized_annotations").mkdir(parents=True, exist_ok=True)
    for index, doc in annotations.items():
        (out / "standardized_annotations" / f"{index}.json").write_text(json.dumps(doc), encoding="utf-8")
    (out / "data_meta.json").write_text(json.dumps(DATA_META), encoding="utf-8")
    write_images(out)
    return out


def official(out: Path) -> DatasetScore:
    """The official-profile score of an output folder against `ground_truth`."""
    return score_prediction(out, ground_truth(), profile="official")


def source_scores(score: DatasetScore) -> dict[int, float]:
    """Per GT index, the source gate s_i."""
    return {int(s.index): float(s.source_score) for s in score.per_sample}

"""Builders for small, self-contained scorer inputs (a GT, a prediction folder, images, masks).

A plain module (not conftest) so test files can import the builders by a unique name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

GT_TEMPLATE: dict[str, Any] = {
    "schema_version": "1.1",
    "dataset_name": "Tiny",
    "expected_count": 2,
    "modality_primary": "CT",
    "task_type": "segmentation",
    "dimension": "2d",
    "format": {
        "sample_required_fields": ["modality_primary"],
        "sample_non_missing_fields": ["sex", "race_ethnicity", "site_id"],
        "extra_required_any": ["source_file", "original_filename", "subject_id"],
        "extra_non_missing_fields": ["source_file", "original_filename", "subject_id"],
        "task_required_fields": {"segmentation": ["schema_variant"]},
    },
    "content": {
        "expected_dataset_name": "Tiny",
        "expected_extra_keys_mode": "all",
        "expected_extra_key_groups": {"source": ["source_file", "original_filename"], "id": ["subject_id"]},
        "strict_required_extra_keys": ["source_file", "original_filename"],
        "strict_dataset_name_match": True,
        "global_expected_blocks": {
            "record": {"schema_version": "1.0.1", "dataset_name": "Tiny"},
            "media": {"task_type": "segmentation", "dimension": "2D"},
            "tasks": {"segmentation": {"schema_variant": "2d_coco"}},
        },
    },
    "classes": ["background", "lesion"],
}


def gt_sample(i: int) -> dict[str, Any]:
    """GT sample ``i``: source ``case_<i>``, file ``data/case_<i>.png``."""
    return {
        "source_stem": f"case_{i}",
        "class": "lesion",
        "map_type": "pixel_mask",
        "expected_record": {"dataset_name": "Tiny"},
        "expected_context_sample": {"modality_primary": "CT"},
        "expected_extra": {
            "subject_id": f"case_{i}",
            "source_file": f"data/case_{i}.png",
            "original_filename": f"case_{i}.png",
        },
        "expected_extra_keys": ["source_file", "original_filename"],
        "expected_tasks": {"segmentation": {"schema_variant": "2d_coco"}},
    }


def annotation(i: int) -> dict[str, Any]:
    """A perfect annotation for GT sample ``i``."""
    return {
        "record": {"schema_version": "1.0.1", "dataset_name": "Tiny", "image_path": f"images/{i}.png"},
        "context": {
            "sample": {
                "subject_id": f"case_{i}",
                "age_years": 0,
                "sex": "unknown",
                "race_ethnicity": "NA",
                "site_id": "NA",
                "modality_primary": "CT",
                "extra": {
                    "subject_id": f"case_{i}",
                    "source_file": f"data/case_{i}.png",
                    "original_filename": f"case_{i}.png",
                    "map_type": "pixel_mask",
                },
            }
        },
        "media_geometry": {
            "media": {
                "task_type": "segmentation",
                "annotation_type": "2d_coco",
                "dimension": "2D",
                "confidence_global": 1.0,
            },
            "spatial": {"common": {"pixel_size_px": [8, 8]}, "three_d": {}, "video": {}},
        },
        "tasks": {
            "classification": {},
            "segmentation": {
                "schema_variant": "2d_coco",
                "classes": {"0": "background", "1": "lesion"},
                "coco_2d": {"format": "label_map_png", "mask_path": f"masks/{i}.png"},
            },
            "detection": {},
        },
    }


META = {
    "schema_version": "1.0.2",
    "dataset_name": "Tiny",
    "modality_primary": ["CT"],
    "anatomical_structure": ["Liver"],
    "domain": "medical",
    "data_volume": {"total": 2},
    "valid_image_n": {"total": 2},
    "task_type": ["segmentation"],
    "num_classes_per_task": {"segmentation": {"num_classes": 2}},
}


def write_png(path: Path, array: np.ndarray) -> None:
    """Write a uint8 array as PNG (creating folders)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array.astype(np.uint8)).save(path)


def square_mask(offset: int = 2) -> np.ndarray:
    """An 8×8 label map with a 4×4 square of class 1 at ``offset``."""
    m = np.zeros((8, 8), np.uint8)
    m[offset : offset + 4, offset : offset + 4] = 1
    return m


Builder = Callable[..., Path]

"""Ground truth of a bundled dataset in the benchmark's format (SPEC §1), plus our geometry extension.

The blocks copy the key structure of the published ground truths (``format``, ``content``,
``data_meta_expected``) so the reference scorer can score the suite; ``geometry`` (docs/contracts.md) is an
extra per-sample key it ignores.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from testbed.synth.spec import DatasetSpec, SynthSample
from testbed.synth.stems import check_generic

MAP_TYPE = {"classification": "image_level_label", "segmentation": "pixel_mask", "detection": "bbox"}
_ID_GROUP = {
    "classification": ["subject_id", "label_text", "class_name"],
    "segmentation": ["subject_id", "label_file", "mask_file", "seg_file"],
    "detection": ["subject_id", "label_text", "class_name", "bbox_file"],
}
_SOURCE_GROUP = ["source_file", "original_filename", "original_path", "source_rel_path", "source_relpath"]


def schema_variant(spec: DatasetSpec) -> str:
    """The task branch's ``schema_variant`` a correct answer uses."""
    if spec.task == "classification":
        return "multiclass"
    if spec.task == "detection":
        return "2d"
    return {"2D": "2d_coco", "3D": "3d_mask", "video": "video_coco"}[spec.dimension]


def class_table(spec: DatasetSpec) -> dict[str, str]:
    """The id -> name table of a correct answer: ids index ``classes``; detection ids start at 1 (COCO)."""
    offset = 1 if spec.task == "detection" else 0
    return {str(i + offset): name for i, name in enumerate(spec.classes)}


def classification_block(spec: DatasetSpec, sample: SynthSample) -> dict[str, Any]:
    """The classification task branch of a correct answer for one sample."""
    assert sample.label is not None
    return {
        "schema_variant": schema_variant(spec),
        "class_names": class_table(spec),
        "label": sample.label,
        "label_name": spec.classes[sample.label],
    }


def sample_class(spec: DatasetSpec, sample: SynthSample) -> str:
    """GT ``class``: the label name (classification) or the non-background class names joined by ``|``.

    The reference compares the joined non-background values of the predicted class table to this string
    (SPEC §3.3).
    """
    if spec.task == "classification":
        assert sample.label is not None
        return spec.classes[sample.label]
    return "|".join(c for c in spec.classes if c != "background")


def expected_extra(spec: DatasetSpec, sample: SynthSample) -> dict[str, Any]:
    """The ``expected_extra`` block: source trace, subject id, and label/mask/box files."""
    extra: dict[str, Any] = {
        "subject_id": sample.subject_id,
        "source_file": sample.manifest_path,
        "original_filename": PurePosixPath(sample.manifest_path).name,
    }
    if spec.task == "classification":
        name = sample_class(spec, sample)
        extra.update({"label_text": name, "class_name": name})
    extra.update(sample.extra)
    return extra


def source_stem(sample: SynthSample) -> str:
    """GT ``source_stem``: the normalised file name, or the normalised id when the file name is shared."""
    return check_generic(sample.source_stem or sample.manifest_path)


def geometry(index: int, spec: DatasetSpec, sample: SynthSample) -> dict[str, Any]:
    """Our geometry key: image size, slice/frame, the GT label-map path and the
    COCO boxes (docs/contracts.md)."""
    return {
        "image_size": list(sample.image_size),
        "axis": 0 if sample.slice_index is not None else None,
        "slice_index": sample.slice_index,
        "frame_index": sample.frame_index,
        "mask_file": f"VLM/gt_geometry/{index}.png" if sample.mask is not None else None,
        "boxes": [list(b) for b in sample.boxes],
        "box_category_ids": [int(c) + 1 for c in sample.box_labels],
    }


def sample_truth(index: int, spec: DatasetSpec, sample: SynthSample) -> dict[str, Any]:
    """One entry of ``samples``."""
    classification = spec.task == "classification"
    tasks = classification_block(spec, sample) if classification else {"schema_variant": schema_variant(spec)}
    extra = expected_extra(spec, sample)
    return {
        "source_stem": source_stem(sample),
        "class": sample_class(spec, sample),
        "map_type": MAP_TYPE[spec.task],
        "expected_record": {"dataset_name": spec.name},
        "expected_context_sample": {"modality_primary": sample.modality or spec.modality},
        "expected_extra": extra,
        "expected_extra_keys": ["source_file", "original_filename"],
        "expected_tasks": {spec.task: tasks},
        "geometry": geometry(index, spec, sample),
    }


def ground_truth(spec: DatasetSpec, samples: list[SynthSample]) -> dict[str, Any]:
    """The whole ground-truth document of one dataset.

    Args:
        spec: Catalogue entry.
        samples: Samples in manifest order.

    Returns:
        A JSON-able dict with the published top-level key order.
    """
    n = len(samples)
    dim = {"2D": "2d", "3D": "3d", "video": "video"}[spec.dimension]
    instance_metrics = [
        "source_selection_accuracy",
        "coverage",
        "schema_validity",
        "semantic",
        "information_quality",
        "content_fidelity",
    ]
    return {
        "schema_version": "1.1",
        "dataset_name": spec.name,
        "description": f"Synthetic {spec.fmt} {spec.task} dataset ({spec.modality}); layout: {spec.layout}.",
        "expected_count": n,
        "modality_primary": spec.modality,
        "metrics": [*instance_metrics, "dataset_metadata_quality"],
        "evaluation_protocol": {
            "instance_level_metrics": instance_metrics,
            "dataset_level_metrics": ["dataset_metadata_quality"],
        },
        "match_annotations_to_gt": "by_index",
        "task_type": spec.task,
        "dimension": dim,
        "format": {
            "description": "Blocks and key fields every annotation JSON must hold.",
            "strict_mode": True,
            "top_level_blocks": ["record", "context", "media_geometry", "tasks"],
            "record_required": ["schema_version", "dataset_name", "image_path"],
            "context_sample_required": ["extra"],
            "sample_required_fields": ["modality_primary"],
            "sample_non_missing_fields": ["sex", "race_ethnicity", "site_id"],
            "extra_required_any": ["source_file", "original_filename", "subject_id"],
            "extra_non_missing_fields": ["source_file", "original_filename", "subject_id"],
            "media_required": ["task_type", "dimension"],
            "task_required_fields": {
                spec.task: ["schema_variant", "label"]
                if spec.task == "classification"
                else ["schema_variant"]
            },
        },
        "content": {
            "description": "Information quality and content fidelity expectations.",
            "expected_dataset_name": spec.name,
            "expected_extra_keys_mode": "all",
            "expected_extra_key_groups": {"source": _SOURCE_GROUP, "id_or_label": _ID_GROUP[spec.task]},
            "strict_required_extra_keys": ["source_file", "original_filename"],
            "strict_dataset_name_match": True,
            "strict_source_require_subject_or_label": False,
            "strict_group_all_keys": True,
            "hard_content_constraints": {
                "leaf_task_expected": spec.leaf_task,
                "confidence_global_min": 0.0,
                "pixel_spacing_mm_positive": True,
            },
            "global_expected_blocks": {
                "record": {"schema_version": "1.0.1", "dataset_name": spec.name},
                "context_sample": {"modality_primary": spec.modality},
                "media": {"task_type": spec.task, "dimension": spec.dimension},
                "tasks": {spec.task: {"schema_variant": schema_variant(spec)}},
            },
        },
        "data_meta_expected": {
            "description": "Dataset metadata quality expectations.",
            "required_keys": ["dataset_name", "modality_primary", "data_volume", "task_type"],
            "optional_but_recommended": ["num_classes_per_task", "anatomical_structure", "domain"],
            "data_volume_required_fields": ["total"],
            "strict_equals": {
                "task_type.0": spec.task,
                "modality_primary.0": spec.modality,
                "data_volume.total": n,
            },
        },
        "classes": list(spec.classes),
        "samples": {str(i): sample_truth(i, spec, s) for i, s in enumerate(samples)},
    }


def write_ground_truth(root: Path, spec: DatasetSpec, samples: list[SynthSample]) -> Path:
    """Write ``VLM/ground_truth_<name>.json`` and the geometry label maps ``VLM/gt_geometry/<i>.png``.

    Args:
        root: Dataset folder.
        spec: Catalogue entry.
        samples: Samples in manifest order.

    Returns:
        The ground-truth path.
    """
    from testbed.synth.write_files import write_pillow, write_text

    for i, s in enumerate(samples):
        if s.mask is not None:
            if (s.mask.shape[1], s.mask.shape[0]) != tuple(s.image_size):
                raise ValueError(
                    f"{spec.name} sample {i}: mask shape {s.mask.shape} != image size {s.image_size}"
                )
            write_pillow(root / "VLM" / "gt_geometry" / f"{i}.png", np.asarray(s.mask, dtype=np.uint8))
    path = root / "VLM" / f"ground_truth_{spec.name}.json"
    # The published files are json.dump(indent=2, ensure_ascii=False) without a trailing newline (SPEC §1).
    write_text(path, json.dumps(ground_truth(spec, samples), indent=2, ensure_ascii=False))
    return path

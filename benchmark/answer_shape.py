"""The JSON shape of one standardized answer: the per-image annotation and the dataset meta (SPEC §2.2).

Both the synthetic oracle (`testbed.synth.oracle`) and the rules baseline (`agents.rules.writer`) fill the
same skeleton; keeping it here means a schema field is added or reordered in one place, in SPEC key order.
Fields no producer knows (age, site, text, licence, ...) carry the schema's ``NA`` placeholders, and
``extra.source_stem`` is recorded where the official scorer needs it (`benchmark.source_stem`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmark.source_stem import add_source_stem

__all__ = ["ANNOTATION_SCHEMA_VERSION", "META_SCHEMA_VERSION", "dataset_meta", "sample_annotation"]

ANNOTATION_SCHEMA_VERSION = "1.0.1"
META_SCHEMA_VERSION = "1.0.2"


def sample_annotation(
    *,
    dataset_name: str,
    index: int,
    subject_id: str,
    modality: str,
    anatomy: Sequence[str],
    extra: Mapping[str, Any],
    task: str,
    leaf_task: str,
    annotation_type: str,
    dimension: str,
    spatial: Mapping[str, Any],
    tasks: Mapping[str, Any],
    timestamp_utc: str,
    notes: str,
) -> dict[str, Any]:
    """Build the per-image annotation JSON of one sample (image at ``images/<index>.png``).

    Args:
        dataset_name: The dataset's name.
        index: The sample's index (names the image file).
        subject_id: ``context.sample.subject_id``.
        modality: ``context.sample.modality_primary``.
        anatomy: ``context.sample.anatomical_structure`` entries.
        extra: ``context.sample.extra`` (source trace keys and the like).
        task: ``media.task_type``.
        leaf_task: ``media.leaf_task``.
        annotation_type: ``media.annotation_type`` (the task branch's schema variant).
        dimension: ``media.dimension``.
        spatial: ``media_geometry.spatial``.
        tasks: The ``tasks`` block (all three branches).
        timestamp_utc: ``provenance.timestamp_utc``.
        notes: ``provenance.notes``.

    Returns:
        The annotation as a JSON-able dict in SPEC §2.2 key order; ``extra`` is a copy, with the
        ``source_stem`` a source outside the official scorer's extension list needs (docs/scoring.md).
    """
    trace = dict(extra)
    add_source_stem(trace)
    return {
        "record": {
            "schema_version": ANNOTATION_SCHEMA_VERSION,
            "dataset_name": dataset_name,
            "image_path": f"images/{index}.png",
        },
        "context": {
            "sample": {
                "subject_id": subject_id,
                "age_years": 0,
                "sex": "unknown",
                "race_ethnicity": "NA",
                "site_id": "NA",
                "modality_primary": modality,
                "modality_secondary": "NA",
                "anatomical_structure": list(anatomy),
                "modality_special_sample": "NA",
                "extra": trace,
            },
            "text": {
                "text_id": "NA",
                "text_path": "NA",
                "text_type": "NA",
                "language": "NA",
                "length_chars": 0,
            },
        },
        "media_geometry": {
            "media": {
                "task_type": task,
                "leaf_task": leaf_task,
                "annotation_type": annotation_type,
                "dimension": dimension,
                "confidence_global": 1.0,
            },
            "spatial": spatial,
        },
        "tasks": tasks,
        "provenance": {"timestamp_utc": timestamp_utc, "notes": notes},
    }


def dataset_meta(
    *,
    dataset_name: str,
    description: str,
    modality_primary: Sequence[str],
    modality_secondary: Sequence[str],
    anatomy: Sequence[str],
    n: int,
    task: str,
    num_classes_per_task: Mapping[str, Any],
) -> dict[str, Any]:
    """Build the dataset JSON (``data_meta.json``) of a run whose n samples are all labelled test samples.

    Args:
        dataset_name: The dataset's name.
        description: ``dataset_description``.
        modality_primary: ``modality_primary`` entries.
        modality_secondary: ``modality_secondary`` entries.
        anatomy: ``anatomical_structure`` entries.
        n: Number of samples written (``data_volume`` and ``valid_image_n`` totals).
        task: The dataset's task type.
        num_classes_per_task: ``num_classes_per_task`` (keyed by task).

    Returns:
        The dataset JSON in SPEC key order.
    """
    return {
        "schema_version": META_SCHEMA_VERSION,
        "dataset_name": dataset_name,
        "release_date": "NA",
        "homepage_url": "NA",
        "organization": ["NA"],
        "challenge_series": "NA",
        "license": "NA",
        "dataset_description": description,
        "modality_primary": list(modality_primary),
        "modality_secondary": list(modality_secondary),
        "anatomical_structure": list(anatomy),
        "disease": ["NA"],
        "domain": "medical",
        "data_volume": {"total": n, "train": 0, "val": 0, "test": n, "label": n},
        "valid_image_n": {"total": n},
        "label_presence": "labeled",
        "task_type": [task],
        "num_classes_per_task": num_classes_per_task,
    }

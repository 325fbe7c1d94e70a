"""The field lists the strategies act on, in one place: what S2 may edit, what S4 votes, what the consensus
and majority selectors compare.
"""

from __future__ import annotations

from benchmark.fields import (
    ANNOTATION_TYPE,
    DIMENSION,
    IMAGE_PATH,
    MODALITY_PRIMARY,
    SOURCE_FILE,
    SUBJECT_ID,
    TASK_TYPE,
)

__all__ = ["AGREEMENT_FIELDS", "HIGH_RISK_FIELDS", "MAJORITY_FIELDS", "VOTED_FIELDS"]

HIGH_RISK_FIELDS: tuple[str, ...] = (
    TASK_TYPE,
    DIMENSION,
    ANNOTATION_TYPE,
    "media_geometry.spatial",
    "tasks",
    IMAGE_PATH,
    "context.sample.extra",
    SUBJECT_ID,
    MODALITY_PRIMARY,
    "data_meta.task_type",
    "data_meta.data_volume",
    "data_meta.valid_image_n",
    "data_meta.num_classes_per_task",
)
"""Task type and dimension, active branches, labels and class ids, image paths, source fields, annotation
type, metadata counts (paper Appendix E, S2), plus every other field a high-risk check of our validator can
flag (subject id, modality). The image file is not listed: it becomes editable with a flagged plane
(`strategies._whitelist`), so a sample's image, mask and JSON move together."""

VOTED_FIELDS: tuple[str, ...] = (
    TASK_TYPE,
    DIMENSION,
    ANNOTATION_TYPE,
    MODALITY_PRIMARY,
    SOURCE_FILE,
    "context.sample.extra.original_filename",
)
"""The high-risk fields S4 votes (task type and dimension decide the branch donor)."""

AGREEMENT_FIELDS: tuple[str, ...] = (
    "record.dataset_name",
    SUBJECT_ID,
    MODALITY_PRIMARY,
    "context.sample.age_years",
    "context.sample.sex",
    SOURCE_FILE,
    TASK_TYPE,
    DIMENSION,
    "media_geometry.spatial",
    "tasks",
)
"""The high-risk fields compared across candidates (whole subtrees for the task and spatial branches)."""

MAJORITY_FIELDS: tuple[str, ...] = (
    TASK_TYPE,
    DIMENSION,
    SOURCE_FILE,
    "tasks.classification.label",
)
"""The signature the ``majority`` selector counts: one value per field, lower-cased."""

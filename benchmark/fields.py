"""Field paths of the per-image JSON (SPEC §2) and keys of the ground-truth file that several modules name:
spelled once, here.

The task type decides the active task branch and the dimension the active spatial branch; both are read by the
validator's checks, the strategies' votes and the perturbations.
"""

from __future__ import annotations

__all__ = [
    "ANNOTATION_TYPE",
    "DIMENSION",
    "GT_SAMPLE_KEYS",
    "IMAGE_PATH",
    "MODALITY_PRIMARY",
    "SOURCE_FILE",
    "SOURCE_STEM",
    "SUBJECT_ID",
    "TASK_TYPE",
]

TASK_TYPE = "media_geometry.media.task_type"
DIMENSION = "media_geometry.media.dimension"
ANNOTATION_TYPE = "media_geometry.media.annotation_type"
SOURCE_FILE = "context.sample.extra.source_file"
SOURCE_STEM = "context.sample.extra.source_stem"
IMAGE_PATH = "record.image_path"
MODALITY_PRIMARY = "context.sample.modality_primary"
SUBJECT_ID = "context.sample.subject_id"

# The two spellings of a ground-truth file's per-sample map (SPEC §1); the first present wins. Named by the
# raw reader (`benchmark.groundtruth`) and the typed models (`benchmark._gt_models`) alike.
GT_SAMPLE_KEYS = ("samples", "source_to_truth")

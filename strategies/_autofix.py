"""The reference S2's deterministic fixes (SPEC §4, S2 items 1-3), optional in our S2 (``auto_fix=true``).

Only mechanical repairs that need no judgement: inactive spatial and task branches emptied, ``label_name``
taken from the class table, ``data_meta`` counts and task types recomputed from the written outputs, and the
``extra.source_stem`` the official scorer needs for a source outside its extension list (docs/scoring.md). The
reference's ``annotation_type := schema_variant`` is left out on purpose: it contradicts the ground truth
(SPEC §6, bug 8).
"""

from __future__ import annotations

from pathlib import Path

from benchmark.fields import DIMENSION, TASK_TYPE
from benchmark.layout import ANNOTATIONS_DIR
from benchmark.source_stem import add_source_stem_to_annotation
from core.atomic import atomic_write_json
from strategies.mechanics import find_image, get_path, read_annotation, read_meta
from strategies.paper.reference import patch_meta
from validator.sample import image_facts

__all__ = ["auto_fix"]

_TASKS = ("classification", "segmentation", "detection")
_SPATIAL = {"2d": "common", "3d": "three_d", "video": "video"}


def _fix_annotation(ann: dict[str, object], log: list[str], index: int) -> None:
    task = str(get_path(ann, TASK_TYPE) or "").strip().lower()
    dim = str(get_path(ann, DIMENSION) or "").strip().lower()
    tasks = ann.get("tasks")
    if task in _TASKS and isinstance(tasks, dict):
        for other in _TASKS:
            if other != task and tasks.get(other):
                tasks[other] = {}
                log.append(f"sample {index}: emptied inactive tasks.{other}")
    spatial = get_path(ann, "media_geometry.spatial")
    if dim in _SPATIAL and isinstance(spatial, dict):
        for d, branch in _SPATIAL.items():
            if d != dim and spatial.get(branch):
                spatial[branch] = {}
                log.append(f"sample {index}: emptied inactive media_geometry.spatial.{branch}")
    cls = get_path(ann, "tasks.classification")
    if isinstance(cls, dict) and cls.get("label") is not None:
        table = cls.get("class_names") or cls.get("classes")
        name = table.get(str(cls["label"])) if isinstance(table, dict) else None
        if isinstance(name, str) and cls.get("label_name") != name:
            cls["label_name"] = name
            log.append(f"sample {index}: label_name set from the class table")
    recorded = add_source_stem_to_annotation(ann)
    if recorded is not None:
        log.append(f"sample {index}: {recorded.note()}")


def auto_fix(root: Path, indices: list[int]) -> list[str]:
    """Apply the deterministic fixes in place to an ``agent1_data_organization`` folder.

    Args:
        root: The folder.
        indices: The manifest indices.

    Returns:
        One line per change.
    """
    log: list[str] = []
    annotations: dict[int, dict[str, object] | None] = {}
    images_valid: dict[int, bool] = {}
    for index in indices:
        ann = read_annotation(root, index)
        if ann is None:
            continue
        before = repr(ann)
        _fix_annotation(ann, log, index)
        if repr(ann) != before:
            atomic_write_json(root / ANNOTATIONS_DIR / f"{index}.json", ann)
        annotations[index] = ann
        facts = image_facts(find_image(root, index, ann))
        images_valid[index] = bool(facts and facts.valid)
    meta = read_meta(root)
    if meta is not None:
        patched = patch_meta(meta, annotations, images_valid)
        if patched != meta:
            atomic_write_json(root / "data_meta.json", patched)
            log.append("data_meta.json: counts and task types recomputed from the outputs")
    return log

"""Which decision points a revision re-decides, and how only the named fields are rewritten.

A field path (``tasks.classification.label``, ``context.sample.extra.source_file``, ``data_meta.task_type``)
maps to the decision points that produce it. `revise` re-decides those points at temperature 0, replays every
other decision from the candidate's trace, and copies only the named fields into the written JSON.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agents.base import Feedback
from benchmark.fields import IMAGE_PATH, MODALITY_PRIMARY, SOURCE_FILE, SOURCE_STEM, SUBJECT_ID

__all__ = [
    "FIELD_POINTS",
    "decision_events",
    "fields_to_rewrite",
    "merge_fields",
    "points_for_fields",
    "self_check_points",
]

# field path prefix → decision points that decide it.
FIELD_POINTS: dict[str, tuple[str, ...]] = {
    IMAGE_PATH: ("read_target", "label_source_image", "image_key", "slice", "frame"),
    "image": ("read_target", "label_source_image", "image_key", "slice", "frame"),
    SUBJECT_ID: ("subject_id",),
    "context.sample.extra.subject_id": ("subject_id",),
    SOURCE_FILE: ("read_target", "label_source_image"),
    "context.sample.extra.original_filename": ("read_target", "label_source_image"),
    "context.sample.extra.label_text": ("label_source", "label_column", "class_order"),
    "context.sample.extra.class_name": ("label_source", "label_column", "class_order"),
    "context.sample.extra.mask_file": ("mask_file", "mask_key"),
    "context.sample.extra.label_file": ("mask_file", "mask_key"),
    "context.sample.extra.bbox_file": ("box_convention",),
    MODALITY_PRIMARY: ("modality",),
    "media_geometry.media": ("task_type",),
    "media_geometry.spatial": ("slice", "frame", "image_key"),
    "tasks.classification": ("task_type", "label_source", "label_column", "class_order"),
    "tasks.segmentation": ("task_type", "mask_file", "mask_key", "slice", "frame"),
    "tasks.detection": ("task_type", "box_convention"),
    "tasks": ("task_type",),
    "record.dataset_name": ("dataset_name",),
    "data_meta.dataset_name": ("dataset_name",),
    "data_meta.modality_primary": ("modality",),
    "data_meta.task_type": ("task_type",),
    "data_meta.num_classes_per_task": ("task_type", "label_source", "class_order"),
}


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def fields_to_rewrite(
    feedback: Feedback | str, editable: Sequence[str], indices: Iterable[int]
) -> dict[int | None, list[str]]:
    """The fields to rewrite per sample (``None`` = ``data_meta.json``).

    Args:
        feedback: Per-field items, or free text (then every editable field of every sample).
        editable: The whitelist; empty means "whatever the feedback names".
        indices: The task's sample indices.

    Returns:
        ``{sample index or None: [field paths]}``; data_meta paths keep their ``data_meta.`` prefix.
    """
    items = feedback.items if isinstance(feedback, Feedback) else ()
    out: dict[int | None, list[str]] = {}
    if not items:
        for path in editable:
            keys: list[int | None] = [None] if path.startswith("data_meta") else list(indices)
            for key in keys:
                out.setdefault(key, []).append(path)
        return out
    for index, path, _message in items:
        key = None if (index is None or path.startswith("data_meta")) else index
        name = path if key is not None or path.startswith("data_meta") else f"data_meta.{path}"
        if editable and not any(_related(name, e) for e in editable):
            continue
        allowed = [e for e in editable if _related(name, e)] if editable else [name]
        # Rewrite the narrower of the named field and the whitelisted one.
        for e in allowed:
            narrow = name if name.startswith(e) else e
            if narrow not in out.setdefault(key, []):
                out[key].append(narrow)
    return out


def points_for_fields(fields: dict[int | None, list[str]]) -> frozenset[str]:
    """Decision points to re-decide (``"point@sample"`` for sample fields,
    ``"point"`` for dataset-level ones)."""
    points: set[str] = set()
    for index, paths in fields.items():
        for path in paths:
            for prefix, names in FIELD_POINTS.items():
                if _related(path, prefix):
                    for name in names:
                        points.add(name if index is None or name in _DATASET_POINTS else f"{name}@{index}")
    return frozenset(points)


# Decided once per dataset (sample=None in the trace).
_DATASET_POINTS = frozenset({"task_type", "label_source", "label_column", "class_order"})


def _get(doc: Any, parts: list[str]) -> tuple[bool, Any]:
    for part in parts:
        if not isinstance(doc, dict) or part not in doc:
            return False, None
        doc = doc[part]
    return True, doc


# A field rewritten together with another: the source stem the writer records follows the source it names.
_FOLLOWERS = {SOURCE_FILE: SOURCE_STEM, "context.sample.extra.original_filename": SOURCE_STEM}


def merge_fields(old: dict[str, Any], new: dict[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """Copy ``fields`` (dotted paths) from ``new`` into a copy of ``old``.

    A rewritten source (``extra.source_file`` / ``original_filename``) brings ``extra.source_stem`` with it,
    so the stem recorded for the official scorer never names the old file.

    Args:
        old: The written JSON.
        new: The re-decided JSON.
        fields: Dotted paths; a path absent from ``new`` is removed from the result.

    Returns:
        The merged JSON (``old`` is not modified).
    """
    merged = copy.deepcopy(old)
    paths = list(fields)
    paths += sorted({_FOLLOWERS[p] for p in paths if p in _FOLLOWERS} - set(paths))
    for path in paths:
        parts = [p for p in path.split(".") if p]
        if not parts or parts[0] == "image":
            continue
        found, value = _get(new, parts)
        parent_found, parent = _get(merged, parts[:-1])
        if not parent_found or not isinstance(parent, dict):
            if not found:
                continue
            cursor = merged
            for part in parts[:-1]:
                cursor = cursor.setdefault(part, {})
            parent = cursor
        if found:
            parent[parts[-1]] = copy.deepcopy(value)
        else:
            parent.pop(parts[-1], None)
    return merged


_MASK_POINTS = ("mask_file", "mask_key", "slice", "frame")
_LABEL_POINTS = ("label_source", "label_column", "class_order")


def _png_size(path: Path) -> tuple[int, int] | None:
    from PIL import Image

    try:
        with Image.open(path) as img:
            return (int(img.size[0]), int(img.size[1]))
    except (OSError, ValueError):
        return None


def decision_events(trace: Path | None) -> Iterator[dict[str, Any]]:
    """The ``decision`` lines of a candidate's trace, in order (none without a trace)."""
    if trace is None or not Path(trace).is_file():
        return
    for line in Path(trace).read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "decision":
            yield event


def self_check_points(trace: Path | None, output_dir: Path, indices: Iterable[int]) -> frozenset[str]:
    """What the rules agent re-decides for a generic self-check (S1): its own review of its candidate.

    Two findings count, both from the agent's own evidence and never from a validator: a decision it sampled
    below its own top-ranked hypothesis (temperature > 0), and an output that fails its consistency checks (a
    mask whose size differs from the image's; a classification label missing from its class table). A
    candidate made at temperature 0 that passes the checks has nothing to revise.

    Args:
        trace: The candidate's trace (its ``decision`` lines carry each choice's rank).
        output_dir: The candidate folder.
        indices: The manifest indices.

    Returns:
        Decision points, ``"point@sample"`` for sample decisions and ``"point"`` for dataset ones.
    """
    points: set[str] = set()
    for event in decision_events(trace):
        if int(event.get("rank") or 0) > 0:
            sample, point = event.get("sample"), str(event.get("point"))
            points.add(point if sample is None else f"{point}@{sample}")
    for index in indices:
        try:
            annotation = json.loads((output_dir / "standardized_annotations" / f"{index}.json").read_text())
        except (OSError, ValueError):
            continue
        mask = output_dir / "masks" / f"{index}.png"
        if mask.is_file() and _png_size(mask) != _png_size(output_dir / "images" / f"{index}.png"):
            points.update(f"{p}@{index}" for p in _MASK_POINTS)
        task = (annotation.get("tasks") or {}).get("classification") if isinstance(annotation, dict) else None
        if isinstance(task, dict) and task:
            names = task.get("class_names") or {}
            if str(task.get("label")) not in {str(k) for k in names}:
                points.update(_LABEL_POINTS)
    return frozenset(points)

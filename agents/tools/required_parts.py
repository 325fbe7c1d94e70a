"""What a written sample must hold besides its annotation file: the image, the mask, the boxes.

A sample counts as written only when its annotation exists *and* the parts its task requires do
(``docs/schema.md``): the standardized image ``images/<i>.png``; for segmentation a mask payload (the
label map ``masks/<i>.png`` it names, present on disk, or COCO polygons/RLE); for detection a box list.
An annotation written after its mask failed to render is otherwise indistinguishable, by file count, from a
finished sample, and a candidate built of such samples would look ``ok``. Every mode (tools, guided, script)
counts its samples through `missing_part`, so one rule decides in all of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from core.atomic import read_json_or_none

__all__ = ["NO_ANNOTATION", "missing_part"]

NO_ANNOTATION = "no annotation"
"""`missing_part` of a sample with no annotation file at all."""

# The keys a segmentation payload names its label map under (the validator's `validator._payload` reads
# the same ones; repeated here because agents see the validator's schema only).
_MASK_KEYS = ("mask_path", "label_path", "mask_file", "label_file", "seg_file", "path", "file")
_BOX_KEYS = ("boxes2d", "boxes3d", "frame_boxes2d", "boxes", "annotations")


def _nodes(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every mapping inside ``value`` (itself included), depth first."""
    if isinstance(value, Mapping):
        yield value
        for child in value.values():
            yield from _nodes(child)
    elif isinstance(value, list):
        for child in value:
            yield from _nodes(child)


def _segmentation_gap(output_dir: Path, index: int, branch: Mapping[str, Any]) -> str | None:
    paths: list[str] = []
    polygons = False
    for node in _nodes(branch):
        paths += [v for k in _MASK_KEYS if isinstance(v := node.get(k), str) and v.strip()]
        polygons = polygons or "segmentation" in node or "counts" in node
    # An output-relative label map must be on disk: a mask step that failed leaves the name without the file.
    local = [p for p in paths if p.replace("\\", "/").lstrip("./").startswith("masks/")]
    absent = [p for p in local if not (output_dir / p.lstrip("./")).is_file()]
    if absent:
        return f"the segmentation mask {absent[0]} is not written"
    if not paths and not polygons:
        return f"the segmentation names no mask (masks/{index}.png is not written)"
    return None


def _detection_gap(branch: Mapping[str, Any]) -> str | None:
    # An empty list is a valid answer (an image with no object); a branch with no list at all is not.
    if any(isinstance(branch.get(k), list) for k in _BOX_KEYS):
        return None
    return "the detection names no boxes"


def missing_part(output_dir: Path, index: int) -> str | None:
    """Why sample ``index`` is not complete: None when its annotation and every part its task requires are
    written; else one line naming what is missing (`NO_ANNOTATION` when there is no annotation file at all).
    """
    path = output_dir / "standardized_annotations" / f"{index}.json"
    if not path.is_file():
        return NO_ANNOTATION
    if not (output_dir / "images" / f"{index}.png").is_file():
        return f"the image images/{index}.png is not written"
    # Unreadable JSON is the schema's finding (the validator scores it), not a missing part.
    document = read_json_or_none(path)
    tasks = document.get("tasks") if isinstance(document, Mapping) else None
    if not isinstance(tasks, Mapping):
        return None
    segmentation, detection = tasks.get("segmentation"), tasks.get("detection")
    if isinstance(segmentation, Mapping) and segmentation:
        return _segmentation_gap(output_dir, index, segmentation)
    if isinstance(detection, Mapping) and detection:
        return _detection_gap(detection)
    return None

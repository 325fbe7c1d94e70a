"""The representations a task payload may take in the benchmark format, decoded for the checks.

SPEC leaves the payload formats open ("The payload formats are not specified anywhere"), so a segmentation may
be a label-map PNG in the output (``mask_path: masks/<i>.png``), COCO annotations with polygons or
RLE (compressed ``counts`` string or uncompressed ``counts`` list) in ``coco_2d``/``video_coco``, or a pointer
into the raw data (``mask_3d.mask_path``, ``extra.label_file``/``mask_file``/``seg_file``). Boxes are
``boxes2d`` entries or a raw ``extra.bbox_file``. This module only decodes; the checks decide what to compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

SEG_PAYLOADS = ("coco_2d", "mask_3d", "video_coco")
LABEL_FILE_KEYS = ("label_file", "mask_file", "seg_file")
_PATH_KEYS = ("mask_path", "label_path", "mask_file", "label_file", "seg_file", "path", "file")


@dataclass(frozen=True)
class SegPayload:
    """What a segmentation branch declares, sorted by representation.

    Attributes:
        mask_paths: Paths the payload names for a label map (output-relative or dataset-relative).
        coco: COCO annotation dicts (each with ``segmentation`` and usually ``category_id``).
        label_values: Ids the payload lists (``label_values``), when it lists them.
    """

    mask_paths: tuple[str, ...] = ()
    coco: tuple[dict[str, Any], ...] = ()
    label_values: tuple[Any, ...] = ()


def seg_payload(branch: dict[str, Any]) -> SegPayload:
    """Collect the mask paths and COCO annotations of a ``tasks.segmentation`` branch, in any payload key.

    Args:
        branch: ``tasks.segmentation``.

    Returns:
        The declared representations (empty when the branch declares none).
    """
    paths: list[str] = []
    coco: list[dict[str, Any]] = []
    values: list[Any] = []
    nodes: list[Any] = [branch.get(k) for k in SEG_PAYLOADS] + [branch]
    for node in nodes:
        items = node if isinstance(node, list) else [node]
        for item in items:
            if not isinstance(item, dict):
                continue
            paths += [v for k in _PATH_KEYS if isinstance(v := item.get(k), str) and v.strip()]
            if isinstance(item.get("label_values"), list):
                values += item["label_values"]
            anns = item.get("annotations")
            if isinstance(anns, list):
                coco += [a for a in anns if isinstance(a, dict) and "segmentation" in a]
            elif "segmentation" in item and item is not branch:
                coco.append(item)
    return SegPayload(tuple(dict.fromkeys(paths)), tuple(coco), tuple(values))


def rle_counts(counts: Any) -> list[int] | None:
    """Run lengths of a COCO RLE: an uncompressed list, or the compressed string form.

    The compressed form stores each run as a variable-length sequence of 5-bit groups in characters offset by
    48, with a continuation bit (0x20) and a sign bit in the last group; from the third run on, each value is
    a difference to the run two places earlier (COCO's ``rleFrString``).

    Args:
        counts: The ``counts`` of an RLE dict.

    Returns:
        The run lengths, or None when ``counts`` is neither form or decodes to a negative run.
    """
    if isinstance(counts, list):
        ok = all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)
        return [int(c) for c in counts] if ok else None
    if isinstance(counts, bytes):
        counts = counts.decode("ascii", errors="replace")
    if not isinstance(counts, str):
        return None
    runs: list[int] = []
    pos = 0
    while pos < len(counts):
        value, shift, more = 0, 0, True
        while more:
            if pos >= len(counts):
                return None
            c = ord(counts[pos]) - 48
            value |= (c & 0x1F) << (5 * shift)
            more = bool(c & 0x20)
            pos += 1
            shift += 1
            if not more and c & 0x10:
                value |= -1 << (5 * shift)
        if len(runs) > 2:
            value += runs[-2]
        if value < 0:
            return None
        runs.append(value)
    return runs


def rle_mask(rle: dict[str, Any]) -> np.ndarray | str:
    """Decode a COCO RLE ``{"size": [h, w], "counts": ...}`` to a boolean ``(h, w)`` mask (column-major runs),
    or say why it cannot be decoded."""
    size = rle.get("size")
    if not (isinstance(size, list) and len(size) == 2 and all(isinstance(s, int) and s > 0 for s in size)):
        return f"RLE size {size!r} is not [height, width]"
    h, w = int(size[0]), int(size[1])
    runs = rle_counts(rle.get("counts"))
    if runs is None:
        return "RLE counts cannot be decoded"
    if sum(runs) != h * w:
        return f"RLE runs cover {sum(runs)} pixels but size {h}×{w} has {h * w}"
    flat = np.zeros(h * w, dtype=bool)
    pos = 0
    for k, run in enumerate(runs):
        if k % 2:
            flat[pos : pos + run] = True
        pos += run
    return flat.reshape(w, h).T


def polygon_mask(polygons: list[Any], height: int, width: int) -> np.ndarray | str:
    """Rasterise COCO polygons ``[[x0, y0, x1, y1, ...], ...]`` into a boolean ``(height, width)`` mask, or
    say why the polygons are malformed."""
    canvas = Image.new("1", (width, height), 0)
    draw = ImageDraw.Draw(canvas)
    for poly in polygons:
        if not (isinstance(poly, list) and len(poly) >= 6 and len(poly) % 2 == 0):
            return "a polygon is not a flat list of at least three x, y pairs"
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in poly):
            return "a polygon holds a non-numeric coordinate"
        xs, ys = poly[0::2], poly[1::2]
        if min(xs) < -0.5 or min(ys) < -0.5 or max(xs) > width + 0.5 or max(ys) > height + 0.5:
            return f"a polygon leaves the {width}×{height} image"
        draw.polygon([(float(x), float(y)) for x, y in zip(xs, ys, strict=True)], fill=1, outline=1)
    return np.asarray(canvas, dtype=bool)


def coco_mask(annotation: dict[str, Any], height: int, width: int) -> np.ndarray | str:
    """The boolean mask of one COCO annotation (polygons, RLE, or a list of RLEs) at the image size.

    Returns:
        The mask, or why it cannot be decoded or does not fit the image.
    """
    seg = annotation.get("segmentation")
    if isinstance(seg, list) and seg and all(isinstance(p, dict) for p in seg):
        parts = [coco_mask({"segmentation": p}, height, width) for p in seg]
        bad = next((p for p in parts if isinstance(p, str)), None)
        return bad if bad is not None else np.logical_or.reduce([p for p in parts if not isinstance(p, str)])
    if isinstance(seg, list):
        return polygon_mask(seg, height, width) if seg else "empty segmentation"
    if isinstance(seg, dict):
        mask = rle_mask(seg)
        if isinstance(mask, str):
            return mask
        if mask.shape != (height, width):
            return f"RLE size {list(mask.shape)} is not the image's [{height}, {width}] ([height, width])"
        return mask
    return "segmentation is neither polygons nor an RLE"


_CORNER_COLUMNS = (
    ("x_min", "y_min", "x_max", "y_max"),
    ("xmin", "ymin", "xmax", "ymax"),
    ("x1", "y1", "x2", "y2"),
)
_SIZE_COLUMNS = (
    ("x", "y", "width", "height"),
    ("x", "y", "w", "h"),
    ("bbox_x", "bbox_y", "bbox_w", "bbox_h"),
)


def table_boxes(header: list[str], rows: list[list[str]]) -> list[list[float]]:
    """``[x, y, w, h]`` boxes from table rows whose header names corner or size columns (else none).

    Args:
        header: The table's header cells.
        rows: The rows that belong to the sample.

    Returns:
        The boxes, converted to ``[x, y, w, h]``; rows with a non-numeric coordinate are skipped.
    """
    found = box_columns(header)
    if found is None:
        return []
    cols, corners = found
    out = []
    for row in rows:
        try:
            a, b, c, d = (float(row[k]) for k in cols)
        except (ValueError, IndexError):
            continue
        out.append([a, b, c - a, d - b] if corners else [a, b, c, d])
    return out


def box_columns(header: Sequence[object]) -> tuple[list[int], bool] | None:
    """Where a table's header names a box: the four column positions and whether they are corners
    (``x_min, y_min, x_max, y_max``) rather than a corner and a size (``x, y, width, height``); else None."""
    names = [str(h).strip().lower() for h in header]
    for columns, corners in [(c, True) for c in _CORNER_COLUMNS] + [(c, False) for c in _SIZE_COLUMNS]:
        if all(c in names for c in columns):
            return [names.index(c) for c in columns], corners
    return None


def yolo_boxes(lines: list[str], width: int, height: int) -> list[list[float]]:
    """``[x, y, w, h]`` pixel boxes from YOLO lines ``class cx cy w h`` (normalised to [0, 1])."""
    out = []
    for line in lines:
        parts = line.split()
        try:
            cx, cy, w, h = (float(v) for v in parts[1:5])
        except ValueError:
            return []
        if len(parts) != 5 or not all(0.0 <= v <= 1.0 for v in (cx, cy, w, h)):
            return []
        out.append([(cx - w / 2) * width, (cy - h / 2) * height, w * width, h * height])
    return out


def coco_boxes(doc: Any, file_names: set[str]) -> list[list[float]]:
    """The ``bbox`` of every COCO annotation whose image's ``file_name`` basename is in ``file_names``."""
    if not isinstance(doc, dict):
        return []
    images: list[Any] = doc["images"] if isinstance(doc.get("images"), list) else []
    ids = {
        im.get("id")
        for im in images
        if isinstance(im, dict)
        and str(im.get("file_name", "")).replace("\\", "/").rsplit("/", 1)[-1] in file_names
    }
    anns: list[Any] = doc["annotations"] if isinstance(doc.get("annotations"), list) else []
    return [
        [float(v) for v in a["bbox"]]
        for a in anns
        if isinstance(a, dict)
        and a.get("image_id") in ids
        and isinstance(a.get("bbox"), list)
        and len(a["bbox"]) == 4
    ]


def box_iou(a: list[float], b: list[float]) -> float:
    """Intersection over union of two ``[x, y, w, h]`` boxes."""
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0

"""Geometry fidelity for the ``strict`` profile: mask Dice, box F1 at IoU 0.5, slice/frame correctness.

The reference scorer never compares geometry (SPEC §6 bug 7). When a GT sample carries our ``geometry``
extension (docs/contracts.md), these scores become extra content-fidelity blocks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmark.score.normalize import as_dict

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

BOX_IOU_THRESHOLD = 0.5
_PAYLOAD_KEYS = ("coco_2d", "mask_3d", "video_coco")


@dataclass(frozen=True)
class GeometryScores:
    """Per-sample geometry results; None where the GT has nothing to compare."""

    dice: float | None = None
    box_f1: float | None = None
    slice_ok: float | None = None

    def blocks(self) -> dict[str, float]:
        """The applicable scores as content-fidelity blocks."""
        named = {"geometry_dice": self.dice, "geometry_box_f1": self.box_f1, "geometry_slice": self.slice_ok}
        return {k: v for k, v in named.items() if v is not None}


def _load_label_map(path: Path) -> np.ndarray | None:
    # NumPy and Pillow load here, on the first GT mask: the official profile and GTs without masks never pay
    # for them (docs/performance.md, Scorer).
    import numpy as np

    try:
        from PIL import Image

        with Image.open(path) as im:
            arr = np.asarray(im)
    except Exception as exc:  # any unreadable mask scores 0, never aborts scoring
        log.debug("cannot read mask %s: %s", path, exc)
        return None
    return arr[..., 0] if arr.ndim == 3 else arr


def label_map_dice(pred: np.ndarray | None, truth: np.ndarray | None) -> float:
    """Mean Dice over the non-zero class ids present in either label map (1.0 when both are empty; 0 when
    ``pred`` is None, missing or unreadable, or the shapes differ)."""
    if pred is None or truth is None or pred.shape != truth.shape:
        return 0.0
    import numpy as np

    ids = (set(np.unique(pred).tolist()) | set(np.unique(truth).tolist())) - {0}
    if not ids:
        return 1.0
    scores = []
    for cid in sorted(ids):
        p, t = pred == cid, truth == cid
        denom = int(p.sum()) + int(t.sum())
        scores.append(2.0 * int(np.logical_and(p, t).sum()) / denom if denom else 1.0)
    return float(np.mean(scores))


def box_iou(a: list[float], b: list[float]) -> float:
    """IoU of two COCO ``[x, y, w, h]`` boxes."""
    ax2, ay2, bx2, by2 = a[0] + a[2], a[1] + a[3], b[0] + b[2], b[1] + b[3]
    iw = max(0.0, min(ax2, bx2) - max(a[0], b[0]))
    ih = max(0.0, min(ay2, by2) - max(a[1], b[1]))
    inter = iw * ih
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def box_f1(pred: list[list[float]], truth: list[list[float]], threshold: float = BOX_IOU_THRESHOLD) -> float:
    """F1 of greedy IoU matching (highest IoU first, each box used once, IoU ≥ threshold counts as a hit).

    Args:
        pred: Predicted COCO boxes.
        truth: GT COCO boxes.
        threshold: Minimum IoU for a match.

    Returns:
        F1 in [0, 1]; 1.0 when both lists are empty.
    """
    if not pred and not truth:
        return 1.0
    pairs = sorted(
        ((box_iou(p, t), i, j) for i, p in enumerate(pred) for j, t in enumerate(truth)), reverse=True
    )
    used_p: set[int] = set()
    used_t: set[int] = set()
    for iou, i, j in pairs:
        if iou < threshold:
            break
        if i not in used_p and j not in used_t:
            used_p.add(i)
            used_t.add(j)
    hits = len(used_p)
    return 2.0 * hits / (len(pred) + len(truth))


def _pred_boxes(ann: dict[str, Any]) -> list[list[float]]:
    boxes = as_dict(as_dict(ann.get("tasks")).get("detection")).get("boxes2d")
    out = []
    for b in boxes if isinstance(boxes, list) else []:
        bbox = as_dict(b).get("bbox")
        if isinstance(bbox, list) and len(bbox) == 4 and all(isinstance(v, (int, float)) for v in bbox):
            out.append([float(v) for v in bbox])
    return out


def _pred_mask_path(ann: dict[str, Any]) -> str | None:
    seg = as_dict(as_dict(ann.get("tasks")).get("segmentation"))
    for key in _PAYLOAD_KEYS:
        path = as_dict(seg.get(key)).get("mask_path")
        if isinstance(path, str) and path:
            return path
    return None


def geometry_scores(
    ann: dict[str, Any] | None, geometry: Any, pred_root: Path, dataset_root: Path
) -> GeometryScores:
    """Score one annotation's geometry against the GT ``geometry`` block.

    Args:
        ann: The parsed annotation (None when missing/invalid: every applicable score is 0).
        geometry: The GT sample's ``geometry`` (anything but a dict means "nothing to compare").
        pred_root: The ``agent1_data_organization`` folder (mask paths are relative to it).
        dataset_root: The dataset root (GT mask paths are relative to it).

    Returns:
        The scores.
    """
    if not isinstance(geometry, dict):
        return GeometryScores()
    ann = ann or {}
    dice = box = slice_ok = None
    if geometry.get("mask_file"):
        truth = _load_label_map(dataset_root / str(geometry["mask_file"]))
        rel = _pred_mask_path(ann)
        pred = _load_label_map(pred_root / rel) if rel else None
        dice = label_map_dice(pred, truth)
    if isinstance(geometry.get("boxes"), list) and geometry["boxes"]:
        truth_boxes = [
            [float(v) for v in b] for b in geometry["boxes"] if isinstance(b, list) and len(b) == 4
        ]
        box = box_f1(_pred_boxes(ann), truth_boxes)
    spatial = as_dict(as_dict(ann.get("media_geometry")).get("spatial"))
    checks = []
    if geometry.get("slice_index") is not None:
        checks.append(as_dict(spatial.get("three_d")).get("slice_index") == geometry["slice_index"])
    if geometry.get("frame_index") is not None:
        checks.append(as_dict(spatial.get("video")).get("frame_index") == geometry["frame_index"])
    if checks:
        slice_ok = float(all(checks))
    return GeometryScores(dice, box, slice_ok)

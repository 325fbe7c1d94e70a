"""Detection boxes of one sample, from a COCO file, YOLO label files or a box table.

The box source and the box convention are decision points (``box_source``, ``box_convention``); class names
come from the COCO categories, a ``classes.txt``-style list, a README code map, or a word of the dataset name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents.rules.decisions import Decider, Hypothesis
from agents.rules.labels import box_convention_hypotheses, boxes_from_rows, yolo_boxes
from agents.rules.source import stem
from agents.rules.tables import join, sample_ids
from agents.rules.vocab import tokens

if TYPE_CHECKING:
    import medio
    from agents.rules.context import DatasetContext

__all__ = ["detection_boxes"]

BoxList = list[tuple[list[float], int]]


def _coco(ctx: DatasetContext, rel: str) -> tuple[BoxList, str, list[str]] | None:
    name = rel.rsplit("/", 1)[-1]
    for coco_rel, doc in ctx.coco:
        images = {img.get("id"): img for img in doc.get("images", []) if isinstance(img, dict)}
        match = [i for i, img in images.items() if str(img.get("file_name", "")).rsplit("/", 1)[-1] == name]
        if not match:
            continue
        cats = sorted(
            (c for c in doc.get("categories", []) if isinstance(c, dict)), key=lambda c: c.get("id", 0)
        )
        names = [str(c.get("name", f"class_{c.get('id')}")) for c in cats] or ["object"]
        ids = {c.get("id"): k + 1 for k, c in enumerate(cats)}
        boxes = [
            ([float(v) for v in a["bbox"]], ids.get(a.get("category_id"), 1))
            for a in doc.get("annotations", [])
            if a.get("image_id") == match[0] and len(a.get("bbox", [])) == 4
        ]
        return boxes, coco_rel, names
    return None


def _yolo(
    ctx: DatasetContext, rel: str, size: tuple[int, int], index: int, decider: Decider
) -> tuple[BoxList, str, list[str]] | None:
    want = stem(rel.rsplit("/", 1)[-1])
    hits = [f for f in ctx.files.files if f.lower().endswith(".txt") and stem(f.rsplit("/", 1)[-1]) == want]
    if not hits:
        return None
    text = (ctx.root / hits[0]).read_text(encoding="utf-8", errors="replace")
    normalised = decider.choose(
        "box_convention",
        [
            Hypothesis(True, 3.0, "values in 0..1: YOLO normalised centre boxes", "yolo"),
            Hypothesis(False, 0.5, "centre boxes in pixels", "cxcywh_pixels"),
        ],
        index,
    )
    raw = yolo_boxes(text, size, normalised)
    names = _class_list(ctx) or ctx.object_words()[:1]
    return [(b, c + 1) for b, c in raw], hits[0], names


def _class_list(ctx: DatasetContext) -> list[str]:
    for mapping in ctx.class_maps:
        if mapping:
            return [mapping[k] for k in sorted(mapping)]
    return []


def _table(
    ctx: DatasetContext, rel: str, image: medio.MedImage, index: int, decider: Decider
) -> tuple[BoxList, str, list[str]] | None:
    patient = image.meta.header.get("PatientID")
    for table in ctx.box_tables():
        found = join(table, sample_ids(rel, str(patient) if patient else None))
        if found is None:
            continue
        convention = decider.choose("box_convention", box_convention_hypotheses(table.frame), index)
        meta = image.meta
        spacing = list(reversed(meta.spacing or (1.0, 1.0, 1.0)))
        origin = list(meta.origin or (0.0, 0.0, 0.0))
        boxes = boxes_from_rows(found.rows, convention, {"origin": origin, "spacing": spacing})
        names, codes = _table_classes(ctx, table.frame)
        class_col = _class_column(table.frame) if codes else None
        out: BoxList = [
            (box, codes.get(str(row[class_col]).strip(), 1) if class_col is not None else 1)
            for box, (_, row) in zip(boxes, found.rows.iterrows(), strict=False)
        ]
        return out, table.relpath, names
    return None


def _class_column(frame: Any) -> str | None:
    for col in frame.columns:
        if set(tokens(str(col))) & {"target", "class", "label", "category"}:
            return str(col)
    return None


def _table_classes(ctx: DatasetContext, frame: Any) -> tuple[list[str], dict[str, int]]:
    """Class names of a box table and ``raw value → our id`` (ids from 1)."""
    col = _class_column(frame)
    if col is None:
        return ctx.object_words()[:1], {}
    values = sorted({str(v).strip() for v in frame[col]})
    words = tokens(col)
    mapping = next((m for key, m in ctx.code_maps.items() if not key or key in words), None)
    if mapping:
        named = [(v, mapping.get(int(v), v)) for v in values if v.isdigit()]
        names = list(dict.fromkeys(n for _, n in named))
        return names, {v: names.index(n) + 1 for v, n in named}
    return values, {v: k + 1 for k, v in enumerate(values)}


def detection_boxes(
    ctx: DatasetContext,
    det_classes: list[str],
    rel: str,
    image: medio.MedImage,
    size: tuple[int, int],
    index: int,
    decider: Decider,
) -> tuple[BoxList, str | None, list[str]]:
    """The boxes of sample ``index`` (source ``rel``) in pixels of its output image of ``size`` ``(width,
    height)``: ``(boxes as ([x, y, w, h], category id), the file holding them, class names in id order from
    1)``. ``det_classes`` is the plan's list of class names in id order (filled in place on first use);
    ``image`` the decoded image (its origin and spacing place world coordinates).
    """
    found_by: list[Hypothesis[tuple[BoxList, str, list[str]]]] = []
    for name, found in (
        ("coco", _coco(ctx, rel)),
        ("yolo", _yolo(ctx, rel, size, index, decider)),
        ("table", _table(ctx, rel, image, index, decider)),
    ):
        if found is not None:
            found_by.append(Hypothesis(found, 3.0 if found[0] else 1.0, f"boxes from {found[1]}", name))
    if found_by:
        boxes, where, names = decider.choose("box_source", found_by, index)
        if not det_classes:
            det_classes.extend(names)
        w, h = size
        clipped = []
        for (x, y, bw, bh), cat in boxes:
            x0, y0 = max(0.0, x), max(0.0, y)
            x1, y1 = min(float(w), x + bw), min(float(h), y + bh)
            if x1 > x0 and y1 > y0:
                clipped.append(([round(x0, 2), round(y0, 2), round(x1 - x0, 2), round(y1 - y0, 2)], cat))
        return clipped, where, det_classes
    return [], None, det_classes or ctx.object_words()[:1]

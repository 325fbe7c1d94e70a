"""Labels and boxes: class tables from READMEs and columns, label-column ranking, class order, box
conventions.

Box conventions the baseline recognises (each is a hypothesis scored from column names and value ranges):

- ``xywh``: COCO ``[x, y, width, height]`` (top-left corner);
- ``xyxy``: corners ``x_min, y_min, x_max, y_max`` (max exclusive, so width = x_max - x_min);
- ``cxcywh``: centre and size;
- ``yolo``: ``class cx cy w h`` normalised to 0..1 by the image size;
- ``world``: a centre in world millimetres plus a diameter, mapped to pixels with the origin and spacing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from agents.rules.decisions import Hypothesis
from agents.rules.vocab import NORMAL_FIRST, tokens

__all__ = [
    "Box",
    "boxes_from_rows",
    "class_order_hypotheses",
    "code_maps_from_text",
    "label_column_hypotheses",
    "yolo_boxes",
]

Box = tuple[list[float], str]  # ([x, y, w, h] in output pixels, class key as found in the source)

# "0 = normal, 1 = dilated cardiomyopathy" / "Target 1 = Lung Opacity" / "label 2: tumor"
# Names may hold any letters (a legend in French or German keeps "matière", "Läsion"): [^\W\d_] is a letter.
_CODE_PAIR = re.compile(
    r"(?<![\w.])(\d{1,3})\s*(?:=|:|->|→)\s*([^\W\d_][\w /'+()-]*?)\s*(?=[,;.\n]|\s\d{1,3}\s*[=:]|$)"
)
_LABEL_WORDS = {
    "label": 2.0,
    "labels": 2.0,
    "class": 2.0,
    "classname": 2.0,
    "diagnosis": 2.5,
    "finding": 2.0,
    "category": 2.0,
    "target": 1.5,
    "dx": 1.0,
    "group": 1.0,
    "histology": 1.5,
    "pathology": 1.5,
    "grade": 1.0,
    "outcome": 1.0,
    "name": 0.5,
    "type": 0.5,
}
_NOT_LABEL_WORDS = {
    "id",
    "patient",
    "subject",
    "file",
    "filename",
    "path",
    "image",
    "split",
    "fold",
    "age",
    "sex",
    "side",
    "view",
    "site",
    "height",
    "weight",
    "months",
    "date",
    "frame",
    "mask",
    "shard",
    "index",
    "width",
    "spacing",
    "participant",
    "session",
    "ses",
    "sub",
    "uid",
    "sopinstanceuid",
    "studyinstanceuid",
    "seriesinstanceuid",
    "relative",
    "accession",
}


def code_maps_from_text(text: str) -> dict[str, dict[int, str]]:
    """Numeric code → class name maps written in a README: ``{context word: {code: name}}``, the context being
    the last word before the first pair on the line (``"group_code"``, ``"target"`` ...), or ``""``.
    """
    maps: dict[str, dict[int, str]] = {}
    for line in text.splitlines():
        pairs = [(int(m.group(1)), m.group(2).strip()) for m in _CODE_PAIR.finditer(line)]
        pairs = [(c, n) for c, n in pairs if n and not n.lower().startswith(("the ", "a "))]
        if not pairs:
            continue
        first = _CODE_PAIR.search(line)
        head = line[: first.start()] if first else ""
        words = tokens(head)
        context = words[-1] if words else ""
        if len(words) >= 2 and words[-1] == "code":
            context = "_".join(words[-2:])
        maps.setdefault(context, {}).update(pairs)
    return maps


def _numeric(values: pd.Series) -> bool:
    return bool(pd.to_numeric(values, errors="coerce").notna().all())


def label_column_hypotheses(
    frame: pd.DataFrame, id_column: str, code_maps: Mapping[str, Mapping[int, str]]
) -> list[Hypothesis[str]]:
    """Rank the columns of a table as the class label.

    Args:
        frame: The whole table (value statistics come from every row).
        id_column: The column that joined the sample (never the label).
        code_maps: README code maps (a numeric column they explain is a strong candidate).

    Returns:
        Hypotheses over column names, best first (possibly empty).
    """
    out: list[Hypothesis[str]] = []
    for column in frame.columns:
        if column == id_column or column.startswith("__"):
            continue
        values = frame[column].astype(str).str.strip()
        distinct = values.nunique()
        if distinct < 2 or (distinct > max(20, len(frame) // 2 + 1) and distinct == len(frame)):
            continue
        words = tokens(str(column))
        score = max((_LABEL_WORDS.get(w, 0.0) for w in words), default=0.0)
        if any(w in _NOT_LABEL_WORDS for w in words):
            score -= 2.0
        numeric = _numeric(values)
        if numeric:
            explained = any(_map_key_matches(k, words) for k in code_maps)
            if explained:
                score += 1.5
            elif distinct > 10 or not all(v.isdigit() for v in values):
                score -= 2.5  # a continuous measurement, not a class
            else:
                score -= 0.5
        else:
            mean_len = float(values.str.len().mean())
            score += 0.8 if mean_len > 4 else -0.6  # full names beat short codes ("mel")
            if distinct <= 12:
                score += 0.5
        out.append(Hypothesis(str(column), score, f"{distinct} distinct values", str(column)))
    return sorted(out, key=lambda h: -h.score)


def _map_key_matches(key: str, words: Sequence[str]) -> bool:
    if not key:
        return True
    singular = [w.rstrip("s") for w in words]
    return any(p.rstrip("s") in singular for p in key.split("_")) or key in "_".join(words)


def class_order_hypotheses(names: Iterable[str], first_seen: Sequence[str]) -> list[Hypothesis[list[str]]]:
    """Rank orders of the distinct class ``names`` (ids are the positions in the chosen order): a "normal-like
    first" order, alphabetical, and ``first_seen`` (the order of first appearance on disk).
    """
    distinct = list(dict.fromkeys(names))
    alpha = sorted(distinct, key=str.lower)
    normal = [n for n in alpha if n.lower().startswith(NORMAL_FIRST)]
    hyps: list[Hypothesis[list[str]]] = []
    if normal:
        hyps.append(
            Hypothesis(
                normal + [n for n in alpha if n not in normal], 2.8, "negative class first", "normal_first"
            )
        )
    hyps.append(Hypothesis(alpha, 1.5, "alphabetical", "alphabetical"))
    seen = [n for n in dict.fromkeys(first_seen) if n in distinct]
    seen += [n for n in distinct if n not in seen]
    # Gaps of 1.2-1.3 nats: at temperature 0.7 one candidate in seven or eight orders the classes otherwise.
    hyps.append(Hypothesis(seen, 0.3, "order of first appearance", "first_seen"))
    return hyps


def _col(frame: pd.DataFrame, *names: str) -> str | None:
    lower = {str(c).lower(): str(c) for c in frame.columns}
    for name in names:
        if name in lower:
            return lower[name]
    return None


def box_convention_hypotheses(frame: pd.DataFrame) -> list[Hypothesis[str]]:
    """Rank box conventions (see the module docstring) from a box table's column names; empty when no box
    columns exist.
    """
    hyps: list[Hypothesis[str]] = []
    if _col(frame, "x_min", "xmin", "x1") and _col(frame, "x_max", "xmax", "x2"):
        hyps += [
            Hypothesis("xyxy", 3.0, "x_min/x_max columns"),
            Hypothesis("xywh", 0.5, "corner read as size"),
        ]
    if _col(frame, "coordx") and _col(frame, "diameter_mm", "diameter"):
        hyps += [
            Hypothesis("world", 3.0, "world centre + diameter"),
            Hypothesis("cxcywh", 0.5, "centre read as pixels"),
        ]
    if _col(frame, "x") and _col(frame, "width", "w"):
        hyps += [
            Hypothesis("xywh", 2.5, "x/y/width/height columns"),
            Hypothesis("cxcywh", 1.0, "maybe centre"),
        ]
    if _col(frame, "cx", "x_center", "xc") and _col(frame, "width", "w"):
        hyps += [
            Hypothesis("cxcywh", 2.5, "centre columns"),
            Hypothesis("xywh", 0.8, "centre read as corner"),
        ]
    return hyps


def boxes_from_rows(rows: pd.DataFrame, convention: str, geometry: Mapping[str, Any]) -> list[list[float]]:
    """Convert the box columns of ``rows`` to COCO ``[x, y, w, h]`` in output-image pixels.

    Args:
        rows: The sample's rows of the box table.
        convention: A name from `box_convention_hypotheses`.
        geometry: ``origin`` (x, y, z) and ``spacing`` (x, y, z) for world coordinates, ``size`` (w, h).

    Returns:
        The boxes (rows without numeric coordinates are skipped).
    """
    frame = rows.copy()
    out: list[list[float]] = []
    for _, row in frame.iterrows():
        try:
            out.append(_one_box(row, frame, convention, geometry))
        except (TypeError, ValueError, KeyError):
            continue
    return out


def _one_box(
    row: pd.Series, frame: pd.DataFrame, convention: str, geometry: Mapping[str, Any]
) -> list[float]:
    def num(*names: str) -> float:
        col = _col(frame, *names)
        if col is None:
            raise KeyError(names[0])
        return float(row[col])

    if convention == "world":
        origin, spacing = geometry["origin"], geometry["spacing"]
        cx = (num("coordx") - origin[0]) / spacing[0]
        cy = (num("coordy") - origin[1]) / spacing[1]
        radius = num("diameter_mm", "diameter") / 2.0 / spacing[0]
        return [cx - radius, cy - radius, 2 * radius, 2 * radius]
    if convention == "xyxy":
        x0, y0 = num("x_min", "xmin", "x1"), num("y_min", "ymin", "y1")
        return [x0, y0, num("x_max", "xmax", "x2") - x0, num("y_max", "ymax", "y2") - y0]
    if convention == "cxcywh":
        w, h = num("width", "w", "diameter"), num("height", "h", "diameter")
        return [
            num("cx", "x_center", "xc", "coordx", "x") - w / 2,
            num("cy", "y_center", "yc", "coordy", "y") - h / 2,
            w,
            h,
        ]
    if convention == "xywh":
        if _col(frame, "x_min", "xmin", "x1"):
            return [
                num("x_min", "xmin", "x1"),
                num("y_min", "ymin", "y1"),
                num("x_max", "xmax", "x2"),
                num("y_max", "ymax", "y2"),
            ]
        return [num("x"), num("y"), num("width", "w"), num("height", "h")]
    raise ValueError(f"unknown box convention {convention!r}")


def yolo_boxes(text: str, size: tuple[int, int], normalised: bool = True) -> list[tuple[list[float], int]]:
    """Parse YOLO label lines ``class cx cy w h``.

    Args:
        text: The label file's text.
        size: Image ``(width, height)``.
        normalised: Whether coordinates are fractions of the image size (YOLO) or pixels.

    Returns:
        ``[([x, y, w, h], class id), ...]`` in pixels.
    """
    width, height = size if normalised else (1, 1)
    out: list[tuple[list[float], int]] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 5:
            continue
        try:
            cls = int(float(parts[0]))
            cx, cy, w, h = (float(p) for p in parts[1:])
        except ValueError:
            continue
        bw, bh = w * width, h * height
        out.append(([cx * width - bw / 2, cy * height - bh / 2, bw, bh], cls))
    return out

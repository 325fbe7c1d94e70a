"""Evidence checks on what the annotation asserts about the written image: pixel size, the mask, the boxes,
the label against the class table and the raw evidence, one class table per candidate, and the modality
against the source header. None of them reads ground truth.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmark.fields import DIMENSION, MODALITY_PRIMARY, SUBJECT_ID
from validator import _payload, _raw, _tables
from validator.checks.evidence_source import declared_source, read_options, read_target, source_value
from validator.checks.mdsbench import active_task, class_table, table_has_id
from validator.registry import check
from validator.report import CheckResult
from validator.sample import SampleView, image_facts
from validator.values import (
    ALLOWED_TASKS,
    SPATIAL_BRANCH_BY_DIM,
    nonmissing,
    norm_dim,
    norm_modality,
    norm_text,
    norm_token,
)

_DICOM_MODALITY = {
    "CT": "ct",
    "MR": "mri",
    "US": "ultrasound",
    "CR": "xray",
    "DX": "xray",
    "RG": "xray",
    "XA": "xray",
    "RF": "xray",
    "MG": "xray",
    "PT": "pet",
    "NM": "nm",
    "OP": "fundus",
    "OPT": "oct",
    "SM": "microscopy",
}
_MODALITY_SYNONYMS = {
    "xray": {"xray", "xr", "radiograph", "radiography", "mammography", "cr", "dx"},
    "fundus": {"fundus", "ophthalmic", "fundus photography"},
    "oct": {"oct", "ophthalmic"},
    "pet": {"pet", "petct", "pt"},
    "nm": {"nm", "spect", "nuclear medicine"},
}


def _active_spatial(sample: SampleView) -> tuple[str | None, dict[str, Any]]:
    branch = SPATIAL_BRANCH_BY_DIM.get(norm_dim(sample.get(DIMENSION)))
    return branch, sample.block(f"media_geometry.spatial.{branch}") if branch else {}


@check("pixel_size_matches_image", weight=0.04, fields=("media_geometry.spatial",))
def pixel_size_matches_image(sample: SampleView) -> CheckResult:
    """The active spatial branch's pixel_size_px is the written image's [width, height]."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, ("media_geometry.spatial",))
    branch, block = _active_spatial(sample)
    field = f"media_geometry.spatial.{branch}.pixel_size_px"
    image = sample.image
    if image is None or not image.valid or image.size is None:
        return CheckResult.fail(f"no openable image to compare {field} with", (field,))
    size = block.get("pixel_size_px")
    if size is None and branch != "common":
        # SPEC defines pixel_size_px for the 2D `common` block only; three_d/video contents are open.
        return CheckResult.ok((field,), skipped="the format does not require pixel_size_px here")
    if size is None:
        return CheckResult.fail(
            f"fill {field} with [width, height] = {list(image.size)}", (field,), score=0.5
        )
    if not (isinstance(size, list) and len(size) == 2 and list(size) == list(image.size)):
        return CheckResult.fail(
            f"{field} is {size} but the image is {list(image.size)} ([width, height])", (field,)
        )
    return CheckResult.ok((field,))


@check("mask_matches_image", weight=0.04, fields=("tasks.segmentation",), high_risk=True)
def mask_matches_image(sample: SampleView) -> CheckResult:
    """The segmentation, in any representation the format allows, fits the image and uses known class ids.

    Accepted: a label-map image in the output (``mask_path: masks/<i>.png``), COCO polygons or RLE
    (compressed or not) in ``coco_2d``/``video_coco``, or a raw label map in ``data/`` named by the payload's
    ``mask_path`` or by ``extra.label_file``/``mask_file``/``seg_file`` (it must exist, hold only class ids,
    and match the source's shape and the declared slice).
    """
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, ("tasks.segmentation",))
    if active_task(sample) != "segmentation":
        return CheckResult.ok()
    branch = sample.block("tasks.segmentation")
    payload = _payload.seg_payload(branch)
    table = class_table(branch)
    strings = [v for v in payload.label_values if not isinstance(v, int) or isinstance(v, bool)]
    if strings:
        return CheckResult.fail(
            f"label_values {strings[:4]} must be integer ids, not strings", ("tasks.segmentation",), score=0.5
        )
    for rel in payload.mask_paths:
        facts = image_facts(sample.candidate_path(rel))
        if facts is not None and facts.valid:
            return _output_mask(sample, facts, table)
        path = sample.dataset_path(rel)
        if path is not None and path.is_file():
            return _raw_label(sample, rel, path, table)
    if payload.coco:
        return _coco_masks(sample, payload.coco, table)
    extra_labels = [v for k in _payload.LABEL_FILE_KEYS if isinstance(v := sample.extra.get(k), str)]
    for rel in extra_labels if not payload.mask_paths else []:
        path = sample.dataset_path(rel)
        if path is not None and path.is_file():
            return _raw_label(sample, rel, path, table)
    named = payload.mask_paths or tuple(extra_labels)
    # A payload that names a mask which is not there is wrong even when extra names a raw label file.
    why = f"{named[0]!r} opens neither in the output nor under the dataset" if named else "no mask is given"
    return CheckResult.fail(
        f"segmentation: {why}; give a label map (masks/{sample.index}.png, or the raw label file in data/) "
        "or COCO polygons/RLE in tasks.segmentation.coco_2d",
        ("tasks.segmentation",),
    )


def _image_size(sample: SampleView) -> tuple[int, int] | None:
    image = sample.image
    return image.size if image is not None and image.valid and image.size else None


def _unknown_ids(ids: list[int], table: dict[str, Any] | list[Any] | None) -> CheckResult | None:
    if table is None:
        return CheckResult.fail("tasks.segmentation.classes is empty", ("tasks.segmentation.classes",))
    unknown = [v for v in ids if not table_has_id(table, v)]
    if unknown:
        return CheckResult.fail(
            f"mask ids {unknown} are not in tasks.segmentation.classes ({sorted(map(str, table))})",
            ("tasks.segmentation.mask_path", "tasks.segmentation.classes"),
        )
    return None


def _output_mask(sample: SampleView, facts: Any, table: dict[str, Any] | list[Any] | None) -> CheckResult:
    """A label-map image written in the output: the image's size, class ids only."""
    field = "tasks.segmentation.mask_path"
    size = _image_size(sample)
    if size is not None and size != facts.size:
        return CheckResult.fail(
            f"mask is {facts.size[0]}×{facts.size[1]} but the image is {size[0]}×{size[1]}; "
            "render the mask at the image's size",
            (field,),
        )
    ids = _raw.mask_ids(facts)
    if ids is None:
        return CheckResult.fail("the mask cannot be decoded", (field,))
    return _unknown_ids(ids, table) or CheckResult.ok((field,), ids=ids, representation="output label map")


def _coco_masks(
    sample: SampleView, annotations: tuple[dict[str, Any], ...], table: dict[str, Any] | list[Any] | None
) -> CheckResult:
    """COCO polygons/RLE: each decodes at the image's size, is non-empty, and names a known class."""
    field = "tasks.segmentation"
    size = _image_size(sample)
    if size is None:
        return CheckResult.fail("no openable image to lay the COCO segmentation on", (field,))
    width, height = size
    problems: list[str] = []
    for k, ann in enumerate(annotations):
        mask = _payload.coco_mask(ann, height, width)
        if isinstance(mask, str):
            problems.append(f"annotation {k}: {mask}")
        elif not mask.any():
            problems.append(f"annotation {k} covers no pixel")
        cid = ann.get("category_id")
        if cid is not None and (not isinstance(cid, int) or isinstance(cid, bool)):
            problems.append(f"annotation {k} category_id {cid!r} is not an integer id")
        elif cid is not None and (table is None or not table_has_id(table, cid)):
            problems.append(f"annotation {k} category_id {cid!r} is not in tasks.segmentation.classes")
    if problems:
        score = 1 - len(problems) / (len(problems) + len(annotations) + 1)
        return CheckResult(score, "; ".join(problems[:4]), (field,))
    return CheckResult.ok((field,), representation="coco")


def _raw_label(
    sample: SampleView, rel: str, path: Path, table: dict[str, Any] | list[Any] | None
) -> CheckResult:
    """A label map in ``data/``: an integer map with class ids only, shaped like the source and the image."""
    field = "tasks.segmentation"
    facts = _raw.label_facts(path)
    if not facts.ok:
        return CheckResult.fail(f"the declared label map {rel!r}: {facts.error}", (field,), score=0.3)
    bad = _unknown_ids(list(facts.ids), table)
    if bad is not None:
        return bad
    dim = norm_dim(sample.get(DIMENSION))
    plane = facts.shape[-2:]
    if dim == "3d" and len(facts.shape) == 3:
        source, _ = declared_source(sample)
        src = _raw.source_facts(read_target(sample, source), read_options(sample)) if source else None
        if src is not None and src.ok and src.axes.startswith("Z") and tuple(src.shape[:3]) != facts.shape:
            return CheckResult.fail(
                f"the label volume {rel!r} is {list(facts.shape)} but the source is {list(src.shape[:3])}",
                (field,),
                score=0.3,
            )
        k = sample.get("media_geometry.spatial.three_d.slice_index")
        if isinstance(k, int) and not isinstance(k, bool) and not 0 <= k < facts.shape[0]:
            return CheckResult.fail(
                f"slice_index {k} is outside the label volume's {facts.shape[0]} slices",
                ("media_geometry.spatial.three_d.slice_index",),
            )
    size = _image_size(sample)
    if size is not None and (size[1], size[0]) != tuple(plane):
        return CheckResult.fail(
            f"the label map {rel!r} has planes of {plane[1]}×{plane[0]} but the image is {size[0]}×{size[1]}",
            (field,),
            score=0.5,
        )
    return CheckResult.ok((field,), ids=list(facts.ids), representation="raw label map")


@check("boxes_inside_image", weight=0.04, fields=("tasks.detection.boxes2d",), high_risk=True)
def boxes_inside_image(sample: SampleView) -> CheckResult:
    """Every COCO box lies inside the image with positive area and a category from the class table."""
    field = "tasks.detection.boxes2d"
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, (field,))
    if active_task(sample) != "detection":
        return CheckResult.ok()
    branch = sample.block("tasks.detection")
    boxes, table = branch.get("boxes2d"), class_table(branch)
    if not isinstance(boxes, list):
        if branch.get("boxes3d") or branch.get("frame_boxes2d"):
            return CheckResult.ok()
        bbox_file = sample.extra.get("bbox_file")
        path = sample.dataset_path(bbox_file)
        if path is not None and path.is_file():
            return CheckResult.ok((field,), representation="raw bbox_file")
        why = f"extra.bbox_file {bbox_file!r} does not exist under the dataset" if bbox_file else "missing"
        return CheckResult.fail(
            f"{field} is {why}; write COCO boxes [x, y, w, h] in image pixels or name the raw box file",
            (field,),
        )
    image = sample.image
    w, h = image.size if image is not None and image.valid and image.size else (None, None)
    problems = []
    for k, box in enumerate(boxes):
        bbox = box.get("bbox") if isinstance(box, dict) else None
        if not (isinstance(bbox, list) and len(bbox) == 4 and all(isinstance(v, int | float) for v in bbox)):
            problems.append(f"box {k} has no numeric [x, y, w, h]")
            continue
        x, y, bw, bh = (float(v) for v in bbox)
        if norm_token(box.get("bbox_format")) in {"xyxy", "x1y1x2y2", "corners"}:
            bw, bh = bw - x, bh - y  # the box states its own convention
        if bw <= 0 or bh <= 0:
            problems.append(f"box {k} has non-positive size {bw}×{bh}")
        if w is not None and h is not None and (x < -0.5 or y < -0.5 or x + bw > w + 0.5 or y + bh > h + 0.5):
            problems.append(f"box {k} {bbox} leaves the {w}×{h} image")
        cid = box.get("category_id")
        if not isinstance(cid, int) or isinstance(cid, bool):
            problems.append(f"box {k} category_id {cid!r} is not an integer id")
        elif table is None or not table_has_id(table, cid):
            problems.append(f"box {k} category_id {cid!r} is not in tasks.detection.class_names")
        elif isinstance(table, dict) and box.get("category_name") not in (None, table.get(str(cid))):
            problems.append(f"box {k} category_name {box.get('category_name')!r} is not class_names[{cid}]")
    if not problems and w is not None and h is not None:
        problems += _boxes_against_raw(sample, boxes, (w, h))
    if problems:
        return CheckResult(
            1 - len(problems) / (len(problems) + len(boxes) + 1), "; ".join(problems[:4]), (field,)
        )
    return CheckResult.ok((field,))


def _raw_boxes(sample: SampleView, size: tuple[int, int]) -> list[list[float]] | None:
    """The sample's boxes in ``extra.bbox_file`` (CSV/TSV rows naming the source, COCO JSON, YOLO TXT), in
    the written image's pixels; None when the file states none for this sample in a layout read here."""
    path = sample.dataset_path(sample.extra.get("bbox_file"))
    src = source_value(sample) or (sample.entry.relpath if sample.entry else "")
    if path is None or not path.is_file() or not src:
        return None
    name = str(src).replace("\\", "/").rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0]
    kind, data = _tables.bbox_source(path)
    boxes: list[list[float]] = []
    if kind == "table":
        header, rows = data
        mine = [r for r in rows if any(c.strip() in (name, stem) for c in r[:3])]
        boxes = _payload.table_boxes(header, mine)
    elif kind == "coco":
        boxes = _payload.coco_boxes(data, {name})
    elif kind == "lines" and Path(path).stem == stem:
        boxes = _payload.yolo_boxes(data, *size)
    if not boxes:
        return None
    source, _ = declared_source(sample)
    facts = _raw.source_facts(source, read_options(sample)) if source is not None else None
    if facts is not None and facts.ok and facts.axes.startswith("YX") and len(facts.shape) >= 2:
        sy, sx = size[1] / facts.shape[0], size[0] / facts.shape[1]  # the image may be a resized rendering
        boxes = [[b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy] for b in boxes]
    return boxes


def _boxes_against_raw(sample: SampleView, boxes: list[Any], size: tuple[int, int]) -> list[str]:
    """Each written box must overlap a box the raw bbox_file gives for this sample (IoU ≥ 0.5)."""
    raw = _raw_boxes(sample, size)
    if raw is None:
        return []
    out = []
    for k, box in enumerate(boxes):
        bbox = [float(v) for v in box["bbox"]]
        if norm_token(box.get("bbox_format")) in {"xyxy", "x1y1x2y2", "corners"}:
            bbox = [bbox[0], bbox[1], bbox[2] - bbox[0], bbox[3] - bbox[1]]
        if max((_payload.box_iou(bbox, r) for r in raw), default=0.0) < 0.5:
            out.append(f"box {k} {box['bbox']} matches no box of the raw bbox_file ([x, y, w, h] in pixels)")
    return out


_MAX_ROWS_PER_TOKEN = 10  # a token naming more rows (a split, a site) says nothing about this sample


def _path_tails(path: Path) -> set[str]:
    """The trailing sub-paths of a source path, normalised: a label table often keys its rows by a path
    relative to some folder of the dataset (``patient/series``, ``train/p1/view.png``, with or without the
    extension), not by one file or folder name. Each tail ends at the file or at its folder, so a middle
    folder alone (a split, a site) is never a key."""
    parts = [p for p in path.parts if p not in {"", "/", "."}]
    if len(parts) < 2:
        return set()
    stem = [*parts[:-1], path.stem]
    tails = set()
    for k in range(len(parts) - 1):
        for seq in (parts[k:], stem[k:], parts[k:-1]):
            if len(seq) >= 2:
                tails.add(norm_token("/".join(seq)))
    return tails


def sample_keys(source: str, subjects: Iterable[str] = ()) -> set[str]:
    """The normalised cell values a label-table row may name a sample by: its file's stem and name, its
    folder's name, the trailing sub-paths of its path (`_path_tails`) and its subject ids.

    Args:
        source: The sample's source path (relative to the dataset root, or as the manifest gives it).
        subjects: Subject ids written for it (missing values such as ``"unknown"`` are left out).

    Returns:
        The keys (`norm_token` values; never ``""`` or ``"data"``).
    """
    path = Path(source)
    keys = {norm_token(path.stem), norm_token(path.name), norm_token(path.parent.name)}
    keys |= _path_tails(path)
    keys |= {norm_token(s) for s in subjects if nonmissing(s)}
    return keys - {"", "data"}


def rows_naming_sample(dataset_root: Path, keys: Iterable[str]) -> list[int]:
    """The rows of `validator._tables.label_tables` with a cell equal to one of ``keys`` (`sample_keys`),
    a key naming more than ``_MAX_ROWS_PER_TOKEN`` rows left out (a split or a site names no sample).

    Args:
        dataset_root: The dataset folder (its ``data/`` holds the tables).
        keys: Normalised cell values.

    Returns:
        Row numbers into ``label_tables(dataset_root)``, ascending.
    """
    index = _tables.label_index(dataset_root)
    rows: set[int] = set()
    for key in keys:
        hits = index.by_cell.get(key, ())
        if len(hits) <= _MAX_ROWS_PER_TOKEN:
            rows.update(hits)
    return sorted(rows)


def table_rows_naming(dataset_root: Path, keys: Iterable[str]) -> list[tuple[list[str], list[str] | None]]:
    """The label-table rows `rows_naming_sample` finds, as raw cells, each with the header of its table when
    the first row of the run of rows as wide as it reads as column names (no number, no file name).

    Args:
        dataset_root: The dataset folder.
        keys: Normalised cell values (`sample_keys`).

    Returns:
        ``(cells, header or None)`` per row, in table order.
    """
    tables = _tables.label_tables(dataset_root)
    out = []
    for at in rows_naming_sample(dataset_root, keys):
        width, first = len(tables[at]), at
        while first > 0 and len(tables[first - 1]) == width:
            first -= 1
        header = [c.strip() for c in tables[first]] if first < at else None
        if header is not None and (not all(header) or any(_VALUE_LIKE.search(c) for c in header)):
            header = None
        out.append(([c.strip() for c in tables[at]], header))
    return out


# A number or a file name is a record's value, never a column name.
_VALUE_LIKE = re.compile(r"^-?\d+(\.\d+)?$|\.[A-Za-z][A-Za-z0-9]{1,4}$")


def _label_evidence(sample: SampleView, names: dict[str, str]) -> set[str]:
    """Class keys whose name the raw evidence supports: folder/file names of the source, a table row that
    names the source file, its case folder or the sample's subject id (CSV/TSV/TXT/JSON under ``data/``), or
    the source's own row when it is a table of images."""
    src = source_value(sample) or (sample.entry.relpath if sample.entry else "")
    parts = [norm_token(p) for p in str(src).replace("\\", "/").split("/")]
    tokens = {norm_token(name): key for key, name in names.items() if norm_token(name)}
    found = {tokens[p] for p in parts if p in tokens}
    if found or sample.dataset_root is None or not src:
        return found
    subject = [sample.get(SUBJECT_ID), sample.extra.get("subject_id")]
    keys = sample_keys(str(src), [s for s in subject if isinstance(s, str)])
    index = _tables.label_index(sample.dataset_root)
    for at in rows_naming_sample(sample.dataset_root, keys):
        found |= {tokens[c] for c in index.rows[at] if c in tokens}
    if not found:
        codes = _tables.label_codes(sample.dataset_root)
        # a column whose ids are exactly the class table's keys numbers the classes the same way
        same = {c for c, ids in codes.columns.items() if ids <= set(names) and len(ids) == len(names)}
        hits = {code for k in keys for c, code in codes.by_cell.get(k, ()) if c in same}
        if len(hits) == 1:  # one code: the class id itself
            found |= hits
    source, _ = declared_source(sample)
    row = read_options(sample).get("index")
    if not found and source is not None and isinstance(row, int):
        # a stacked container's per-record label member (``labels[k]``) names the class id directly
        facts = _raw.source_facts(source, {})
        for member, values in _raw.id_columns(source, facts.keys).items():
            if _raw.is_label_member(member) and 0 <= row < len(values):
                found |= {values[row]} & set(names)
    if not found and source is not None and source.suffix.lower() == ".parquet":
        row = read_options(sample).get("index") or 0
        row_cells = _tables.table_row_cells(source, int(row))
        found |= {tokens[c] for c in map(norm_token, row_cells) if c in tokens}
    return found


@check(
    "label_in_class_table",
    weight=0.05,
    fields=("tasks.classification.label", "tasks.classification.label_name"),
    high_risk=True,
)
def label_in_class_table(sample: SampleView) -> CheckResult:
    """label is a key of the class table, label_name its value, and the raw evidence (folder name, label
    table) does not name a different class."""
    fields = ("tasks.classification.label", "tasks.classification.label_name")
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    if active_task(sample) != "classification":
        return CheckResult.ok()
    branch = sample.block("tasks.classification")
    table, label = class_table(branch), branch.get("label")
    if not isinstance(table, dict):
        return CheckResult.fail('tasks.classification.class_names must be a table {"0": name, ...}', fields)
    if isinstance(label, bool) or not table_has_id(table, label):
        return CheckResult.fail(f"label {label!r} is not a key of class_names ({sorted(table)})", fields)
    name = table[str(label).strip()]
    if norm_text(branch.get("label_name")) != norm_text(name):
        return CheckResult.fail(
            f"label_name {branch.get('label_name')!r} should be class_names[{label}] = {name!r}", fields
        )
    # The evidence is asked before the id's type: a string id that also names the wrong class is a wrong
    # label first (score 0), not only a format slip (0.5).
    evidence = _label_evidence(sample, {str(k): str(v) for k, v in table.items()})
    if evidence and str(label).strip() not in evidence:
        named = ", ".join(f"{k}={table[k]!r}" for k in sorted(evidence))
        return CheckResult.fail(
            f"label {label} ({name!r}) contradicts the raw evidence, which names {named} "
            "(source folder or label table)",
            fields,
            evidence=sorted(evidence),
        )
    if not isinstance(label, int):  # SPEC §2.2: label (int); "1" is a string id
        return CheckResult.fail(f"label {label!r} must be an integer id, not a string", fields, score=0.5)
    return CheckResult.ok(fields)


@check("class_table_consistent", weight=0.03, fields=("tasks",))
def class_table_consistent(sample: SampleView) -> CheckResult:
    """The class table equals the one most samples of this candidate use (a dataset has one class list)."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, ("tasks",))
    task = active_task(sample)
    if task not in ALLOWED_TASKS or sample.peers is None:
        return CheckResult.ok()
    mine = class_table(sample.block(f"tasks.{task}"))
    common = _common_table(sample.peers, task)
    if mine is None or common is None or mine == common:
        return CheckResult.ok()
    return CheckResult.fail(
        f"tasks.{task} class table {mine} differs from the one the other samples use "
        f"({common}); use one class list for the dataset",
        (f"tasks.{task}",),
        score=0.3,
    )


def _common_table(peers: list[SampleView], task: str) -> dict[str, Any] | list[Any] | None:
    """The class table a strict majority of (at least three) peers use, computed once per peer list."""
    memo = peers[0].memo if peers else {}
    key = f"common_table:{task}:{id(peers)}"
    if key not in memo:
        tables = [t for p in peers if active_task(p) == task and (t := class_table(p.block(f"tasks.{task}")))]
        common = None
        if len(tables) >= 3:
            counts = _table_counts(tables)
            best = max(range(len(tables)), key=counts.__getitem__)  # the first most frequent, as max() picks
            if counts[best] * 2 > len(tables):
                common = tables[best]
        memo[key] = common
    result: dict[str, Any] | list[Any] | None = memo[key]
    return result


def _table_counts(tables: list[dict[str, Any] | list[Any]]) -> list[int]:
    """For each table, how many tables equal it (linear time when the tables are hashable)."""
    try:
        keys = [frozenset(t.items()) if isinstance(t, dict) else tuple(t) for t in tables]
        tally = Counter(keys)
    except TypeError:  # a value is unhashable (a nested list): compare pairwise
        return [sum(1 for u in tables if u == t) for t in tables]
    return [tally[k] for k in keys]


def _modality_matches(declared: str, evidence: str) -> bool:
    d = norm_modality(declared)
    return (
        d == evidence
        or d in _MODALITY_SYNONYMS.get(evidence, set())
        or norm_token(declared) in _MODALITY_SYNONYMS.get(evidence, set())
    )


@check("modality_matches_source", weight=0.03, fields=(MODALITY_PRIMARY,), high_risk=True)
def modality_matches_source(sample: SampleView) -> CheckResult:
    """modality_primary agrees with the DICOM Modality / MetaImage / NIfTI hint, else
    with data_meta's modalities."""
    field = MODALITY_PRIMARY
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, (field,))
    declared = sample.get(field)
    path, _ = declared_source(sample)
    facts = _raw.source_facts(path, read_options(sample)) if path is not None else None
    code = (facts.modality or "").upper() if facts is not None and facts.ok else ""
    if code in _DICOM_MODALITY:
        if _modality_matches(str(declared), _DICOM_MODALITY[code]):
            return CheckResult.ok((field,))
        return CheckResult.fail(
            f"{field} is {declared!r} but the source header says Modality {code}", (field,)
        )
    listed = sample.dataset_modalities
    if listed and not any(norm_modality(declared) == norm_modality(m) for m in listed):
        return CheckResult.fail(
            f"{field} {declared!r} is none of the dataset's modalities {listed} "
            "(data_meta.modality_primary); fix one of them",
            (field,),
            score=0.3,
        )
    return CheckResult.ok((field,))

"""Checks that go back to the raw evidence: the declared source, its re-rendered pixels, its header, the mask,
boxes and labels against the written image and the class table. None of them reads ground truth.

A source path is resolved inside the dataset root before anything opens it; a path that escapes (``..``,
absolute, a symlink out) fails `source_in_dataset` and every other check treats the source as unavailable.
"""

from __future__ import annotations

import posixpath
import stat
from collections import Counter
from pathlib import Path
from typing import Any

from validator import _raw
from validator._values import (
    ALLOWED_TASKS,
    SPATIAL_BRANCH_BY_DIM,
    nonmissing,
    norm_dim,
    norm_modality,
    norm_text,
    norm_token,
)
from validator.checks.mdsbench import active_task, class_table, table_has_id
from validator.registry import check
from validator.report import CheckResult
from validator.sample import SampleView, image_facts, stat_path

SOURCE = "context.sample.extra.source_file"
SIBLING_KEYS = ("label_file", "mask_file", "seg_file", "bbox_file", "image_file", "source_image")
# DICOM Modality codes (PS3.3 C.7.3.1.1.1) → the benchmark's normalised modality tokens.
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


def _rel(value: str) -> str:
    return posixpath.normpath(value.strip().replace("\\", "/").lstrip("./")) if value.strip() else ""


def declared_source(sample: SampleView) -> tuple[Path | None, str]:
    """The declared source resolved inside the dataset, or None with the reason (never opens an escaping
    path)."""
    if "declared_source" not in sample.memo:
        sample.memo["declared_source"] = _declared_source(sample)
    result: tuple[Path | None, str] = sample.memo["declared_source"]
    return result


def _declared_source(sample: SampleView) -> tuple[Path | None, str]:
    value = sample.extra.get("source_file")
    if not isinstance(value, str) or not nonmissing(value):
        return None, f"{SOURCE} is missing"
    if sample.dataset_root is None:
        return None, "no dataset folder given, the source cannot be checked"
    path = sample.dataset_path(value)
    if path is None:
        return None, f"{SOURCE} {value!r} points outside the dataset; use a path relative to the dataset root"
    if stat_path(path) is None:
        return None, f"{SOURCE} {value!r} does not exist under the dataset"
    return path, ""


def read_options(sample: SampleView) -> dict[str, Any]:
    """medio.read options the candidate declared: container key/index, frame, volume (a fresh dict)."""
    if "read_options" not in sample.memo:
        sample.memo["read_options"] = _read_options(sample)
    return dict(sample.memo["read_options"])


def _read_options(sample: SampleView) -> dict[str, Any]:
    extra = sample.extra
    read = extra.get("read")
    declared: dict[str, Any] = read if isinstance(read, dict) else {}
    opts: dict[str, Any] = {k: declared.get(k) for k in ("key", "index", "frame", "series", "volume")}
    for name, keys in (
        ("key", ("source_key", "key", "dataset_key", "h5_key", "mat_key", "npz_key", "variable")),
        ("index", ("source_index", "record_index", "stack_index", "page_index", "row_index")),
        ("volume", ("volume_index",)),
    ):
        for k in keys:
            if (
                opts.get(name) is None
                and extra.get(k) is not None
                and not isinstance(extra.get(k), dict | list)
            ):
                opts[name] = extra[k]
    dim = norm_dim(sample.get("media_geometry.media.dimension"))
    frame = sample.get("media_geometry.spatial.video.frame_index")
    if opts.get("frame") is None and dim == "video" and isinstance(frame, int):
        opts["frame"] = frame
    return {k: v for k, v in opts.items() if v is not None}


def read_target(sample: SampleView, path: Path) -> Path:
    """What to read for the declared source: a 3D sample declared by one DICOM file of a series reads its
    folder
    (``extra.source_sample_dir`` when declared inside the dataset, else the file's parent)."""
    dim = norm_dim(sample.get("media_geometry.media.dimension"))
    if dim != "3d" or not _is_file(path) or path.suffix.lower() not in {".dcm", ".dicom", ""}:
        return path
    if _raw.source_facts(path, {}).axes.startswith("Z"):
        return path  # a multi-frame (enhanced) DICOM is a volume on its own
    folder = sample.dataset_path(sample.extra.get("source_sample_dir"))
    if folder is not None and folder.is_dir() and path.resolve().is_relative_to(folder):
        return folder
    siblings = [p for p in path.parent.iterdir() if p.suffix.lower() == path.suffix.lower()][:2]
    return path.parent if len(siblings) > 1 else path


def _is_file(path: Path) -> bool:
    st = stat_path(path)
    return st is not None and stat.S_ISREG(st.st_mode)


def image_alternates(sample: SampleView, path: Path) -> list[Path]:
    """Files the image may have been rendered from when the declared source is the label map (kits-style
    manifests list ``segmentation.nii``): a declared ``extra.image_file`` or same-format files beside it."""
    out: list[Path] = []
    declared = sample.dataset_path(sample.extra.get("image_file") or sample.extra.get("source_image"))
    if declared is not None and declared.is_file():
        out.append(declared)
    labels = {_rel(v) for k in SIBLING_KEYS[:3] if isinstance(v := sample.extra.get(k), str)}
    if _rel(str(sample.extra.get("source_file"))) in labels and path.is_file():
        suffix = "".join(path.suffixes[-2:]) if path.name.endswith(".gz") else path.suffix
        out += sorted(
            p for p in path.parent.iterdir() if p != path and p.name.endswith(suffix) and not p.is_symlink()
        )[:4]
    return out


@check("source_in_dataset", weight=0.10, fields=(SOURCE,), high_risk=True)
def source_in_dataset(sample: SampleView) -> CheckResult:
    """extra.source_file exists under the dataset and is the manifest's file (or a declared sibling of it)."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, (SOURCE,))
    path, error = declared_source(sample)
    if path is None:
        hint = f"; the manifest lists {sample.entry.relpath!r}" if sample.entry is not None else ""
        return CheckResult.fail(error + hint, (SOURCE,))
    if sample.entry is None:
        return CheckResult.ok((SOURCE,))
    declared = _rel(str(sample.extra["source_file"]))
    manifest = sample.entry.relpath
    siblings = {_rel(v) for k in SIBLING_KEYS if isinstance(v := sample.extra.get(k), str)}
    folder_of_manifest = manifest.startswith(declared.rstrip("/") + "/")
    if declared == manifest or manifest in siblings or folder_of_manifest:
        return CheckResult.ok((SOURCE,))
    return CheckResult.fail(
        f"{SOURCE} is {declared!r} but the manifest lists {manifest!r} for index "
        f"{sample.index}; use the manifest's file (or declare it as label_file/mask_file)",
        (SOURCE,),
        score=0.3,
    )


@check("source_fields_present", weight=0.04, fields=(SOURCE, "context.sample.extra.original_filename"))
def source_fields_present(sample: SampleView) -> CheckResult:
    """extra.source_file and original_filename are filled, and original_filename is the source's basename."""
    fields = (SOURCE, "context.sample.extra.original_filename")
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    src, orig = sample.extra.get("source_file"), sample.extra.get("original_filename")
    if not (isinstance(src, str) and nonmissing(src)):
        return CheckResult.fail(
            f"fill {SOURCE} with the raw file's path relative to the dataset root", fields
        )
    base = _rel(src).rsplit("/", 1)[-1]
    if not (isinstance(orig, str) and nonmissing(orig)):
        return CheckResult.fail(
            f"fill context.sample.extra.original_filename (here {base!r})", fields, score=0.5
        )
    if orig.strip() != base and _rel(orig) != _rel(src):
        return CheckResult.fail(
            f"original_filename {orig!r} is not the basename of source_file ({base!r})", fields, score=0.5
        )
    return CheckResult.ok(fields)


def _slice(sample: SampleView) -> tuple[int | None, int]:
    three = sample.block("media_geometry.spatial.three_d")
    index = three.get("slice_index")
    axis = three.get("slice_axis", 0)
    axis_num = (
        axis if isinstance(axis, int) else {"axial": 0, "coronal": 1, "sagittal": 2}.get(norm_text(axis), 0)
    )
    return (index if isinstance(index, int) and not isinstance(index, bool) else None), axis_num


@check(
    "source_renders_like_image",
    weight=0.10,
    fields=(
        SOURCE,
        "media_geometry.spatial.three_d.slice_index",
        "media_geometry.spatial.video.frame_index",
        "record.image_path",
    ),
    high_risk=True,
)
def source_renders_like_image(sample: SampleView) -> CheckResult:
    """The source re-rendered at the declared slice/frame correlates with the written image (NCC ≥
    threshold)."""
    fields = (
        SOURCE,
        "media_geometry.spatial.three_d.slice_index",
        "media_geometry.spatial.video.frame_index",
        "record.image_path",
    )
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    image = sample.image
    if image is None or not image.valid:
        return CheckResult.fail(
            f"no openable image for index {sample.index} to compare with the source", fields
        )
    path, error = declared_source(sample)
    if path is None:
        return CheckResult.fail(f"cannot compare with the source: {error}", fields)
    size = int(sample.option("ncc_size", 32))
    threshold = float(sample.option("ncc_threshold", 0.8))
    slice_index, axis = _slice(sample)
    written = _raw.written_small(image.path, size, image.digest)
    if written is None:
        return CheckResult.fail("the written image cannot be decoded", fields)
    options = read_options(sample)
    rendered = _raw.source_render(read_target(sample, path), options, slice_index, axis, size)
    if isinstance(rendered, str):
        return CheckResult.fail(
            f"{rendered}; declare the container key/index (extra.source_key/source_index) or fix source_file",
            fields,
            score=0.5,
        )
    r = _raw.ncc(rendered, written)
    for alt in image_alternates(sample, path) if r < threshold else []:
        other = _raw.source_render(alt, options, slice_index, axis, size)
        r = max(r, _raw.ncc(other, written)) if not isinstance(other, str) else r
    if r >= threshold:
        return CheckResult(1.0, "", fields, {"ncc": round(r, 4)})
    return CheckResult(
        max(0.0, r) * 0.5,
        f"the image does not look like {sample.extra.get('source_file')!r} at "
        f"slice {slice_index} / frame {read_options(sample).get('frame')} (NCC {r:.2f} < "
        f"{threshold}); re-render it from the declared source, slice and frame",
        fields,
        {"ncc": round(r, 4)},
    )


@check("dimension_matches_source", weight=0.05, fields=("media_geometry.media.dimension",), high_risk=True)
def dimension_matches_source(sample: SampleView) -> CheckResult:
    """The declared dimension matches the source array's rank and frame count (and the volume shape, if
    given)."""
    fields = ("media_geometry.media.dimension", "media_geometry.spatial.three_d.volume_shape_voxels")
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    path, error = declared_source(sample)
    if path is None:
        return CheckResult(1.0, "", fields, {"skipped": error})  # source_in_dataset already reports it
    facts = _raw.source_facts(read_target(sample, path), read_options(sample))
    if not facts.ok:
        return CheckResult(1.0, "", fields, {"skipped": facts.error})
    declared = norm_dim(sample.get("media_geometry.media.dimension"))
    allowed = _source_dims(facts)
    if declared not in allowed:
        return CheckResult.fail(
            f"media.dimension is {declared!r} but the source ({facts.format}, axes "
            f"{facts.axes}, shape {list(facts.shape)}) is {' or '.join(sorted(allowed))}",
            fields,
        )
    shape = sample.get("media_geometry.spatial.three_d.volume_shape_voxels")
    numbers = [int(s) for s in shape if isinstance(s, int | float)] if isinstance(shape, list) else []
    expected = list(facts.shape[:3])
    if declared == "3d" and facts.axes.startswith("Z") and shape is not None and numbers != expected:
        return CheckResult.fail(
            f"three_d.volume_shape_voxels {shape} differs from the source's {expected} (z, h, w)",
            fields,
            score=0.5,
        )
    return CheckResult.ok(fields)


def _source_dims(facts: _raw.SourceFacts) -> set[str]:
    if facts.axes.startswith("T") or (facts.format == "video"):
        return {"video"}
    multi = facts.n_frames is not None and facts.n_frames > 1
    if facts.axes.startswith("Z") and facts.shape and facts.shape[0] > 1:
        return {"3d", "video"} if facts.format == "dicom" and multi else {"3d"}
    if multi and facts.format in {"dicom", "gif", "tiff", "nifti"}:
        return {
            "2d",
            "3d",
            "video",
        }  # one decoded frame of a multi-frame source: either reading is defensible
    return {"2d"}


def _active_spatial(sample: SampleView) -> tuple[str | None, dict[str, Any]]:
    branch = SPATIAL_BRANCH_BY_DIM.get(norm_dim(sample.get("media_geometry.media.dimension")))
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
    """The label map exists, has the image's size, and holds only ids from the class table."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, ("tasks.segmentation",))
    if active_task(sample) != "segmentation":
        return CheckResult.ok()
    branch = sample.block("tasks.segmentation")
    payload: dict[str, Any] = next(
        (branch[k] for k in ("coco_2d", "mask_3d", "video_coco") if isinstance(branch.get(k), dict)), {}
    )
    field = "tasks.segmentation.mask_path"
    mask_rel = payload.get("mask_path")
    path = sample.candidate_path(mask_rel)
    facts = image_facts(path)
    if facts is None or not facts.valid:
        why = "points outside the output folder" if mask_rel and path is None else "does not open as a PNG"
        return CheckResult.fail(
            f"segmentation mask_path {mask_rel!r} {why}; write the label map to "
            f"masks/{sample.index}.png and reference it",
            (field,),
        )
    image = sample.image
    if image is not None and image.valid and image.size != facts.size:
        return CheckResult.fail(
            f"mask is {facts.size[0]}×{facts.size[1]} but the image is "  # type: ignore[index]
            f"{image.size[0]}×{image.size[1]}; render the mask at the image's size",  # type: ignore[index]
            (field,),
        )
    ids = _raw.mask_ids(facts)
    table = class_table(branch)
    if ids is None or table is None:
        return CheckResult.fail(
            "the mask cannot be decoded or tasks.segmentation.classes is empty",
            (field, "tasks.segmentation.classes"),
        )
    unknown = [v for v in ids if not table_has_id(table, v)]
    if unknown:
        return CheckResult.fail(
            f"mask ids {unknown} are not in tasks.segmentation.classes ({sorted(map(str, table))})",
            (field, "tasks.segmentation.classes"),
        )
    return CheckResult.ok((field,), ids=ids)


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
        return (
            CheckResult.ok()
            if branch.get("boxes3d") or branch.get("frame_boxes2d")
            else CheckResult.fail(
                f"{field} is missing; write COCO boxes [x, y, w, h] in image pixels", (field,)
            )
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
        if bw <= 0 or bh <= 0:
            problems.append(f"box {k} has non-positive size {bw}×{bh}")
        if w is not None and h is not None and (x < -0.5 or y < -0.5 or x + bw > w + 0.5 or y + bh > h + 0.5):
            problems.append(f"box {k} {bbox} leaves the {w}×{h} image")
        cid = box.get("category_id")
        if table is None or not table_has_id(table, cid):
            problems.append(f"box {k} category_id {cid!r} is not in tasks.detection.class_names")
        elif isinstance(table, dict) and box.get("category_name") not in (None, table.get(str(cid))):
            problems.append(f"box {k} category_name {box.get('category_name')!r} is not class_names[{cid}]")
    if problems:
        return CheckResult(
            1 - len(problems) / (len(problems) + len(boxes) + 1), "; ".join(problems[:4]), (field,)
        )
    return CheckResult.ok((field,))


def _label_evidence(sample: SampleView, names: dict[str, str]) -> set[str]:
    """Class keys whose name the raw evidence supports: folder/file names of the source, or a table row naming
    it."""
    src = sample.extra.get("source_file") or (sample.entry.relpath if sample.entry else "")
    parts = [norm_token(p) for p in str(src).replace("\\", "/").split("/")]
    tokens = {norm_token(name): key for key, name in names.items() if norm_token(name)}
    found = {tokens[p] for p in parts if p in tokens}
    stem = norm_token(Path(str(src)).stem)
    if not found and sample.dataset_root is not None and stem:
        index = _raw.label_index(sample.dataset_root)
        for cells in index.rows_naming(stem, norm_token(Path(str(src)).name)):
            found |= {tokens[c] for c in cells if c in tokens}
    return found


@check(
    "label_in_class_table",
    weight=0.05,
    fields=("tasks.classification.label", "tasks.classification.label_name"),
    high_risk=True,
)
def label_in_class_table(sample: SampleView) -> CheckResult:
    """label is a key of the class table, label_name its value, and the raw evidence (folder name, label
    table)
    does not name a different class."""
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
    evidence = _label_evidence(sample, {str(k): str(v) for k, v in table.items()})
    if evidence and str(label).strip() not in evidence:
        named = ", ".join(f"{k}={table[k]!r}" for k in sorted(evidence))
        return CheckResult.fail(
            f"label {label} ({name!r}) contradicts the raw evidence, which names {named} "
            "(source folder or label table)",
            fields,
            evidence=sorted(evidence),
        )
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


@check("modality_matches_source", weight=0.03, fields=("context.sample.modality_primary",), high_risk=True)
def modality_matches_source(sample: SampleView) -> CheckResult:
    """modality_primary agrees with the DICOM Modality / MetaImage / NIfTI hint, else with data_meta's
    modalities."""
    field = "context.sample.modality_primary"
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

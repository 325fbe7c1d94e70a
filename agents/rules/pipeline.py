"""The per-sample standardization of the rules baseline: read, pick the plane, render, map labels and boxes.

Every choice goes through the candidate's `Decider` (named decision points, see docs/agents.md), so the same
code produces the argmax answer at temperature 0 and plausible alternatives at temperature > 0.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import medio
from agents.rules.boxes import detection_boxes
from agents.rules.classify import LabelPlan, sample_label, table_subject
from agents.rules.context import DatasetContext
from agents.rules.decisions import Decider, Hypothesis
from agents.rules.source import (
    container_shapes,
    image_key_hypotheses,
    mask_candidates,
    mask_key_hypotheses,
    read_target_hypotheses,
    stem,
    subject_hypotheses,
)
from agents.rules.tables import join, sample_ids
from agents.rules.vocab import DICOM_MODALITY
from agents.rules.writer import SampleResult
from medio.sniff import has_suffix

log = logging.getLogger(__name__)

__all__ = ["DatasetPlan", "Rendered", "standardize_sample"]


@dataclass
class DatasetPlan:
    """Dataset-level decisions shared by every sample of a candidate.

    Attributes:
        task: The task type.
        labels: The classification label plan (classification only).
        det_classes: Detection class names in id order (ids start at 1).
        seg_classes: Segmentation class names by id (0 = background), grown as samples reveal ids.
        anatomy: ``anatomical_structure`` entries.
        dataset_name: ``record.dataset_name`` (the documented name, else the folder id).
    """

    task: str
    dataset_name: str = ""
    labels: LabelPlan | None = None
    det_classes: list[str] = field(default_factory=list)
    seg_classes: dict[int, str] = field(default_factory=dict)
    anatomy: list[str] = field(default_factory=list)


@dataclass
class Rendered:
    """What one sample produced: the decisions in output terms, and the pixels to write."""

    result: SampleResult
    image: np.ndarray
    mask: np.ndarray | None


def _spatial_shape(image: medio.MedImage) -> tuple[int, ...]:
    axes = image.meta.axes or ""
    shape = image.array.shape
    if axes.endswith("C"):
        shape = shape[:-1]
    if axes.startswith("T"):
        shape = shape[1:]
    return tuple(int(s) for s in shape)


def _dimension(image: medio.MedImage) -> str:
    meta = image.meta
    if meta.format == "video" or (meta.axes or "").startswith("T"):
        return "video"
    spatial = _spatial_shape(image)
    return "3D" if len(spatial) >= 3 and spatial[0] > 1 else "2D"


def _record_index(ctx: DatasetContext, rel: str, occurrence: int) -> tuple[int | None, str | None]:
    """The record of a file several manifest lines share: the row of an index table, else the occurrence."""
    if ctx.sources.count(rel) < 2:
        return None, None
    name = rel.rsplit("/", 1)[-1]
    for table in ctx.tables:
        found = join(table, {name: 3.0})
        if found is None or len(found.rows) < 2:
            continue
        row = found.rows.iloc[min(occurrence, len(found.rows) - 1)]
        index_col = next(
            (c for c in found.rows.columns if str(c).lower() in ("index", "row", "record", "idx")), None
        )
        id_col = next(
            (c for c in found.rows.columns if "id" in str(c).lower() or "case" in str(c).lower()), None
        )
        index = int(float(row[index_col])) if index_col is not None else occurrence
        return index, (str(row[id_col]) if id_col is not None else None)
    return occurrence, None


def _read(
    ctx: DatasetContext, rel: str, *, key: str | None = None, index: int | None = None
) -> medio.MedImage:
    return medio.read(ctx.root / rel, key=key, index=index)


def _choose_image(
    ctx: DatasetContext, plan: DatasetPlan, rel: str, index: int, occurrence: int, decider: Decider
) -> tuple[medio.MedImage, str, str | None, str | None, str | None]:
    """Read the sample's image. Returns ``(image, read path, mask path, mask key, record id)``."""
    target = decider.choose("read_target", read_target_hypotheses(ctx.files, rel), index)
    mask_rel: str | None = None
    if plan.task == "segmentation" and ctx.files.is_annotation(rel):
        folder, ext = rel.rsplit("/", 1)[0], rel.rsplit(".", 1)[-1]
        siblings = [
            f
            for f in ctx.files.files
            if f.rsplit("/", 1)[0] == folder
            and f != rel
            and has_suffix(f, "." + ext)
            and not ctx.files.is_annotation(f)
        ]
        hyps = [
            Hypothesis((s, rel), 2.5, "the image beside the listed label volume", s) for s in siblings[:2]
        ]
        hyps.append(Hypothesis((rel, rel), 0.6, "the listed label volume itself", rel))
        target, mask_rel = decider.choose("label_source_image", hyps, index)
    record, record_id = _record_index(ctx, rel, occurrence)
    image = _read(ctx, target, index=record)
    keys = image.meta.keys or []
    mask_key: str | None = None
    if len(keys) > 1:
        shapes = container_shapes(ctx.root / target)
        key = decider.choose(
            "image_key", image_key_hypotheses(keys, shapes) or [Hypothesis(keys[0], 1.0)], index
        )
        if key != image.meta.header.get("key"):
            image = _read(ctx, target, key=key, index=record)
        mask_keys = mask_key_hypotheses(keys, shapes)
        if plan.task == "segmentation" and mask_keys:
            mask_key = decider.choose("mask_key", mask_keys, index)
    # Declare how the image was read so the validator (and a person) can re-render it from the source.
    image.meta.header["_rules_read"] = {
        k: v
        for k, v in (("key", image.meta.header.get("key") if len(keys) > 1 else None), ("index", record))
        if v is not None
    }
    return image, target, mask_rel, mask_key, record_id


def _frame_table_row(ctx: DatasetContext, rel: str) -> Any:
    for table in ctx.tables:
        if not any(str(c).lower() == "frame" for c in table.frame.columns):
            continue
        found = join(table, sample_ids(rel))
        if found is not None:
            return table, found.rows.iloc[0]
    return None


def _find_mask(
    ctx: DatasetContext,
    rel: str,
    target: str,
    image: medio.MedImage,
    mask_rel: str | None,
    mask_key: str | None,
    index: int,
    decider: Decider,
) -> tuple[np.ndarray | None, medio.MedImage | None, str | None]:
    """Locate and read the label map matching the image's spatial shape."""
    shape = _spatial_shape(image)
    if mask_key is not None:
        mask = _read(ctx, target, key=mask_key)
        return mask.array, mask, rel
    hyps: list[Hypothesis[str]] = []
    if mask_rel is not None:
        hyps.append(Hypothesis(mask_rel, 3.0, "the listed label volume", mask_rel))
    frame_row = _frame_table_row(ctx, rel)
    if frame_row is not None:
        table, row = frame_row
        mask_col = next((c for c in row.index if "mask" in str(c).lower()), None)
        if mask_col is not None:
            base = table.relpath.rsplit("/", 1)[0]
            for cand in (f"{base}/{row[mask_col]}", f"data/{row[mask_col]}"):
                if cand in ctx.files.files:
                    hyps.append(Hypothesis(cand, 3.5, "named by the frame table", cand))
    exclude = set(ctx.sources) - {rel}
    hyps += mask_candidates(ctx.files, rel, exclude=exclude)
    if not hyps:
        return None, None, None
    first = decider.choose("mask_file", hyps, index)
    ordered = [first] + [h.value for h in hyps if h.value != first]
    for cand in ordered[:4]:
        try:
            mask = _read(ctx, cand)
        except medio.MedioError as exc:
            log.debug("mask candidate %s unreadable: %s", cand, exc)
            continue
        mshape = _spatial_shape(mask)
        if mshape == shape or mshape == shape[-2:]:
            return mask.array, mask, cand
    return None, None, None


def _choose_plane(
    image: medio.MedImage,
    dim: str,
    plan: DatasetPlan,
    mask: np.ndarray | None,
    rel: str,
    ctx: DatasetContext,
    index: int,
    decider: Decider,
) -> tuple[int | None, int | None]:
    """Pick ``(slice index, frame index)`` by the documented rule, as a decision point."""
    if dim == "video":
        n = image.array.shape[0]
        hyps = [Hypothesis(n // 2, 1.0, "the middle frame", "middle")]
        row = _frame_table_row(ctx, rel)
        if row is not None:
            col = next(c for c in row[1].index if str(c).lower() == "frame")
            with contextlib.suppress(TypeError, ValueError):
                hyps.append(
                    Hypothesis(int(float(row[1][col])), 3.0, "the frame table's frame", "frame_table")
                )
        return None, decider.choose("frame", hyps, index)
    if dim != "3D":
        return None, None
    z = _spatial_shape(image)[0]
    hyps = [
        Hypothesis(
            z // 2, 2.5 if plan.task != "segmentation" or mask is None else 0.8, "the middle slice", "middle"
        )
    ]
    if mask is not None and mask.ndim >= 3:
        k = medio.choose_slice(mask.shape, 0, mask)
        hyps.append(Hypothesis(k, 3.0, "the largest-foreground slice of the mask", "largest_foreground"))
    return decider.choose("slice", hyps, index), None


def _mask_plane(mask_img: medio.MedImage, k: int | None, frame: int | None) -> np.ndarray:
    arr = mask_img.array
    if arr.ndim >= 3 and mask_img.meta.axes.endswith("C"):
        arr = arr[..., 0]
    if arr.ndim >= 3:
        arr = arr[k if k is not None else arr.shape[0] // 2]
    plane = medio.render(np.asarray(arr), label=True).pixels
    values = set(np.unique(plane).tolist())
    if values <= {0, 255}:  # 8-bit binary masks store foreground as 255
        plane = (plane > 0).astype(np.uint8)
    return plane


def _modality(ctx: DatasetContext, image: medio.MedImage, index: int, decider: Decider) -> str:
    code = (image.meta.modality or "").strip().upper()
    # A code the benchmark has no name for (RTIMAGE, OT, SR ...) is still the header's statement: keep it.
    dicom = DICOM_MODALITY.get(code, code) if code else None
    arr = image.array
    hu_like = bool(arr.dtype.kind in "if" and arr.size and float(arr.min()) < -500.0)
    hyps = ctx.modality_hypotheses(dicom, hu_like, image.meta.format)
    return decider.choose("modality", hyps, index)


def standardize_sample(
    ctx: DatasetContext, plan: DatasetPlan, index: int, rel: str, occurrence: int, decider: Decider
) -> Rendered:
    """Standardize one manifest sample (``rel``, ``data/...``; ``occurrence``: how many earlier manifest lines
    name the same file): its result and pixels.

    Raises:
        medio.MedioError: The raw file cannot be read or rendered.
        ValueError: The sample cannot be standardized (e.g. no mask of the image's shape).
    """
    image, target, mask_rel, mask_key, record_id = _choose_image(ctx, plan, rel, index, occurrence, decider)
    dim = _dimension(image)
    mask = mask_img = None
    mask_file = None
    if plan.task == "segmentation":
        mask, mask_img, mask_file = _find_mask(ctx, rel, target, image, mask_rel, mask_key, index, decider)
    k, frame = _choose_plane(image, dim, plan, mask, rel, ctx, index, decider)
    shown = medio.render(image, slice_index=k, frame=frame)
    pixels = shown.pixels
    w, h = int(pixels.shape[1]), int(pixels.shape[0])
    meta = image.meta
    spacing = [float(s) for s in (meta.spacing or ())]
    result = SampleResult(
        index=index,
        dataset_name=plan.dataset_name or ctx.name,
        source_file=rel,
        subject_id="NA",
        modality=_modality(ctx, image, index, decider),
        anatomy=plan.anatomy,
        task=plan.task,
        dimension=dim,
        image_size=(w, h),
    )
    if dim == "3D":
        shape = _spatial_shape(image)
        result.volume_shape = [int(s) for s in shape[:3]]
        result.voxel_spacing = list(reversed(spacing[-3:])) if len(spacing) >= 3 else None
        result.spacing = result.voxel_spacing[:2] if result.voxel_spacing else None
        result.slice_index = shown.info.get("slice_index")
    elif dim == "video":
        result.n_frames = meta.n_frames or int(image.array.shape[0])
        result.fps = meta.fps
        result.frame_index = shown.info.get("frame")
    elif len(spacing) >= 2:
        result.spacing = [spacing[-1], spacing[-2]]
    mask_plane = None
    label_word = None
    row_subject: str | None = None
    join_value = record_id
    if plan.task == "segmentation":
        if mask_img is None:
            raise ValueError(
                f"{rel}: no label map with the image's shape {list(_spatial_shape(image))} was found"
            )
        mask_plane = _mask_plane(mask_img, result.slice_index, result.frame_index)
        if mask_plane.shape[:2] != pixels.shape[:2]:
            raise ValueError(
                f"{rel}: mask plane {list(mask_plane.shape)} differs from image {list(pixels.shape)}"
            )
        ids = sorted(int(v) for v in np.unique(mask_plane))
        _grow_seg_classes(ctx, plan, mask_file or rel, rel, max([*ids, 0]))
        result.classes = {str(i): n for i, n in sorted(plan.seg_classes.items())}
        result.label_values = ids
        if mask_file:
            result.sibling_files = {"label_file": mask_file, "mask_file": mask_file}
            if mask_file == rel:
                result.sibling_files["seg_file"] = rel
    elif plan.task == "detection":
        boxes, box_file, names = detection_boxes(ctx, plan.det_classes, rel, image, (w, h), index, decider)
        result.boxes = boxes
        result.classes = {str(i + 1): n for i, n in enumerate(names)}
        if box_file:
            result.sibling_files = {"bbox_file": box_file}
    elif plan.labels is not None:
        value, found, label_word = sample_label(
            ctx,
            plan.labels,
            rel,
            patient_id=meta.header.get("PatientID") or _patient(meta),
            occurrence=occurrence,
            header=meta.header,
        )
        row_subject = table_subject(found, occurrence)
        classes = list(plan.labels.classes)
        if value is not None and value not in classes:
            classes.append(value)
            plan.labels.classes = tuple(classes)
        result.classes = {str(i): n for i, n in enumerate(plan.labels.classes)}
        result.label = classes.index(value) if value is not None else None
        if found is not None and join_value is None:
            join_value = found.value
    patient = _patient(meta)
    result.subject_id = decider.choose(
        "subject_id",
        subject_hypotheses(
            rel,
            patient_id=patient,
            join_value=join_value,
            mask=mask_file if mask_file != rel else None,
            label_word=label_word,
            table_subject=row_subject,
        ),
        index,
    )
    if mask_file == rel or ctx.sources.count(rel) > 1 or stem(rel).lower() in ("im0001",):
        result.extra["case_id"] = result.subject_id
    read = meta.header.get("_rules_read") or {}
    if "key" in read:
        result.extra["source_key"] = read["key"]
    if "index" in read:
        result.extra["record_index"] = read["index"]
    if mask_file == rel and target != rel:
        result.extra["image_file"] = target
    elif target != rel:
        # Asked of the disk, not of the name: NBIA names series folders "1.000000-NA-28547", with a dot.
        result.extra["source_sample_dir"] = (
            target if (ctx.root / target).is_dir() else target.rsplit("/", 1)[0]
        )
    return Rendered(result, pixels, mask_plane)


def _patient(meta: medio.Meta) -> str | None:
    value = meta.header.get("PatientID") or meta.header.get("patient_id")
    return str(value) if value else None


def _grow_seg_classes(ctx: DatasetContext, plan: DatasetPlan, mask_file: str, rel: str, max_id: int) -> None:
    if not plan.seg_classes:
        plan.seg_classes = {0: "background"}
        named = next((m for m in ctx.class_maps if len(m) > 1), None) or next(
            iter(ctx.code_maps.values()), None
        )
        if named:
            plan.seg_classes.update({int(k): v for k, v in named.items() if int(k) != 0})
        else:
            words = ctx.mask_words(mask_file, rel) or ctx.object_words()
            for i, word in enumerate(words[: max(max_id, 1)], start=1):
                plan.seg_classes[i] = word
    for i in range(1, max_id + 1):
        plan.seg_classes.setdefault(i, f"class_{i}")

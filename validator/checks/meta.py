"""Checks on the candidate's dataset-level ``data_meta.json`` (scope "meta").

The first six are the reference S3 ``meta_score`` (used to choose which candidate's metadata to keep); the
count checks compare the totals with the manifest and with the images actually written.
"""

from __future__ import annotations

from typing import Any

from validator._raw import source_facts
from validator.registry import check
from validator.report import CheckResult
from validator.sample import MetaView
from validator.values import ALLOWED_TASKS, nonmissing, norm_text


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _no_meta(view: MetaView, field: str) -> CheckResult:
    return CheckResult.fail(f"{view.error}; write data_meta.json as a JSON object", (field,))


@check("meta_dataset_name", weight=1.0, fields=("data_meta.dataset_name",), scope="meta")
def meta_dataset_name(view: MetaView) -> CheckResult:
    """data_meta.dataset_name is filled."""
    if view.meta is None:
        return _no_meta(view, "data_meta.dataset_name")
    if nonmissing(view.meta.get("dataset_name")):
        return CheckResult.ok(("data_meta.dataset_name",))
    return CheckResult.fail("fill data_meta.dataset_name", ("data_meta.dataset_name",))


@check("meta_modality", weight=1.0, fields=("data_meta.modality_primary",), scope="meta")
def meta_modality(view: MetaView) -> CheckResult:
    """data_meta.modality_primary is filled (a list with a real value)."""
    if view.meta is None:
        return _no_meta(view, "data_meta.modality_primary")
    if nonmissing(view.meta.get("modality_primary")):
        return CheckResult.ok(("data_meta.modality_primary",))
    return CheckResult.fail('fill data_meta.modality_primary, e.g. ["CT"]', ("data_meta.modality_primary",))


@check("meta_task_type", weight=1.0, fields=("data_meta.task_type",), scope="meta", high_risk=True)
def meta_task_type(view: MetaView) -> CheckResult:
    """data_meta.task_type lists at least one of classification / segmentation / detection."""
    if view.meta is None:
        return _no_meta(view, "data_meta.task_type")
    value = view.meta.get("task_type")
    items = value if isinstance(value, list) else [value]
    if any(norm_text(t) in ALLOWED_TASKS for t in items):
        return CheckResult.ok(("data_meta.task_type",))
    return CheckResult.fail(
        f"data_meta.task_type {value!r} names no allowed task ({', '.join(ALLOWED_TASKS)})",
        ("data_meta.task_type",),
    )


@check("meta_data_volume", weight=1.0, fields=("data_meta.data_volume.total",), scope="meta")
def meta_data_volume(view: MetaView) -> CheckResult:
    """data_meta.data_volume is an object with a numeric total."""
    if view.meta is None:
        return _no_meta(view, "data_meta.data_volume.total")
    dv = view.meta.get("data_volume")
    if isinstance(dv, dict) and _number(dv.get("total")):
        return CheckResult.ok(("data_meta.data_volume.total",))
    return CheckResult.fail(
        "data_meta.data_volume must be an object with a numeric total", ("data_meta.data_volume.total",)
    )


@check("meta_valid_image_n", weight=1.0, fields=("data_meta.valid_image_n.total",), scope="meta")
def meta_valid_image_n(view: MetaView) -> CheckResult:
    """data_meta.valid_image_n is an object with a numeric total."""
    if view.meta is None:
        return _no_meta(view, "data_meta.valid_image_n.total")
    vi = view.meta.get("valid_image_n")
    if isinstance(vi, dict) and _number(vi.get("total")):
        return CheckResult.ok(("data_meta.valid_image_n.total",))
    return CheckResult.fail(
        "data_meta.valid_image_n must be an object with a numeric total", ("data_meta.valid_image_n.total",)
    )


@check("meta_num_classes", weight=1.0, fields=("data_meta.num_classes_per_task",), scope="meta")
def meta_num_classes(view: MetaView) -> CheckResult:
    """data_meta.num_classes_per_task is a non-empty object."""
    if view.meta is None:
        return _no_meta(view, "data_meta.num_classes_per_task")
    value = view.meta.get("num_classes_per_task")
    if isinstance(value, dict) and value:
        return CheckResult.ok(("data_meta.num_classes_per_task",))
    return CheckResult.fail(
        'fill data_meta.num_classes_per_task, e.g. {"segmentation": {"num_classes": 2}}',
        ("data_meta.num_classes_per_task",),
    )


@check(
    "meta_total_matches_manifest",
    weight=1.0,
    fields=("data_meta.data_volume.total",),
    scope="meta",
    high_risk=True,
)
def meta_total_matches_manifest(view: MetaView) -> CheckResult:
    """data_volume.total equals the number of manifest samples, or the number whose source can be decoded.

    A manifest may list files no reader decodes (a codec without a plugin, a truncated file); an output that
    skips them honestly and counts only what it standardized is as valid as one that counts the manifest. The
    raw data is the evidence: a sample counts as undecodable only when nothing was written for it and `medio`
    fails on its manifest source.
    """
    field = "data_meta.data_volume.total"
    if view.meta is None:
        return _no_meta(view, field)
    dv = view.meta.get("data_volume")
    total = dv.get("total") if isinstance(dv, dict) else None
    expected = len(view.manifest_indices)
    if _number(total) and total == expected:
        return CheckResult.ok((field,))
    decodable = expected - _undecodable_skipped(view)
    if decodable != expected and _number(total) and total == decodable:
        return CheckResult.ok((field,))
    also = f" ({decodable} with a decodable source)" if decodable != expected else ""
    return CheckResult.fail(
        f"{field} is {total!r} but the manifest has {expected} samples{also}; set it to {expected}",
        (field,),
        expected=expected,
    )


def _undecodable_skipped(view: MetaView) -> int:
    """Manifest samples with no annotation written whose raw source `medio` cannot read."""
    n = 0
    for sample in view.samples.values():
        if sample.annotation is not None or sample.entry is None or sample.dataset_root is None:
            continue
        source = sample.dataset_path(sample.entry.relpath)
        if source is not None and not source_facts(source, {}).ok:
            n += 1
    return n


@check(
    "meta_valid_images_match",
    weight=1.0,
    fields=("data_meta.valid_image_n.total",),
    scope="meta",
    high_risk=True,
)
def meta_valid_images_match(view: MetaView) -> CheckResult:
    """valid_image_n.total equals the number of manifest samples whose image opens."""
    field = "data_meta.valid_image_n.total"
    if view.meta is None:
        return _no_meta(view, field)
    vi = view.meta.get("valid_image_n")
    total = vi.get("total") if isinstance(vi, dict) else None
    expected = view.n_valid_images
    if _number(total) and total == expected:
        return CheckResult.ok((field,))
    return CheckResult.fail(
        f"{field} is {total!r} but {expected} images open; set it to {expected}", (field,), expected=expected
    )

"""The 14 schema checks behind g_i (SPEC §3.3), in the reference scorer's order."""

from __future__ import annotations

from typing import Any

from benchmark.score import constants as C
from benchmark.score.normalize import (
    as_dict,
    is_placeholder,
    nonmissing,
    norm_dim,
    norm_full_path,
    norm_text,
    round4,
)
from benchmark.score.source import sample_block


def _fmt_list(fmt: dict[str, Any], key: str) -> list[str]:
    value = fmt.get(key)
    return list(value) if isinstance(value, list) else list(C.SCHEMA_DEFAULTS.get(key, []))


_DESC_SUFFIXES = ("__desc", "__options")
_CONTAINERS = (dict, list)


def _has_desc_keys(node: Any) -> bool:
    # Any key, at any depth, ending in a template suffix. Plain loops that descend only into containers:
    # this walks every annotation in full and was the scorer's most expensive check as nested generators.
    if isinstance(node, dict):
        for k, v in node.items():
            if (k if type(k) is str else str(k)).endswith(_DESC_SUFFIXES):
                return True
            if isinstance(v, _CONTAINERS) and _has_desc_keys(v):
                return True
    elif isinstance(node, list):
        for v in node:
            if isinstance(v, _CONTAINERS) and _has_desc_keys(v):
                return True
    return False


def _is_empty_branch(value: Any, key: str) -> bool:
    return value is None or is_placeholder(value, key)


def schema_checks(ann: dict[str, Any], fmt: dict[str, Any]) -> dict[str, bool]:
    """Run the 14 checks on one annotation.

    Args:
        ann: A parsed annotation object.
        fmt: The GT ``format`` block (missing keys fall back to the reference defaults).

    Returns:
        ``{check name: passed}`` in the reference order.
    """
    record = as_dict(ann.get("record"))
    sample = sample_block(ann)
    # Checks 7-8 read context.sample.extra as written (no subject_id copy-in, unlike the content scores).
    extra = as_dict(sample.get("extra"))
    media_geometry = as_dict(ann.get("media_geometry"))
    media = as_dict(media_geometry.get("media"))
    spatial = as_dict(media_geometry.get("spatial"))
    tasks = as_dict(ann.get("tasks"))
    image_path = record.get("image_path")

    dim = norm_dim(media.get("dimension"))
    branch = C.SPATIAL_BRANCH_BY_DIM.get(dim)
    task = norm_text(media.get("task_type"))
    required_by_task = as_dict(fmt.get("task_required_fields"))
    task_fields = required_by_task.get(task) or C.SCHEMA_DEFAULTS["task_required_fields_default"]
    task_branch = tasks.get(task)
    extra_any = _fmt_list(fmt, "extra_required_any")
    extra_nonmissing = _fmt_list(fmt, "extra_non_missing_fields")

    def media_ok(key: str) -> bool:
        value = media.get(key)
        return bool(norm_dim(value)) if key == "dimension" else bool(norm_text(value))

    def sample_ok(key: str) -> bool:
        return isinstance(sample.get(key), dict) if key == "extra" else nonmissing(sample.get(key))

    checks = {
        "top_level_blocks": all(isinstance(ann.get(b), dict) for b in _fmt_list(fmt, "top_level_blocks")),
        "record_required": all(nonmissing(record.get(k)) for k in _fmt_list(fmt, "record_required")),
        "record_image_path_rel": isinstance(image_path, str)
        and norm_full_path(image_path).startswith("images/"),
        "context_sample_required": all(sample_ok(k) for k in _fmt_list(fmt, "context_sample_required")),
        "sample_required_fields": all(
            nonmissing(sample.get(k)) for k in _fmt_list(fmt, "sample_required_fields")
        ),
        "sample_non_missing_fields": all(
            k in sample and sample[k] is not None for k in _fmt_list(fmt, "sample_non_missing_fields")
        ),
        "extra_required_any": not extra_any or any(nonmissing(extra.get(k)) for k in extra_any),
        "extra_non_missing_fields": not extra_nonmissing
        or any(nonmissing(extra.get(k)) for k in extra_nonmissing),
        "media_required": all(
            media_ok(k) for k in _fmt_list(fmt, "media_required") or ["task_type", "dimension"]
        ),
        "forbidden_desc_options": not _has_desc_keys(ann),
        "spatial_branch_selected": branch is not None
        and isinstance(spatial.get(branch), dict)
        and bool(spatial[branch]),
        "spatial_branch_exclusive": branch is not None
        and all(_is_empty_branch(spatial.get(b), b) for b in C.SPATIAL_BRANCH_BY_DIM.values() if b != branch),
        "task_branch_required": task in C.ALLOWED_TASKS
        and isinstance(task_branch, dict)
        and bool(task_branch)
        and all(nonmissing(task_branch.get(f)) for f in task_fields),
        "task_branch_exclusive": all(_is_empty_branch(tasks.get(t), t) for t in C.ALLOWED_TASKS if t != task),
    }
    return checks


def schema_score(checks: dict[str, bool]) -> float:
    """g_i: the mean of the 14 booleans, rounded to 4 decimals."""
    return round4(sum(checks.values()) / len(checks)) if checks else 0.0

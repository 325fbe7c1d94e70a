"""Dataset-level metadata scores MSV, MSC, MCF from ``data_meta.json`` (SPEC §3.6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmark.score import constants as C
from benchmark.score.normalize import (
    as_dict,
    is_number,
    is_placeholder,
    mean,
    nonmissing,
    norm_modality,
    norm_text,
    round4,
)


@dataclass(frozen=True)
class MetaScores:
    """MSV (schema validity), MSC (semantic correctness), MCF (content fidelity), 4-decimal; ``reason`` on
    failure.
    """

    msv: float = 0.0
    msc: float = 0.0
    mcf: float = 0.0
    reason: str | None = None


@dataclass(frozen=True)
class ImageCounts:
    """Counts MCF compares data_meta against."""

    n_image_exists: int
    n_image_valid: int
    n_pair_valid: int


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _required_ok(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, str):
        return value.strip().lower() not in C.MISSING_TOKENS
    if isinstance(value, list):
        return any(nonmissing(v) for v in value)
    return True


def meta_scores(
    meta: Any, gt: dict[str, Any], expected_task: str, counts: ImageCounts, *, reason: str | None = None
) -> MetaScores:
    """Score a parsed ``data_meta.json``.

    Args:
        meta: The parsed file (anything that is not a dict scores 0 everywhere).
        gt: The whole GT dict.
        expected_task: The dataset's expected task.
        counts: Image / pair counts over the GT indices.
        reason: Why ``meta`` is unusable, if the caller already knows (missing file, bad JSON).

    Returns:
        The three scores.
    """
    if not isinstance(meta, dict):
        return MetaScores(reason=reason or "data_meta.json is not a JSON object")
    spec: dict[str, Any] = as_dict(gt.get("data_meta_expected"))
    required = spec.get("required_keys") or list(C.META_DEFAULT_REQUIRED_KEYS)
    optional = spec.get("optional_but_recommended") or []
    dv_required = spec.get("data_volume_required_fields") or list(C.META_DEFAULT_DV_REQUIRED)
    volume = meta.get("data_volume")
    task_types = [norm_text(t) for t in _as_list(meta.get("task_type"))]

    msv_parts = [_required_ok(meta.get(k)) for k in required]
    msv_parts.append(isinstance(volume, dict))
    msv_parts += [isinstance(volume, dict) and not is_placeholder(volume.get(f), f) for f in dv_required]
    msv_parts.append(any(t in C.ALLOWED_TASKS for t in task_types))
    msv_parts += [nonmissing(meta.get(k)) for k in optional]

    gt_name = norm_text(gt.get("dataset_name"))
    content = as_dict(gt.get("content"))
    name = norm_text(meta.get("dataset_name"))
    modalities = _as_list(meta.get("modality_primary"))
    per_task = meta.get("num_classes_per_task")
    task_block = per_task.get(expected_task) if isinstance(per_task, dict) else None
    n_classes = task_block.get("num_classes") if isinstance(task_block, dict) else None
    gt_classes: Any = gt.get("classes") if isinstance(gt.get("classes"), list) else []
    msc_parts = [
        bool(name) and name == gt_name,
        bool(modalities) and norm_modality(modalities[0]) == norm_modality(gt.get("modality_primary")),
        expected_task in task_types,
        bool(name) and name == norm_text(content.get("expected_dataset_name")),
        isinstance(n_classes, int) and not isinstance(n_classes, bool) and n_classes == len(gt_classes),
    ]

    mcf_parts: list[bool] = []
    total: Any = volume.get("total") if isinstance(volume, dict) else None
    mcf_parts.append(is_number(total))
    if is_number(total):
        strict_equals = as_dict(spec.get("strict_equals"))
        want: Any = strict_equals.get("data_volume.total", gt.get("expected_count"))
        mcf_parts.append(is_number(want) and float(total) == float(want))
    valid_n = meta.get("valid_image_n")
    mcf_parts.append(isinstance(valid_n, dict))
    valid_total: Any = valid_n.get("total") if isinstance(valid_n, dict) else None
    if isinstance(valid_n, dict):
        mcf_parts.append(is_number(valid_total))
    if is_number(valid_total):
        mcf_parts += [
            valid_total == counts.n_image_valid,
            valid_total <= counts.n_image_exists,
            valid_total <= counts.n_pair_valid,
        ]
    return MetaScores(
        msv=round4(mean([float(x) for x in msv_parts])),
        msc=round4(mean([float(x) for x in msc_parts])),
        mcf=round4(mean([float(x) for x in mcf_parts])),
    )

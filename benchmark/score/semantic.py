"""Semantic score sem_i = 0.70·F + 0.10·P + 0.20·X (SPEC §3.3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmark.score import constants as C
from benchmark.score.fields import MatchOptions, block_score
from benchmark.score.normalize import (
    as_dict,
    nonmissing,
    norm_dim,
    norm_modality,
    norm_text,
    norm_token,
    round4,
)
from benchmark.score.source import get_extra, sample_block


@dataclass(frozen=True)
class ExpectedTask:
    """The task and dimension the GT expects for every sample of a dataset."""

    task: str
    dim: str


def expected_task(gt: dict[str, Any], samples: dict[str, Any]) -> ExpectedTask:
    """Expected task/dim from the first GT sample whose ``expected_tasks`` names an allowed task.

    Args:
        gt: The whole GT dict.
        samples: Its samples (index → sample).

    Returns:
        The task (``classification``/``segmentation``/``detection``) and dimension (``2d``/``3d``/``video``).
    """
    hint = norm_dim(gt.get("dimension"))
    for key in sorted(samples, key=lambda s: (0, int(s), s) if s.isdigit() else (1, 0, s)):
        tasks = as_dict(as_dict(samples[key]).get("expected_tasks"))
        for task, spec in tasks.items():
            if task in C.ALLOWED_TASKS:
                variant = norm_text(as_dict(spec).get("schema_variant"))
                if "3d" in variant:
                    return ExpectedTask(task, "3d")
                if "video" in variant:
                    return ExpectedTask(task, "video")
                return ExpectedTask(task, hint if hint in ("2d", "3d", "video") else "2d")
    task = norm_text(gt.get("task_type"))
    return ExpectedTask(task if task in C.ALLOWED_TASKS else "classification", hint or "2d")


def predicted_class(ann: dict[str, Any], task: str) -> str:
    """The class text the annotation states for the expected task (norm_token form)."""
    extra = get_extra(ann)
    branch = as_dict(as_dict(ann.get("tasks")).get(task))
    fallback = extra.get("label_text") or extra.get("class_name") or extra.get("label_name")
    if task == "classification":
        return norm_token(branch.get("label_name") or extra.get("label_text") or extra.get("class_name"))
    table = branch.get("classes") or branch.get("class_names")
    if isinstance(table, dict):
        names = [str(v) for v in table.values() if nonmissing(v) and norm_token(v) != "background"]
        if names:
            return norm_token("|".join(names))
    return norm_token(fallback)


# Where a detection or segmentation payload may be: keys of the task branch, then keys of extra.
_PAYLOAD_KEYS = {
    "detection": (("boxes2d", "boxes3d", "frame_boxes2d"), ("bbox_file",)),
    "segmentation": (("coco_2d", "mask_3d", "video_coco"), ("label_file", "mask_file", "seg_file")),
}


def payload_presence(ann: dict[str, Any], task: str) -> float:
    """P: mean presence of the expected task branch's payload items."""
    extra = get_extra(ann)
    branch = as_dict(as_dict(ann.get("tasks")).get(task))
    if task == "classification":
        items = [
            "label" in branch,
            nonmissing(branch.get("label_name") or extra.get("label_text") or extra.get("class_name")),
        ]
    else:
        in_branch, in_extra = _PAYLOAD_KEYS["detection" if task == "detection" else "segmentation"]
        values = [branch.get(k) for k in in_branch] + [extra.get(k) for k in in_extra]
        items = [
            nonmissing(branch.get("schema_variant")),
            nonmissing(branch.get("classes") or branch.get("class_names")),
            nonmissing(next((v for v in values if v), values[-1])),  # the value ``a or b or ...`` gives
        ]
    return sum(items) / len(items)


def semantic_score(
    ann: dict[str, Any],
    gt_sample: dict[str, Any],
    expected: ExpectedTask,
    content: dict[str, Any],
    opts: MatchOptions,
) -> float:
    """sem_i for one annotation.

    Args:
        ann: A parsed annotation object.
        gt_sample: Its GT sample.
        expected: The dataset's expected task and dimension.
        content: The GT ``content`` block (dataset-name matching mode).
        opts: Field-matcher options.

    Returns:
        sem_i rounded to 4 decimals.
    """
    record = as_dict(ann.get("record"))
    media = as_dict(as_dict(ann.get("media_geometry")).get("media"))
    extra = get_extra(ann)
    items: dict[str, float] = {
        "task": float(norm_text(media.get("task_type")) == expected.task),
        "dimension": float(norm_dim(media.get("dimension")) == expected.dim),
    }
    exp_modality = as_dict(gt_sample.get("expected_context_sample")).get("modality_primary")
    if nonmissing(exp_modality):
        got = norm_modality(sample_block(ann).get("modality_primary"))
        items["modality"] = float(got == norm_modality(exp_modality))
    exp_name = as_dict(gt_sample.get("expected_record")).get("dataset_name")
    if nonmissing(exp_name):
        got_name, want = norm_text(record.get("dataset_name")), norm_text(exp_name)
        if content.get("strict_dataset_name_match"):
            items["dataset_name"] = float(got_name == want)
        else:
            items["dataset_name"] = float(bool(got_name) and (got_name in want or want in got_name))
    exp_class = gt_sample.get("class")
    if nonmissing(exp_class):
        items["class"] = float(predicted_class(ann, expected.task) == norm_token(exp_class))
    exp_map = gt_sample.get("map_type")
    if nonmissing(exp_map):
        got_map = extra.get("map_type") or media.get("annotation_type") or media.get("map_type")
        items["map_type"] = float(norm_token(got_map) == norm_token(exp_map))
    weights = C.SEMANTIC_ITEM_WEIGHTS
    total_w = sum(weights[k] for k in items)
    f_score = sum(weights[k] * v for k, v in items.items()) / total_w if total_w else 0.0
    p_score = payload_presence(ann, expected.task)
    exp_tasks = as_dict(gt_sample.get("expected_tasks"))
    tasks = as_dict(ann.get("tasks"))
    if exp_tasks:
        x_score = sum(block_score(tasks.get(t), as_dict(spec), opts) for t, spec in exp_tasks.items()) / len(
            exp_tasks
        )
    else:
        x_score = p_score
    w = C.SEMANTIC_COMBINATION
    return round4(
        w["F_fields"] * f_score + w["P_payload_presence"] * p_score + w["X_payload_exact"] * x_score
    )

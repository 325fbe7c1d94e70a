"""S4's narrow field vote (SPEC §4), re-exported by `strategies.paper`.

Steps per index: the S3 choice is the base; ``task_type``/``dimension``/``annotation_type`` are voted with
each candidate weighing its score; the task and spatial branches come from the best-ranked candidate that
agrees with the vote (tiers below); extra.{source_file, original_filename, label_text, class_name} are
majority-voted (unweighted); the merge is re-validated and replaced by the best candidate when it scores more
than ``margin`` lower.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.fields import ANNOTATION_TYPE, DIMENSION, IMAGE_PATH, TASK_TYPE
from validator.checks.mdsbench import EXTRA_TRACE_KEYS, class_table, collect_ids, table_has_id
from validator.registry import Profile
from validator.report import Report
from validator.sample import SampleView
from validator.validate import validate_sample
from validator.values import (
    ALLOWED_DIMS,
    ALLOWED_TASKS,
    SPATIAL_BRANCH_BY_DIM,
    get_path,
    nonmissing,
    norm_dim,
    norm_text,
    set_path,
)

VOTED_FIELDS: dict[str, Callable[[Any], str]] = {
    TASK_TYPE: norm_text,
    DIMENSION: norm_dim,
    ANNOTATION_TYPE: norm_text,
}
_MIN_WEIGHT = 0.001
_ID_KEYS = frozenset({"label", "category_id", "class_id", "label_id"})
TIERS = (
    "same_task_same_dimension_valid_branch",
    "same_task_valid_branch",
    "same_task_nonempty_branch",
    "any_json_fallback",
)


@dataclass
class VoteResult:
    """S4's outcome for one index."""

    index: int
    decision: str
    base_candidate: str | None
    best_score: float = 0.0
    voted_score: float = 0.0
    final_score: float = 0.0
    field_votes: dict[str, dict[str, Any]] = field(default_factory=dict)
    branch_selection: dict[str, Any] = field(default_factory=dict)
    extra_voting: dict[str, dict[str, Any]] = field(default_factory=dict)
    id_type_changes: list[dict[str, Any]] = field(default_factory=list)
    image_from: str | None = None
    annotation: dict[str, Any] | None = None
    final_check_scores: dict[str, float] = field(default_factory=dict)
    image_path: Path | None = None


def vote_field(
    path: str,
    normalise: Callable[[Any], str],
    docs: Mapping[str, dict[str, Any]],
    scores: Mapping[str, float],
) -> dict[str, Any]:
    """Score-weighted vote of one field over candidates (insertion order = discovery order).

    Returns:
        ``{"voted", "winner_key", "winner_weight", "winner_value", "distribution": [...]}``; ``voted`` is
        False when no candidate has a value.
    """
    groups: dict[str, dict[str, Any]] = {}
    for name, doc in docs.items():
        value = get_path(doc, path)
        if not nonmissing(value):
            continue
        key = normalise(value)
        g = groups.setdefault(
            key, {"key": key, "weight": 0.0, "n": 0, "candidates": [], "_best": (-1.0, None)}
        )
        g["weight"] += max(scores[name], _MIN_WEIGHT)
        g["n"] += 1
        g["candidates"].append(name)
        if scores[name] > g["_best"][0]:
            g["_best"] = (scores[name], value)
    if not groups:
        return {"voted": False}
    ranked = sorted(groups.values(), key=lambda g: (round(g["weight"], 9), g["_best"][0]), reverse=True)
    winner = ranked[0]
    dist = [
        {"key": g["key"], "weight": round(g["weight"], 6), "n": g["n"], "candidates": g["candidates"]}
        for g in sorted(groups.values(), key=lambda g: round(g["weight"], 9), reverse=True)
    ]
    return {
        "voted": True,
        "winner_key": winner["key"],
        "winner_weight": round(winner["weight"], 6),
        "winner_value": winner["_best"][1],
        "distribution": dist,
    }


def branch_valid(task: str, branch: Any) -> bool:
    """A usable task branch: classification label in its class table; seg/det ids all in the class table."""
    if not isinstance(branch, dict) or not nonmissing(branch):
        return False
    table = class_table(branch)
    if table is None:
        return False
    if task == "classification":
        return "label" in branch and table_has_id(table, branch.get("label"))
    return all(table_has_id(table, v) for v in collect_ids(branch))


def pick_branch_source(
    ranked: Sequence[str], docs: Mapping[str, dict[str, Any]], task: str, dim: str
) -> tuple[str | None, str]:
    """The first candidate (best score first, discovery order on ties) of the highest tier it reaches."""

    def cand_task(n: str) -> str:
        return norm_text(get_path(docs[n], TASK_TYPE))

    def cand_dim(n: str) -> str:
        return norm_dim(get_path(docs[n], DIMENSION))

    tests: list[Callable[[str], bool]] = [
        lambda n: (
            cand_task(n) == task
            and cand_dim(n) == dim
            and branch_valid(task, get_path(docs[n], f"tasks.{task}"))
        ),
        lambda n: cand_task(n) == task and branch_valid(task, get_path(docs[n], f"tasks.{task}")),
        lambda n: cand_task(n) == task and nonmissing(get_path(docs[n], f"tasks.{task}")),
        lambda n: True,
    ]
    for tier, test in zip(TIERS, tests, strict=True):
        for name in ranked:
            if test(name):
                return name, tier
    return None, TIERS[-1]


def coerce_ids(node: Any, path: str, changes: list[dict[str, Any]]) -> Any:
    """Turn string/float class ids (``"1"``, ``1.0``) into ints in place, recording each change."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}"
            if key in _ID_KEYS and not isinstance(value, bool) and isinstance(value, str | float):
                try:
                    as_int = int(float(value))
                except ValueError:
                    continue
                if float(value) == as_int:
                    node[key] = as_int
                    changes.append({"field_path": here, "old": value, "new": as_int})
            else:
                coerce_ids(value, here, changes)
    elif isinstance(node, list):
        for k, value in enumerate(node):
            coerce_ids(value, f"{path}[{k}]", changes)
    return node


def vote_extra(docs: Mapping[str, dict[str, Any]], base: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Unweighted majority of the four trace fields (first seen wins ties); writes winners into ``base``."""
    out: dict[str, dict[str, Any]] = {}
    extra = get_path(base, "context.sample.extra")
    for key in EXTRA_TRACE_KEYS:
        votes: Counter[str] = Counter()
        for doc in docs.values():
            value = get_path(doc, f"context.sample.extra.{key}")
            if isinstance(value, str) and nonmissing(value):
                votes[value] += 1
        if not votes:
            continue
        winner = votes.most_common(1)[0][0]
        old = extra.get(key) if isinstance(extra, dict) else None
        if isinstance(extra, dict):
            extra[key] = winner
        out[key] = {"old": old, "new": winner, "n_votes": sum(votes.values())}
    return out


def vote_index(
    index: int,
    candidates: Sequence[Any],
    reports: Mapping[str, Report],
    base_name: str | None,
    *,
    entry: Any,
    dataset_root: Path | None,
    profile: Profile | str,
    margin: float,
    force_vote: bool,
) -> VoteResult:
    """Run S4 on one index (see the module docstring)."""
    docs: dict[str, dict[str, Any]] = {}
    scores: dict[str, float] = {}
    for c in candidates:
        rep = reports.get(c.name)
        if rep is None or index not in rep.samples:
            continue
        doc = SampleView(index, rep.candidate_dir).annotation
        if doc is not None:
            docs[c.name], scores[c.name] = doc, round(rep.samples[index].total, 6)
    if base_name is None or base_name not in docs:
        return VoteResult(index, "missing", None)
    best = scores[base_name]
    merged = copy.deepcopy(docs[base_name])
    result = VoteResult(index, "narrow_field_vote", base_name, best_score=best)
    for path, normalise in VOTED_FIELDS.items():
        vote = vote_field(path, normalise, docs, scores)
        allowed = {
            TASK_TYPE: ALLOWED_TASKS,
            DIMENSION: ALLOWED_DIMS,
        }
        if vote["voted"] and (path not in allowed or vote["winner_key"] in allowed[path]):
            set_path(merged, path, vote["winner_value"])
        elif vote["voted"]:
            vote["voted"] = False  # an invalid winner: keep the base's value
        result.field_votes[path] = {k: v for k, v in vote.items() if k != "winner_value"}
    task = norm_text(get_path(merged, TASK_TYPE))
    dim = norm_dim(get_path(merged, DIMENSION))
    ranked = [n for n, _ in sorted(scores.items(), key=lambda kv: kv[1], reverse=True)]
    source, tier = pick_branch_source(ranked, docs, task, dim)
    src = docs[source] if source is not None else merged
    if tier == TIERS[-1]:
        # The last tier adopts the source's own task and dimension.
        task = norm_text(get_path(src, TASK_TYPE))
        dim = norm_dim(get_path(src, DIMENSION))
        for path in (TASK_TYPE, DIMENSION):
            set_path(merged, path, get_path(src, path))
    tasks: dict[str, Any] = {t: {} for t in ALLOWED_TASKS}
    if task in ALLOWED_TASKS:
        tasks[task] = coerce_ids(
            copy.deepcopy(get_path(src, f"tasks.{task}") or {}), f"tasks.{task}", result.id_type_changes
        )
    merged["tasks"] = tasks
    spatial: dict[str, Any] = {b: {} for b in SPATIAL_BRANCH_BY_DIM.values()}
    branch = SPATIAL_BRANCH_BY_DIM.get(dim)
    if branch is not None:
        spatial[branch] = copy.deepcopy(get_path(src, f"media_geometry.spatial.{branch}") or {})
    set_path(merged, "media_geometry.spatial", spatial)
    result.branch_selection = {
        "branch_source": source,
        "selection_reason": tier,
        "final_task_type": task,
        "final_dimension": dim,
    }
    result.extra_voting = vote_extra(docs, merged)
    image_from, image = _image_source(index, reports, [source, base_name, *ranked])
    result.image_from, result.image_path = image_from, image
    if image is not None:
        set_path(merged, IMAGE_PATH, f"images/{index}{image.suffix.lower()}")
    view = SampleView(
        index,
        reports[image_from or base_name].candidate_dir,
        dataset_root,
        entry,
        preloaded=merged,
        image_override=image,
    )
    voted = validate_sample(view, profile)
    result.voted_score = round(voted.total, 6)
    if result.voted_score + margin < best and not force_vote:
        result.decision = "fallback_to_best_candidate"
        result.annotation, result.final_score = docs[base_name], best
        result.final_check_scores = reports[base_name].samples[index].scores()
        result.image_from, result.image_path = _image_source(index, reports, [base_name])
    else:
        result.annotation, result.final_score = merged, result.voted_score
        result.final_check_scores = voted.scores()
    return result


def _image_source(
    index: int, reports: Mapping[str, Report], order: Sequence[str | None]
) -> tuple[str | None, Path | None]:
    """The first candidate (in ``order``) whose image for ``index`` opens, and that image."""
    for name in order:
        if name is None or name not in reports:
            continue
        image = SampleView(index, reports[name].candidate_dir).image
        if image is not None and image.valid:
            return name, image.path
    return None, None

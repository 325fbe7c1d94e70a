"""S4's field vote (ours): a validator-score-weighted vote over canonicalised values of high-risk fields, and
the branch donor (the best candidate agreeing with the voted task and dimension)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmark.fields import DIMENSION as DIMENSION_PATH
from benchmark.fields import TASK_TYPE
from strategies.mechanics import get_path, set_path
from validator.values import norm_dim, norm_text, norm_token

__all__ = ["DIMENSION", "TASK", "FieldVote", "canonical", "merge_sample", "vote_field"]

TASK, DIMENSION = TASK_TYPE, DIMENSION_PATH  # the names this module has always exported
_MIN_WEIGHT = 0.001  # a candidate scoring 0 still breaks a tie between otherwise absent values

_CANON: dict[str, Callable[[Any], str]] = {DIMENSION: norm_dim, TASK: norm_text}


def canonical(path: str, value: Any) -> str:
    """The value a vote compares: dimensions folded (``2D`` = ``2d``), text tokenised."""
    if value is None or value == "" or value == {} or value == []:
        return ""
    return _CANON.get(path, norm_token)(value)


@dataclass
class FieldVote:
    """One field's vote on one sample.

    Attributes:
        path: The field path.
        winner: The canonical winning value ("" when no candidate had one).
        value: The original value written (from the best-scoring supporter).
        weights: Canonical value → summed validator totals.
    """

    path: str
    winner: str
    value: Any
    weights: dict[str, float] = field(default_factory=dict)


def vote_field(path: str, docs: Mapping[int, dict[str, Any]], scores: Mapping[int, float]) -> FieldVote:
    """Weighted vote of ``path`` over candidate documents (ties: the value of the best-scoring candidate)."""
    weights: dict[str, float] = {}
    best: dict[str, tuple[float, int]] = {}
    for k, doc in docs.items():
        key = canonical(path, get_path(doc, path))
        if not key:
            continue
        w = max(scores.get(k, 0.0), _MIN_WEIGHT)
        weights[key] = weights.get(key, 0.0) + w
        if key not in best or (w, -k) > (best[key][0], -best[key][1]):
            best[key] = (w, k)
    if not weights:
        return FieldVote(path, "", None, {})
    winner = max(weights, key=lambda v: (round(weights[v], 9), best[v][0], -best[v][1]))
    return FieldVote(
        path,
        winner,
        copy.deepcopy(get_path(docs[best[winner][1]], path)),
        {k: round(v, 6) for k, v in weights.items()},
    )


def donor_for(
    task: str, dim: str, docs: Mapping[int, dict[str, Any]], scores: Mapping[int, float], base: int
) -> int:
    """The best-scoring candidate whose task and dimension equal the voted ones (the base when none does)."""
    agreeing = [
        k
        for k, d in docs.items()
        if canonical(TASK, get_path(d, TASK)) == task
        and canonical(DIMENSION, get_path(d, DIMENSION)) == dim
        and get_path(d, f"tasks.{task}")
    ]
    return max(agreeing, key=lambda k: (scores.get(k, 0.0), -k)) if agreeing else base


def merge_sample(
    base_doc: dict[str, Any], donor_doc: dict[str, Any], votes: Sequence[FieldVote]
) -> dict[str, Any]:
    """The base annotation with the donor's task and spatial branches and the voted field values."""
    merged = copy.deepcopy(base_doc)
    if donor_doc is not base_doc:
        merged["tasks"] = copy.deepcopy(donor_doc.get("tasks"))
        set_path(
            merged, "media_geometry.spatial", copy.deepcopy(get_path(donor_doc, "media_geometry.spatial"))
        )
    for vote in votes:
        if vote.winner:
            set_path(merged, vote.path, vote.value)
    return merged

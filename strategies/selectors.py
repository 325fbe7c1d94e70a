"""Selection heuristics: given one manifest index and every candidate's validator report, pick one candidate.

A selector is any callable ``(index, candidates, reports, task) -> int`` returning a position in
``candidates``. Built-ins: ``validator_max`` (the paper's S3), ``majority``, ``random``, ``first``,
``consensus`` (`strategies.consensus`: validator total plus agreement with the other candidates) and
``oracle`` (ground truth, analysis only). Add yours with ``@selector("name")``, with
``strategy.selector._target_=my_pkg.my_selector``, or with an entry point in the ``medstrat.selectors`` group.
"""

from __future__ import annotations

import functools
import inspect
import logging
import random as _random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from agents.base import Candidate, Task
from core.registry import Registry, call_with_options, load_object
from strategies.base import SampleDecision, strategies
from strategies.choice import Choice
from strategies.fields import MAJORITY_FIELDS
from strategies.mechanics import get_path, no_output_reason, read_annotation
from validator.report import Report

__all__ = [
    "ON_ERROR",
    "ORACLE",
    "OracleNotAllowed",
    "Selector",
    "SelectorError",
    "build_selector",
    "choose",
    "first",
    "majority",
    "on_error_of",
    "oracle",
    "random",
    "selector",
    "selectors",
    "validator_max",
]

Selector = Callable[[int, Sequence[Candidate], Sequence[Report], Task], int | Choice]
ORACLE = "oracle"

log = logging.getLogger(__name__)

selectors: Registry[Selector] = Registry(
    "selector",
    entry_point_group="medstrat.selectors",
    lazy={
        "consensus": "strategies.consensus:consensus",
        "llm_judge": "strategies.judge:llm_judge",
        "hybrid": "strategies.judge:hybrid",
    },
)
"""Selectors by name."""


class OracleNotAllowed(ValueError):
    """The ``oracle`` selector reads ground truth; it runs only with ``analysis.oracle=true``."""


_F = TypeVar("_F", bound=Selector)


ON_ERROR = ("raise", "fallback")
"""``selector.on_error``: a selector that raises stops the run (``raise``, the default), or ``validator_max``
decides that sample and the fallback is counted (``fallback``)."""


class SelectorError(RuntimeError):
    """A selector raised (or returned no valid position) on a sample, under ``selector.on_error=raise``.

    The message is the one line the user sees: the selector, the dataset and sample, the exception, and the
    way to opt into the fallback. Built from strings only, so it crosses process borders (``run.processes``).

    Args:
        message: That line.
    """


class _Guarded:
    """A selector with its ``on_error`` policy (what `choose` does when it raises); calls pass through."""

    def __init__(self, inner: Selector, on_error: str) -> None:
        self.inner = inner
        self.on_error = on_error

    def __call__(
        self, index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task
    ) -> int | Choice:
        return self.inner(index, candidates, reports, task)


def _unguarded(sel: Selector) -> Selector:
    return sel.inner if isinstance(sel, _Guarded) else sel


def on_error_of(sel: Selector) -> str:
    """The selector's ``on_error`` policy (``raise`` unless it was built with ``fallback``)."""
    return sel.on_error if isinstance(sel, _Guarded) else "raise"


def selector(name: str | None = None) -> Callable[[_F], _F]:
    """Decorator registering a selector under ``name`` (default: the function name)."""
    # The decorated function keeps its own type (an ``int`` selector stays one for its callers).
    return cast(Callable[[_F], _F], selectors.register(name))


def _has_sample(cand: Candidate, index: int) -> bool:
    return read_annotation(cand.output_dir, index) is not None


@selector("validator_max")
def validator_max(index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task) -> int:
    """The candidate with the highest validator total; ties go to the better image, then the lower index."""

    def key(k: int) -> tuple[bool, float, float, int]:
        return (
            _has_sample(candidates[k], index),
            round(reports[k].sample_total(index), 6),
            reports[k].check_score(index, "image_path"),
            -k,
        )

    return max(range(len(candidates)), key=key)


def _signature(cand: Candidate, index: int) -> tuple[str, ...] | None:
    ann = read_annotation(cand.output_dir, index)
    if ann is None:
        return None
    return tuple(str(get_path(ann, f)).strip().lower() for f in MAJORITY_FIELDS)


@selector("majority")
def majority(index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task) -> int:
    """The best-validated candidate of the largest group agreeing on task, dimension, source and label."""
    sigs = {k: _signature(c, index) for k, c in enumerate(candidates)}
    counts = Counter(s for s in sigs.values() if s is not None)
    if not counts:
        return validator_max(index, candidates, reports, task)
    top = max(counts.values())
    members = [k for k, s in sigs.items() if s is not None and counts[s] == top]
    return max(members, key=lambda k: (round(reports[k].sample_total(index), 6), -k))


@selector("random")
def random(index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task) -> int:
    """A uniformly random candidate holding the sample, seeded by (seed, dataset, index)."""
    pool = [k for k, c in enumerate(candidates) if _has_sample(c, index)] or list(range(len(candidates)))
    return _random.Random(f"{task.seed}:{task.name}:{index}").choice(pool)


@selector("first")
def first(index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task) -> int:
    """The first candidate (by index) holding the sample: best-of-1 with a retry on a missing sample."""
    return next((k for k, c in enumerate(candidates) if _has_sample(c, index)), 0)


@functools.lru_cache(maxsize=4096)
def _oracle_scores(pred_dir: str, dataset_root: str, stamp: float) -> dict[str, tuple[float, ...]]:
    # Imported here: only the oracle reaches ground truth, and only through the scorer (DESIGN §2).
    from benchmark.score.dataset import e2e_pass
    from benchmark.score.evaluate import score_candidate

    scored = score_candidate(pred_dir, dataset_root, profile="official", unreadable_as_missing=True)
    return {
        s.index: (
            float(e2e_pass(s.to_dict())),
            s.source_score * s.content_fidelity_score,
            s.schema_valid_score * s.semantic_score,
        )
        for s in scored.per_sample
    }


@selector(ORACLE)
def oracle(index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task) -> int:
    """UPPER BOUND, reads ground truth: the candidate the scorer likes best (E2E, then SCJ, then SSC)."""

    def key(k: int) -> tuple[float, ...]:
        pred = candidates[k].output_dir
        stamp = max((p.stat().st_mtime for p in Path(pred).rglob("*.json")), default=0.0)
        return (*_oracle_scores(str(pred), str(task.root), stamp).get(str(index), (0.0, 0.0, 0.0)), -k)

    return max(range(len(candidates)), key=key)


def build_selector(
    spec: str | Mapping[str, Any] | Selector | None,
    *,
    allow_oracle: bool = False,
    on_error: str | None = None,
) -> Selector:
    """Turn a config value into a selector.

    Args:
        spec: A registered name; a mapping with ``_target_`` (an importable callable: a function is the
            selector itself, or a factory when further keys are given; a class is instantiated with them) or
            ``name``, and optionally ``on_error``; a callable; None for ``validator_max``.
        allow_oracle: Whether the ground-truth ``oracle`` may be used (``analysis.oracle=true``).
        on_error: `ON_ERROR` policy; overrides the mapping's ``on_error`` (default ``raise``).

    Returns:
        The selector (carrying its ``on_error`` policy when it is ``fallback``).

    Raises:
        UnknownNameError: An unknown name (the message lists the valid ones).
        OracleNotAllowed: ``oracle`` without ``allow_oracle``.
        ImportError: A ``_target_`` that cannot be imported.
        ValueError: An ``on_error`` that is not one of `ON_ERROR`.
    """
    if isinstance(spec, Mapping):
        on_error = on_error or spec.get("on_error")
        spec = {k: v for k, v in spec.items() if k != "on_error"}
    policy = str(on_error or "raise")
    if policy not in ON_ERROR:
        raise ValueError(f"selector.on_error={policy!r}: expected one of {', '.join(ON_ERROR)}")
    chosen = _build(spec, allow_oracle)
    return _Guarded(chosen, policy) if policy != "raise" else chosen


def _build(spec: str | Mapping[str, Any] | Selector | None, allow_oracle: bool) -> Selector:
    if spec is None:
        return validator_max
    if callable(spec):
        chosen: Selector = spec
    elif isinstance(spec, str):
        chosen = selectors.get(spec)
    else:
        options = {k: v for k, v in spec.items() if k not in ("_target_", "name")}
        target = spec.get("_target_")
        if target:
            obj = load_object(str(target))
            # A class or a factory (a function given options) is called; a bare function is the selector.
            chosen = call_with_options(obj, options, "selector") if (inspect.isclass(obj) or options) else obj
        else:
            chosen = selectors.get(str(spec.get("name") or "validator_max"))
    if is_oracle(chosen) and not allow_oracle:
        raise OracleNotAllowed(
            "the oracle selector reads ground truth: enable it with analysis.oracle=true "
            "(its results are an upper bound, never a strategy result)"
        )
    return chosen


def _nested_selector(value: str | Mapping[str, Any] | Selector | None) -> Selector:
    # The strategies' registry resolves a factory's ``selector`` option here; the oracle stays refused unless
    # the caller built it under ``analysis.oracle=true`` and hands the object over.
    return build_selector(value)


strategies.nest("selector", _nested_selector)


def choose(
    sel: Selector, task: Task, candidates: Sequence[Candidate], reports: Sequence[Report]
) -> dict[int, SampleDecision]:
    """Run ``sel`` on every manifest index.

    A selector that raises on an index (or returns no valid position) stops the run with `SelectorError`,
    unless it was built with ``on_error="fallback"``: then ``validator_max`` decides that index and the
    decision is marked ``fallback`` (counted in metrics.json, samples.jsonl, the table, the leaderboard).

    Args:
        sel: The selector.
        task: The dataset task.
        candidates: The candidates (at least one).
        reports: Their reports, same order.

    Returns:
        Per index, the decision (position, reason, score, fallback flag, every candidate's total).

    Raises:
        SelectorError: The selector failed on an index under ``on_error="raise"``.
    """
    name = selector_name(sel)
    policy = on_error_of(sel)
    out: dict[int, SampleDecision] = {}
    prefetch = getattr(sel, "prefetch", None)
    if callable(prefetch):
        # A selector that asks a model per sample (a judge) asks them all at once; what it could not ask
        # ahead it asks in the loop below, under the error policy.
        try:
            prefetch(candidates, reports, task)
        except Exception:
            log.warning("selector %s could not ask ahead for %s; asking per sample", name, task.name)
    for index in task.indices:
        totals = {str(k): round(r.sample_total(index), 6) for k, r in enumerate(reports)}
        extra: dict[str, Any] = {}
        try:
            answer = sel(index, candidates, reports, task)
            k = int(answer.candidate if isinstance(answer, Choice) else answer)
            if not 0 <= k < len(candidates):
                raise IndexError(f"returned position {k}, but there are {len(candidates)} candidates")
            reason, fallback = f"{name}: candidate {k}", False
            if isinstance(answer, Choice):
                # A selector that spent calls (a judge) says why, whether it fell back, and what it cost.
                reason, fallback = f"{name}: {answer.reason}", answer.fallback
                extra = {"judge": {**answer.details, "usage": answer.usage.to_dict()}}
                if answer.charged:
                    extra["judge"]["charged"] = True
        except Exception as exc:
            if policy == "raise":  # a broken plug-in must not be reported as a working one
                raise SelectorError(
                    f"selector {name} failed on {task.name} sample {index}: {type(exc).__name__}: {exc}; fix "
                    "it, or let validator_max decide such samples (counted) with selector.on_error=fallback"
                ) from exc
            # Counted, not shouted: the table and metrics.json carry the count (one line, not one per sample).
            log.info("selector %s failed on %s/%s (%s); using validator_max", name, task.name, index, exc)
            k = validator_max(index, candidates, reports, task)
            reason, fallback = f"{name} raised {type(exc).__name__}: {exc}; validator_max chose {k}", True
        if not _has_sample(candidates[k], index):
            why = no_output_reason(candidates, index, "no candidate wrote this sample")
            out[index] = SampleDecision(index, None, why, 0.0, fallback, {"totals": totals, **extra})
            continue
        out[index] = SampleDecision(
            index, k, reason, reports[k].sample_total(index), fallback, {"totals": totals, **extra}
        )
    return out


def is_oracle(sel: Selector) -> bool:
    """Whether ``sel`` is the ground-truth oracle."""
    return _unguarded(sel) is oracle


def selector_name(sel: Selector) -> str:
    """A display name for reports."""
    sel = _unguarded(sel)
    inner = sel.func if isinstance(sel, functools.partial) else sel
    return str(getattr(inner, "__name__", type(inner).__name__))

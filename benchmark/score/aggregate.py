"""Macro averaging over datasets, the paper's Avg and Weighted scores (SPEC §3.8)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from benchmark.score import constants as C


def _mean(values: Iterable[float]) -> float:
    """``statistics.mean(values)`` for floats, without its exact-fraction sum when there is one value.

    A model scored on one dataset (every row of the per-dataset CLI's table) has one value per metric:
    ``statistics.mean([x])`` is ``x`` exactly (``0.0`` for ``-0.0``), which ``x + 0.0`` gives in ~1 % of the
    time (2 ms of the CLI's 3 ms table for 28 models).
    """
    values = list(values)
    return values[0] + 0.0 if len(values) == 1 else statistics.mean(values)


def avg_11(metrics: Mapping[str, float]) -> float:
    """Avg: the unweighted mean of the eleven metrics."""
    return statistics.mean(float(metrics[k]) for k in C.METRIC_NAMES)


def weighted(metrics: Mapping[str, float]) -> float:
    """Weighted: .3·mean(SCJ,E2E) + .25·mean(IC,IV,INR,CF) + .2·SC + .15·mean(SV,SSC) + .1·mean(MSC,MSJ)."""
    return sum(w * statistics.mean(float(metrics[k]) for k in keys) for keys, w in C.MAIN_TABLE_WEIGHTS)


def usable(model_result: Mapping[str, Any] | None) -> bool:
    """Whether a model's dataset result enters the macro mean (present, not errored, with metrics)."""
    return bool(model_result) and not model_result.get("error") and bool(model_result.get("metrics"))  # type: ignore[union-attr]


def macro(
    results: Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any]],
    models: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Equal-weight mean of each metric over the datasets where a model was scored.

    A dataset where the model is absent or errored is skipped, not counted as 0 (as the reference main table
    does).

    Args:
        results: ``{dataset name: score_dataset(...) dict}`` (or an iterable of such dicts, named by their
            ``dataset`` key).
        models: Restrict to these models (default: every model seen).

    Returns:
        ``{"models": {model: {"n_datasets", "datasets", "metrics", "avg_11", "weighted"}}}``.
    """
    by_name = dict(results) if isinstance(results, Mapping) else {str(r.get("dataset")): r for r in results}
    seen: list[str] = []
    for res in by_name.values():
        for m in res.get("models", {}):
            if m not in seen:
                seen.append(m)
    wanted = list(models) if models is not None else sorted(seen)
    out: dict[str, Any] = {}
    for model in wanted:
        rows = [
            (name, res["models"][model]["metrics"])
            for name, res in by_name.items()
            if usable(res.get("models", {}).get(model))
        ]
        if not rows:
            out[model] = {"n_datasets": 0, "datasets": [], "metrics": {}, "avg_11": None, "weighted": None}
            continue
        # The eleven, then any extra metric (scorer.metrics) every scored dataset has; Avg stays the eleven's.
        extra = [k for k in rows[0][1] if k not in C.METRIC_NAMES and all(k in m for _, m in rows)]
        means = {k: _mean([float(m[k]) for _, m in rows]) for k in (*C.METRIC_NAMES, *extra)}
        out[model] = {
            "n_datasets": len(rows),
            "datasets": [name for name, _ in rows],
            "metrics": means,
            "avg_11": avg_11(means),
            "weighted": weighted(means),
        }
    return {"models": out}

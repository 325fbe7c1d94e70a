"""The dataset metrics as plug-ins: the eleven MDS-Bench metrics and any metric of one's own, in one registry.

A metric turns one dataset's per-sample records (and its metadata scores) into one number. The paper's
eleven (SPEC §3.7, `benchmark.score.constants.METRIC_NAMES`) are registered here with ``official=True``;
they are always computed, in that order. A further metric is registered the same way, by a package of one's
own (entry-point group ``medstrat.metrics``) or a module named in ``run.imports``, and computed when the
scoring rules name it (``scorer.metrics=[NAME]``, ``medstrat score --metric NAME``); it is written
after the eleven and never enters Avg or Weighted.

Example:
    >>> from benchmark.score.metrics import MetricInputs, metric
    >>> @metric("share_with_image")
    ... def share_with_image(data: MetricInputs) -> float:
    ...     '''The share of GT samples whose image exists.'''
    ...     return sum(r.image_exists for r in data.records) / len(data.records) if data.records else 0.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from benchmark.score import constants as C
from benchmark.score.metadata import MetaScores
from benchmark.score.normalize import mean
from benchmark.score.profiles import ScoringRules
from benchmark.score.sample import SampleScore
from core.registry import Registry, UnknownNameError

__all__ = [
    "METRICS",
    "MetricFn",
    "MetricInputs",
    "UnknownNameError",
    "check_names",
    "compute",
    "e2e_pass",
    "metric",
    "official_names",
]


@dataclass(frozen=True)
class MetricInputs:
    """What a metric may read about one model on one dataset (all of it already scored against the GT).

    Attributes:
        records: One per-sample record per GT index.
        meta: The dataset JSON's scores (MSV, MSC, MCF).
        expected_count: N of SV (GT ``expected_count``, else the number of GT samples).
        rules: The scoring rules in force.
        dims: The evaluator's dimensions (``schema_validity``, ``semantic``, ``content_fidelity``, ...).
    """

    records: list[SampleScore]
    meta: MetaScores
    expected_count: int
    rules: ScoringRules
    dims: Mapping[str, float | None]


MetricFn = Callable[[MetricInputs], float]
"""A metric: the inputs of one model on one dataset → one number."""

METRICS: Registry[MetricFn] = Registry("metric", entry_point_group="medstrat.metrics")
"""Every metric by name; the official eleven carry the metadata ``official=True``."""


def metric(name: str, *, official: bool = False) -> Callable[[MetricFn], MetricFn]:
    """Register a dataset metric under ``name``.

    Args:
        name: The metric's column name in results (``metrics[name]``).
        official: One of the paper's eleven (only this module declares those).

    Returns:
        The decorator; it returns the function unchanged.

    Raises:
        DuplicateNameError: Another metric already holds the name.
    """
    return METRICS.register(name, official=official)


def _dim(data: MetricInputs, key: str) -> float:
    return float(data.dims[key])  # type: ignore[arg-type]  # these dimensions are always numbers


def _geom3(*values: float) -> float:
    return math.prod(max(v, C.GEOM3_FLOOR) for v in values) ** (1.0 / len(values))


def e2e_pass(sample: SampleScore | Mapping[str, Any]) -> bool:
    """The E2E rule on one sample (SPEC §3.7): a valid pair, the source passed, and schema, semantic and
    content at or above their thresholds.

    Args:
        sample: A `SampleScore`, or its per-sample dict as written in eval results.

    Returns:
        Whether the sample counts as an end-to-end success.
    """
    t = C.E2E_THRESHOLDS
    if isinstance(sample, Mapping):
        values = {k: sample.get(k) for k in _E2E_FIELDS}
    else:
        values = {k: getattr(sample, k) for k in _E2E_FIELDS}
    return bool(values["pair_valid"]) and (
        float(values["source_score"] or 0) >= t["source_score_min"]
        and float(values["schema_valid_score"] or 0) >= t["schema_valid_score_min"]
        and float(values["semantic_score"] or 0) >= t["semantic_score_min"]
        and float(values["content_fidelity_score"] or 0) >= t["content_fidelity_score_min"]
    )


_E2E_FIELDS = ("pair_valid", "source_score", "schema_valid_score", "semantic_score", "content_fidelity_score")


def _dimension_metric(name: str, key: str, doc: str) -> None:
    """Register the evaluator's dimension ``key`` as the official metric ``name``."""

    def value(data: MetricInputs) -> float:
        return _dim(data, key)

    value.__name__ = value.__qualname__ = key
    value.__doc__ = doc
    metric(name, official=True)(value)


for _name, _key, _doc in (
    ("SV", "schema_validity", "SV: mean schema score g_i over the expected N."),
    ("SC", "semantic", "SC: the source-gated mean semantic score."),
    ("IC", "information_completeness", "IC: the source-gated mean completeness c_i."),
    ("IV", "information_validity", "IV: the source-gated mean validity d_i."),
    ("INR", "information_non_redundancy", "INR: the source-gated mean non-redundancy r_i."),
    ("CF", "content_fidelity", "CF: the source-gated mean content fidelity f_i."),
):
    _dimension_metric(_name, _key, _doc)


@metric("SSC", official=True)
def schema_semantic(data: MetricInputs) -> float:
    """SSC: mean of g_i · sem_i."""
    return mean([r.schema_valid_score * r.semantic_score for r in data.records])


@metric("MSC", official=True)
def meta_semantic(data: MetricInputs) -> float:
    """MSC: the dataset JSON's semantic correctness."""
    return data.meta.msc


@metric("MSJ", official=True)
def meta_joint(data: MetricInputs) -> float:
    """MSJ: the floored geometric mean of MSV, MSC, MCF, times CF."""
    return _geom3(data.meta.msv, data.meta.msc, data.meta.mcf) * _dim(data, "content_fidelity")


@metric("SCJ", official=True)
def source_content_joint(data: MetricInputs) -> float:
    """SCJ: mean of s_i · f_i."""
    return mean([r.source_score * r.content_fidelity_score for r in data.records])


@metric("E2E", official=True)
def end_to_end(data: MetricInputs) -> float:
    """E2E: the share of samples passing the end-to-end rule (`e2e_pass`)."""
    return mean([float(e2e_pass(r)) for r in data.records])


def official_names() -> tuple[str, ...]:
    """The eleven, in the paper's order (`METRIC_NAMES`), checked against what is registered as official."""
    # Looked up by name (no entry-point scan): an outside package cannot stand in for one of the eleven.
    missing = [n for n in C.METRIC_NAMES if not METRICS.meta(n).get("official")]
    if missing:
        raise RuntimeError(f"official metrics not registered as such: {', '.join(missing)}")
    return C.METRIC_NAMES


def check_names(names: Iterable[str]) -> tuple[str, ...]:
    """Extra metric names, each checked to be registered and not one of the eleven.

    Args:
        names: Metric names from the config (``scorer.metrics``) or the command line.

    Returns:
        The names, in order, without repeats.

    Raises:
        UnknownNameError: A name no metric holds (the message lists the valid ones).
        ValueError: One of the eleven named again (they are always computed).
    """
    out: list[str] = []
    for name in names:
        METRICS.get(name)
        if name in C.METRIC_NAMES:
            raise ValueError(f"metric {name!r} is one of the eleven (always computed); name extra ones only")
        if name not in out:
            out.append(name)
    return tuple(out)


def compute(data: MetricInputs, extra: Iterable[str] = ()) -> dict[str, float]:
    """The eleven metrics, then each extra one, by name.

    Args:
        data: The model's scored dataset.
        extra: Further registered metric names.

    Returns:
        ``{name: value}`` in the paper's order, the extra metrics after.

    Raises:
        UnknownNameError: An extra name no metric holds.
    """
    return {name: float(METRICS.get(name)(data)) for name in (*official_names(), *extra)}

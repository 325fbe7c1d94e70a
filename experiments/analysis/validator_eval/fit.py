"""Check weights learned from the truth, judged by the selection they make on datasets they never saw.

The weights are fitted for what S3 does with them: within one sample, rank a candidate that passes official
E2E above one that fails. Every such pair of candidates of a training sample gives the difference of their
check-score vectors ``d``; the non-negative weights ``w`` minimise the pairwise logistic loss
``mean(log(1 + exp(-d·w))) + lam·|w|²`` (L-BFGS-B with the bound ``w >= 0``, started from the base
profile's weights), then are scaled to sum to 1 (a total is a weighted mean, so the scale does not change a
ranking). Samples where every candidate passes or every candidate fails carry no information about the
weights and are left out.

Leave-one-dataset-out: for each dataset (all its runs and seeds together: samples of one dataset share its
layout and conventions), the weights are fitted on the others and `validator_max` selects on the held-out
dataset with them; its per-dataset E2E is compared with the hand-set profiles' selections on the same
candidates.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from scipy.optimize import minimize

from core.atomic import atomic_write_text
from experiments.analysis.validator_eval.collect import Evidence
from strategies.selectors import choose, validator_max
from validator.registry import BUILTIN_MODULES, Profile
from validator.report import CheckOutcome, Report, SampleReport, weighted_total

__all__ = ["FitResult", "fit_weights", "leave_one_dataset_out", "reweight", "selection_e2e", "write_fitted"]

log = logging.getLogger(__name__)

L2 = 1e-3
"""Ridge on the weights: with few contested pairs it keeps the weights finite and unused checks at 0."""


def _pairs(evidence: Evidence, label: str, checks: Sequence[str], datasets: set[str]) -> np.ndarray:
    groups: dict[tuple[str, int], list[tuple[bool, list[float]]]] = {}
    for row in evidence.rows:
        if row.dataset not in datasets or label not in row.scores:
            continue
        vec = [row.scores[label].get(c, 0.0) for c in checks]
        groups.setdefault((row.cluster, row.index), []).append((row.e2e, vec))
    diffs = []
    for members in groups.values():
        good = [v for ok, v in members if ok]
        bad = [v for ok, v in members if not ok]
        diffs += [np.subtract(g, b) for g in good for b in bad]
    return np.asarray(diffs, dtype=float).reshape(-1, len(checks))


def fit_weights(
    evidence: Evidence, label: str, datasets: set[str], start: Mapping[str, float]
) -> tuple[dict[str, float], int]:
    """Non-negative per-sample check weights fitted on ``datasets`` (pairwise logistic, see the module).

    Args:
        evidence: The collected evidence.
        label: The base profile (whose checks and scores are used).
        datasets: The training datasets.
        start: The starting weights (the base profile's).

    Returns:
        The weights (summing to 1) and the number of training pairs; with no pair, the start weights.
    """
    checks = list(start)
    diffs = _pairs(evidence, label, checks, datasets)
    w0 = np.asarray([max(0.0, float(start[c])) for c in checks])
    w0 = w0 / w0.sum() if w0.sum() > 0 else np.full(len(checks), 1.0 / len(checks))
    if len(diffs) == 0:
        return dict(zip(checks, w0.tolist(), strict=True)), 0

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        margin = diffs @ w
        value = float(np.logaddexp(0.0, -margin).mean() + L2 * (w @ w))
        sig = 1.0 / (1.0 + np.exp(margin))  # d/dm log(1 + e^-m) = -sigmoid(-m)
        grad = -(diffs * sig[:, None]).mean(axis=0) + 2 * L2 * w
        return value, grad

    found = minimize(loss, w0 * 10.0, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * len(checks))
    w = np.clip(np.asarray(found.x, dtype=float), 0.0, None)
    if w.sum() <= 0:
        w = w0
    return dict(zip(checks, (w / w.sum()).tolist(), strict=True)), len(diffs)


def reweight(report: Report, weights: Mapping[str, float], name: str) -> Report:
    """The same check results under other per-sample weights (totals recomputed; meta checks unchanged)."""
    samples = {}
    for index, sample in report.samples.items():
        outcomes = {
            n: CheckOutcome(n, float(weights.get(n, 0.0)), o.high_risk, o.result)
            for n, o in sample.checks.items()
        }
        samples[index] = SampleReport(index, weighted_total(outcomes), outcomes)
    return Report(name, report.candidate_dir, samples, report.data_meta)


def selection_e2e(
    evidence: Evidence, label: str, weights: Mapping[str, float] | None, datasets: set[str]
) -> dict[str, float]:
    """Per cluster of ``datasets``: the official E2E of what `validator_max` keeps under ``label``'s reports
    (reweighted with ``weights`` when given) — the per-sample pass of the kept candidate.

    Args:
        evidence: The collected evidence.
        label: The profile whose reports are read.
        weights: Other per-sample weights, or None for the profile's own.
        datasets: Which datasets.

    Returns:
        Cluster → E2E.
    """
    passes = {(r.cluster, r.candidate, r.index): r.e2e for r in evidence.rows}
    out = {}
    for stored in evidence.stored:
        if stored.task.name not in datasets:
            continue
        reps = evidence.reports[label][stored.key]
        if weights is not None:
            reps = [reweight(r, weights, f"{label}-fitted") for r in reps]
        decisions = choose(validator_max, stored.task, stored.candidates, reps)
        kept = [
            d.candidate is not None and passes.get((stored.key, d.candidate, i), False)
            for i, d in decisions.items()
        ]
        out[stored.key] = sum(kept) / len(kept) if kept else 0.0
    return out


@dataclass
class FitResult:
    """Leave-one-dataset-out outcome and the weights fitted on everything.

    Attributes:
        base: The base profile label.
        weights: Fitted on every dataset (what the written profile holds).
        pairs: Training pairs of that final fit.
        held_out: Cluster → held-out selection E2E with the fitted weights.
        hand_set: Profile label → cluster → selection E2E with its own (hand-set) weights.
        folds: Per held-out dataset, its training pairs.
    """

    base: str
    weights: dict[str, float]
    pairs: int
    held_out: dict[str, float]
    hand_set: dict[str, dict[str, float]]
    folds: dict[str, int]


def leave_one_dataset_out(evidence: Evidence, base: str) -> FitResult:
    """Fit on all datasets but one, select on that one, for every dataset; then fit on all.

    Args:
        evidence: The collected evidence (``base`` among its profiles).
        base: The label of the profile whose checks are reweighted.

    Returns:
        The result.
    """
    profile = evidence.profiles[base]
    start = {spec.name: w for spec, w in profile.checks}
    names = sorted({s.task.name for s in evidence.stored})
    held_out: dict[str, float] = {}
    folds: dict[str, int] = {}
    for name in names:
        weights, pairs = fit_weights(evidence, base, set(names) - {name}, start)
        folds[name] = pairs
        held_out.update(selection_e2e(evidence, base, weights, {name}))
    hand_set = {label: selection_e2e(evidence, label, None, set(names)) for label in evidence.profiles}
    weights, pairs = fit_weights(evidence, base, set(names), start)
    return FitResult(base, weights, pairs, held_out, hand_set, folds)


def _macro(values: Mapping[str, float]) -> float | None:
    return sum(values.values()) / len(values) if values else None


def write_fitted(result: FitResult, profile: Profile, runs: Sequence[Path], out: Path) -> Path:
    """Write the fitted profile as ``out/validator/<base>_fitted.yaml``, usable as ``validator=<that file>``.

    The profile keeps the base's checks, options and meta checks, with the fitted per-sample weights, and a
    ``fitted:`` block saying how they were learned (runs, method, held-out E2E beside the hand-set one).

    Args:
        result: `leave_one_dataset_out` output.
        profile: The base profile.
        runs: The runs fitted on.
        out: The output folder.

    Returns:
        The file written.
    """
    modules = sorted(
        {
            str(spec.fn.__module__)
            for spec, _ in (*profile.checks, *profile.meta_checks)
            if str(spec.fn.__module__) not in BUILTIN_MODULES
        }
    )
    doc: dict[str, Any] = {"profile": f"{profile.name}_fitted"}
    if modules:
        doc["module"] = modules
    doc["fitted"] = {
        "method": "pairwise logistic on within-sample pass/fail candidate pairs, weights >= 0, sum 1",
        "base_profile": profile.name,
        "runs": [str(Path(r).resolve()) for r in runs],
        "datasets": len({s.split("/", 1)[-1] for s in result.held_out}),
        "training_pairs": result.pairs,
        "held_out_selection_E2E": _macro(result.held_out),
        "hand_set_selection_E2E": {k: _macro(v) for k, v in result.hand_set.items()},
        "note": "weights learned from ground truth on the runs above; not a hand-set profile",
    }
    if profile.options:
        doc["options"] = dict(profile.options)
    doc["checks"] = {name: round(w, 6) for name, w in result.weights.items()}
    doc["meta_checks"] = {spec.name: w for spec, w in profile.meta_checks}
    path = out / "validator" / f"{profile.name}_fitted.yaml"
    header = (
        "# A validator profile with weights FITTED to ground truth by\n"
        "# `medstrat validator-eval --fit` (see the fitted: block). Use it as\n"
        "# validator=<this file>; runs and tables mark it as fitted.\n"
    )
    atomic_write_text(path, header + yaml.safe_dump(doc, sort_keys=False))
    return path

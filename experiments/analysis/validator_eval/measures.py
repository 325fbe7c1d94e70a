"""The measures of a validator against the truth: AUROC (ties counted half), precision and recall of a
check's failures, coverage, calibration (reliability bins, expected calibration error) and Spearman's rho."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata, spearmanr

__all__ = ["Calibration", "auroc", "calibration", "failure_precision_recall", "spearman"]


def auroc(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """The probability that a random positive scores above a random negative (ties count one half).

    The Mann-Whitney form: ``(rank sum of the positives - P(P+1)/2) / (P N)`` with mid-ranks for ties.

    Args:
        scores: Higher means "more likely positive".
        positive: The truth, same order.

    Returns:
        AUROC in [0, 1]; NaN when one class is empty (nothing to separate).
    """
    y = np.asarray(positive, dtype=bool)
    pos, neg = int(y.sum()), int((~y).sum())
    if pos == 0 or neg == 0:
        return float("nan")
    ranks = rankdata(np.asarray(scores, dtype=float))
    return float((ranks[y].sum() - pos * (pos + 1) / 2) / (pos * neg))


def failure_precision_recall(
    failed: Sequence[bool], truth_failed: Sequence[bool]
) -> tuple[float, float, int]:
    """How a check's failures line up with samples that truly fail.

    Args:
        failed: The check did not pass (and did not abstain).
        truth_failed: The sample fails official E2E.

    Returns:
        ``(precision, recall, failures)``: the share of the check's failures on truly failing samples, the
        share of truly failing samples the check fails, and how many times it failed (NaN rates when the
        denominator is 0).
    """
    f = np.asarray(failed, dtype=bool)
    t = np.asarray(truth_failed, dtype=bool)
    both = int((f & t).sum())
    precision = both / int(f.sum()) if f.any() else float("nan")
    recall = both / int(t.sum()) if t.any() else float("nan")
    return precision, recall, int(f.sum())


@dataclass(frozen=True)
class Calibration:
    """Reliability of a score read as a probability of passing.

    Attributes:
        edges: Bin edges (``bins + 1`` values over [0, 1]).
        mean_score: Per bin, the mean score (NaN for an empty bin).
        pass_rate: Per bin, the observed pass rate (NaN for an empty bin).
        counts: Per bin, the samples.
        ece: Expected calibration error, ``sum_b n_b / N * |pass_b - score_b|``.
    """

    edges: list[float]
    mean_score: list[float]
    pass_rate: list[float]
    counts: list[int]
    ece: float


def calibration(scores: Sequence[float], positive: Sequence[bool], bins: int = 10) -> Calibration:
    """Equal-width reliability bins of ``scores`` (1.0 falls into the last bin).

    Args:
        scores: In [0, 1].
        positive: The truth.
        bins: Number of bins.

    Returns:
        The calibration (``ece`` NaN without samples).
    """
    s = np.clip(np.asarray(scores, dtype=float), 0.0, 1.0)
    y = np.asarray(positive, dtype=float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.minimum((s * bins).astype(int), bins - 1)
    mean_score, pass_rate, counts = [], [], []
    ece = 0.0
    for b in range(bins):
        mask = which == b
        n = int(mask.sum())
        counts.append(n)
        if n == 0:
            mean_score.append(float("nan"))
            pass_rate.append(float("nan"))
            continue
        mean_score.append(float(s[mask].mean()))
        pass_rate.append(float(y[mask].mean()))
        ece += n * abs(pass_rate[-1] - mean_score[-1])
    total = int(s.size)
    return Calibration(
        [float(e) for e in edges], mean_score, pass_rate, counts, ece / total if total else float("nan")
    )


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (NaN when either side is constant or there are fewer than 3 values)."""
    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return float("nan")
    rho = spearmanr(np.asarray(a, dtype=float), np.asarray(b, dtype=float)).statistic
    return float(rho) if not math.isnan(float(rho)) else float("nan")

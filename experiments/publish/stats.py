"""Statistics for strategy comparisons that respect the design: samples cluster by dataset, so every
resampling unit here is a dataset (bootstrap CIs of the macro mean, paired sign-flip tests on per-dataset
differences), and repeated seeds are summarised as mean ± spread."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "CI_METHOD",
    "N_BOOT",
    "N_PERM",
    "TEST_METHOD",
    "bootstrap_ci",
    "cluster_diffs",
    "format_pm",
    "mean_spread",
    "paired_cluster_test",
    "sign_flip_test",
]

N_BOOT = 2000
"""Bootstrap resamples of every CI in the tables and figures."""
N_PERM = 10000
"""Random sign assignments of every paired test."""
CI_METHOD = f"95 % CI: percentile bootstrap over datasets ({N_BOOT} resamples)"
"""How every CI is computed: the words each caption carries."""
TEST_METHOD = (
    f"p: two-sided paired sign-flip permutation test on per-dataset differences ({N_PERM} flips); the CI of "
    "the difference is a bootstrap of its mean, a different method, so near the 0.05 boundary a CI that "
    "excludes 0 can sit beside p > 0.05"
)
"""How every p-value is computed, and why it may disagree with the CI beside it."""


def bootstrap_ci(
    per_dataset: Mapping[str, float], *, n_boot: int = N_BOOT, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap CI of the macro mean, resampling datasets with replacement.

    Args:
        per_dataset: Dataset → metric value.
        n_boot: Bootstrap resamples.
        level: Confidence level.
        seed: RNG seed (reproducible tables).

    Returns:
        ``(low, high)``; ``(nan, nan)`` without datasets.
    """
    values = np.asarray(list(per_dataset.values()), dtype=float)
    if values.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(n_boot, values.size))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1.0 - alpha))


def sign_flip_test(diffs: Sequence[float], *, n_perm: int = N_PERM, seed: int = 0) -> float:
    """Two-sided p-value of a paired sign-flip permutation test that the mean difference is 0.

    Under the null each paired difference is equally likely to have either sign; the p-value is the share of
    random sign assignments whose |mean| reaches the observed one (with the +1 correction, never exactly 0).

    Args:
        diffs: Paired differences (e.g. per-sample E2E of a strategy minus S0's).
        n_perm: Random sign assignments.
        seed: RNG seed.

    Returns:
        The p-value in (0, 1]; 1.0 when there are no pairs or all differences are 0.
    """
    d = np.asarray(diffs, dtype=float)
    if d.size == 0 or not np.any(d):
        return 1.0
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(n_perm, d.size))
    hits = int(np.sum(np.abs((signs * d).mean(axis=1)) >= observed - 1e-12))
    return (hits + 1) / (n_perm + 1)


def cluster_diffs(mine: Mapping[str, float], baseline: Mapping[str, float]) -> dict[str, float]:
    """Per-dataset paired differences ``mine - baseline`` over the datasets both have.

    Args:
        mine: Dataset → metric (e.g. per-dataset E2E, averaged over seeds).
        baseline: The same for the baseline.

    Returns:
        Dataset → difference, for the shared datasets.
    """
    return {d: float(mine[d]) - float(baseline[d]) for d in sorted(set(mine) & set(baseline))}


def paired_cluster_test(
    diffs: Mapping[str, float], *, n_perm: int = N_PERM, seed: int = 0
) -> tuple[float, float, float, float]:
    """Paired comparison with datasets as the unit: mean difference, its bootstrap CI, and a sign-flip p.

    Samples of one dataset share its raw data, layout and ground-truth conventions, so they are not
    independent; flipping and resampling whole datasets keeps that dependence inside each unit.

    Args:
        diffs: Dataset → paired difference of the per-dataset metric (`cluster_diffs`).
        n_perm: Random sign assignments.
        seed: RNG seed.

    Returns:
        ``(mean difference, CI low, CI high, p-value)``; NaNs and p = 1 without datasets.
    """
    if not diffs:
        return float("nan"), float("nan"), float("nan"), 1.0
    values = list(diffs.values())
    low, high = bootstrap_ci(diffs, seed=seed)
    return float(np.mean(values)), low, high, sign_flip_test(values, n_perm=n_perm, seed=seed)


def mean_spread(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (ddof = 1) of repeated measurements, e.g. one value per seed.

    Args:
        values: The measurements; None entries (an unscored run) are skipped.

    Returns:
        ``(mean, spread)``; spread is 0.0 for a single value; ``(None, None)`` without values.
    """
    kept = [float(v) for v in values if v is not None]
    if not kept:
        return None, None
    if len(kept) == 1:
        return kept[0], 0.0
    return float(np.mean(kept)), float(np.std(kept, ddof=1))


def format_pm(mean: Any, sd: Any) -> str:
    """``mean ± sd`` to 4 decimals (``mean`` alone without an sd, ``n/a`` without a mean)."""
    if _missing(mean):
        return "n/a"
    return f"{mean:.4f} ± {sd:.4f}" if not _missing(sd) else f"{mean:.4f}"


def _missing(value: Any) -> bool:
    # None, or a float NaN (pandas writes a missing number as NaN, numpy floats are floats)
    return value is None or (isinstance(value, float) and math.isnan(value))

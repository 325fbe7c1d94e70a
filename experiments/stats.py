"""Statistics for strategy comparisons: bootstrap CIs over datasets, paired sign-flip test."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["bootstrap_ci", "sign_flip_test"]


def bootstrap_ci(
    per_dataset: Mapping[str, float], *, n_boot: int = 2000, level: float = 0.95, seed: int = 0
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


def sign_flip_test(diffs: Sequence[float], *, n_perm: int = 10000, seed: int = 0) -> float:
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

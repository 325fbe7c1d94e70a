"""A Fig.-7-style figure: the average of the eleven metrics per strategy, then one panel per metric group."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: sweeps run on servers and in CI

import matplotlib.pyplot as plt
import pandas as pd

from benchmark.score.analysis import CAPABILITY_GROUPS
from benchmark.score.constants import METRIC_NAMES

__all__ = ["ablation_figure"]


def ablation_figure(summary: pd.DataFrame, path: Path) -> Path:
    """Draw the ablation bars and save them as PNG.

    Args:
        summary: `experiments.ablation.summary_frame` output (``strategy`` + the eleven metric columns).
        path: Target PNG.

    Returns:
        ``path``.
    """
    groups = list(CAPABILITY_GROUPS.items())
    fig, axes = plt.subplots(1, 1 + len(groups), figsize=(3.2 * (1 + len(groups)), 3.2), squeeze=False)
    strategies = list(summary["strategy"])
    avg = summary[list(METRIC_NAMES)].astype(float).mean(axis=1)
    ax0 = axes[0][0]
    ax0.bar(strategies, avg, color="tab:blue")
    ax0.set_title("Avg of 11 metrics")
    ax0.set_ylim(0, 1)
    width = 0.8 / max(1, len(strategies))
    for ax, (group, metrics) in zip(axes[0][1:], groups, strict=True):
        for i, strategy in enumerate(strategies):
            values = [float(summary.iloc[i][m]) for m in metrics]
            ax.bar([j + i * width for j in range(len(metrics))], values, width, label=strategy)
        ax.set_xticks([j + width * (len(strategies) - 1) / 2 for j in range(len(metrics))], list(metrics))
        ax.set_title(group)
        ax.set_ylim(0, 1)
    axes[0][-1].legend(fontsize="small", loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

"""The ablation figures: Fig.-7-style bars (the average of the eleven metrics per strategy, then one panel per
metric group) and E2E against cost per strategy."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: sweeps run on servers and in CI

import matplotlib.pyplot as plt
import pandas as pd

from benchmark.score.analysis import CAPABILITY_GROUPS
from benchmark.score.constants import METRIC_NAMES

__all__ = ["ablation_figure", "cost_figure", "zoomed_floor"]

WIDTH_IN = 11.0
"""Figure width in inches; at 110 dpi it is 1210 px, so it fits a 1400 px page without scrolling."""
DPI = 110
COST_AXES = (
    ("USD", "USD per run"),
    ("calls", "model calls per run"),
    ("candidates", "agent invocations per run (candidates + revisions)"),
)
"""The cost axis of `cost_figure`: the first column with a non-zero value."""


def zoomed_floor(values: Sequence[float], *, span: float = 0.25) -> float:
    """The y-axis floor: 0 when values spread widely, else just below the smallest one (in 0.05 steps).

    Bars of 0.95 vs 0.97 on a 0-1 axis look identical; a floor lets the difference show. The axis label says
    where it starts, so a cut axis is never mistaken for a full one.

    Args:
        values: The plotted values (NaNs ignored).
        span: Zoom only when every value lies within this distance below 1.

    Returns:
        The floor in [0, 1).
    """
    finite = [v for v in values if v is not None and not math.isnan(v)]
    if not finite or min(finite) < 1.0 - span:
        return 0.0
    return max(0.0, math.floor((min(finite) - 0.02) * 20) / 20)


def ablation_figure(summary: pd.DataFrame, path: Path) -> Path:
    """Draw the ablation bars and save them as PNG.

    One colour per strategy throughout; the legend sits under the panels (never on the bars); every panel has
    a y-axis label that says where a zoomed axis starts.

    Args:
        summary: `experiments.ablation.summary_frame` output (``strategy`` + the eleven metric columns).
        path: Target PNG.

    Returns:
        ``path``.
    """
    groups = list(CAPABILITY_GROUPS.items())
    strategies = list(summary["strategy"])
    colours = [plt.get_cmap("tab10")(i % 10) for i in range(len(strategies))]
    fig, axes = plt.subplots(1, 1 + len(groups), figsize=(WIDTH_IN, 3.6), squeeze=False)
    avg = summary[list(METRIC_NAMES)].astype(float).mean(axis=1)
    all_values = [*avg, *summary[list(METRIC_NAMES)].astype(float).to_numpy().ravel()]
    floor = zoomed_floor(all_values)
    ylabel = "score (macro over datasets)" + (f"; axis from {floor:.2f}" if floor > 0 else "")
    ax0 = axes[0][0]
    ax0.bar(range(len(strategies)), avg, color=colours)
    ax0.set_xticks(range(len(strategies)), strategies, rotation=30, ha="right", fontsize="small")
    ax0.set_title("Avg of 11 metrics", fontsize="medium")
    ax0.set_ylabel(ylabel, fontsize="small")
    width = 0.8 / max(1, len(strategies))
    for ax, (group, metrics) in zip(axes[0][1:], groups, strict=True):
        for i, strategy in enumerate(strategies):
            values = [float(summary.iloc[i][m]) for m in metrics]
            ax.bar(
                [j + i * width for j in range(len(metrics))], values, width, label=strategy, color=colours[i]
            )
        ax.set_xticks([j + width * (len(strategies) - 1) / 2 for j in range(len(metrics))], list(metrics))
        ax.set_title(group, fontsize="medium")
    for ax in axes[0]:
        ax.set_ylim(floor, 1.0)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0][1].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="lower center", ncol=min(len(strategies), 6), fontsize="small", frameon=False
    )
    fig.tight_layout(rect=(0, 0.1, 1, 1))  # the bottom strip holds the legend
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def cost_figure(summary: pd.DataFrame, path: Path) -> Path:
    """E2E against cost per strategy: USD when any run spent money, else model calls, else agent invocations
    (an offline agent makes no model call but still one invocation per candidate).

    Error bars are the dataset-bootstrap 95 % CI of E2E (``E2E_lo``/``E2E_hi``) when present.

    Args:
        summary: `experiments.ablation.summary_frame` output (``strategy``, ``E2E``, ``USD``, ``calls``).
        path: Target PNG.

    Returns:
        ``path``.
    """
    xcol, xlabel = next(
        ((c, label) for c, label in COST_AXES if c in summary and bool((summary[c].astype(float) > 0).any())),
        COST_AXES[-1],
    )
    fig, ax = plt.subplots(figsize=(WIDTH_IN * 0.55, 3.6))
    e2e = summary["E2E"].astype(float)
    for i, row in enumerate(summary.itertuples(index=False)):
        x, y = float(getattr(row, xcol)), float(row.E2E)
        lo = getattr(row, "E2E_lo", None)
        hi = getattr(row, "E2E_hi", None)
        colour = plt.get_cmap("tab10")(i % 10)
        if lo is not None and hi is not None and not (pd.isna(lo) or pd.isna(hi)):
            ax.errorbar(x, y, yerr=[[max(0.0, y - lo)], [max(0.0, hi - y)]], fmt="o", color=colour, capsize=3)
        else:
            ax.plot(x, y, "o", color=colour)
        ax.annotate(str(row.strategy), (x, y), textcoords="offset points", xytext=(6, 4), fontsize="small")
    floor = zoomed_floor(list(e2e) + list(summary.get("E2E_lo", pd.Series(dtype=float)).astype(float)))
    ax.set_ylim(floor, 1.02)  # a point at 1.0 stays whole
    ax.set_xlabel(xlabel)
    ax.set_ylabel("E2E (macro)" + (f"; axis from {floor:.2f}" if floor > 0 else ""))
    ax.set_title("E2E against cost (bars: 95 % CI over datasets)", fontsize="medium")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path

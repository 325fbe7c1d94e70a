"""The ablation figures: Fig.-7-style bars (the average of the eleven metrics per strategy, then one panel per
metric group) and E2E against cost per strategy."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from benchmark.score.analysis import CAPABILITY_GROUPS
from benchmark.score.constants import METRIC_NAMES
from experiments.publish.figures import WIDTH_IN, error_bars, save_figure
from experiments.publish.stats import CI_METHOD

__all__ = ["ablation_figure", "cost_figure", "draw_ablation", "draw_cost", "zoomed_floor"]

COST_AXES = (
    ("USD", "USD per run"),
    ("calls", "model calls per run"),
    ("candidates", "agent invocations per run (candidates + revisions)"),
)
"""The cost axis of `cost_figure`: the first column with a non-zero value."""


def zoomed_floor(values: Sequence[float], *, span: float = 0.25) -> float:
    """The y-axis floor: 0 when values spread widely, else just below the smallest one (in 0.05 steps).

    Only for point plots (a line or a dot has no length to misread); every bar plot here starts at 0. The
    axis label of a zoomed plot says where it starts.

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


def _yerr(summary: pd.DataFrame, column: str) -> list[list[float]] | None:
    """Matplotlib's asymmetric error bars from ``<column>_lo``/``_hi`` (None when the CI is missing)."""
    lo, hi = f"{column}_lo", f"{column}_hi"
    if lo not in summary or hi not in summary:
        return None
    return error_bars(summary[column], summary[lo], summary[hi])


def _caption(fig: Figure, text: str, banner: str | None) -> None:
    """The caption under a figure (methods), with the mechanics-check banner above it when there is one."""
    lines = [text] if banner is None else [banner, text]
    fig.text(0.5, 0.01, "\n".join(lines), ha="center", va="bottom", fontsize="x-small", wrap=True)


CAPTION = f"Bars: macro mean over datasets (mean over seeds); error bars: {CI_METHOD}; y-axis from 0."


def ablation_figure(summary: pd.DataFrame, path: Path, *, banner: str | None = None) -> Path:
    """Draw the ablation bars (`draw_ablation`) and save them as PNG.

    Args:
        summary: `experiments.analysis.ablation.summary_frame` output.
        path: Target PNG.
        banner: A line shown above the caption (the mechanics-check banner), or None.

    Returns:
        ``path``.
    """
    return save_figure(draw_ablation(summary, banner=banner), path)


def cost_figure(summary: pd.DataFrame, path: Path, *, banner: str | None = None) -> Path:
    """Draw E2E against cost (`draw_cost`) and save it as PNG.

    Args:
        summary: `experiments.analysis.ablation.summary_frame` output.
        path: Target PNG.
        banner: A line shown above the caption (the mechanics-check banner), or None.

    Returns:
        ``path``.
    """
    return save_figure(draw_cost(summary, banner=banner), path)


def draw_ablation(summary: pd.DataFrame, *, banner: str | None = None) -> Figure:
    """The ablation bars.

    One colour per strategy throughout; the legend sits under the panels (never on the bars); every bar
    carries its dataset-bootstrap 95 % CI (``<metric>_lo``/``_hi``, ``avg11_lo``/``_hi`` of
    `experiments.analysis.ablation.summary_frame`); every axis starts at 0; the caption names the CI method.

    Args:
        summary: `experiments.analysis.ablation.summary_frame` output (``strategy``, the eleven metric
            columns, their CIs and ``avg11``).
        banner: A line shown above the caption (the mechanics-check banner), or None.

    Returns:
        The figure (the caller saves and closes it).
    """
    groups = list(CAPABILITY_GROUPS.items())
    strategies = list(summary["strategy"])
    colours = [plt.get_cmap("tab10")(i % 10) for i in range(len(strategies))]
    fig, axes = plt.subplots(1, 1 + len(groups), figsize=(WIDTH_IN, 4.2), squeeze=False)
    if "avg11" in summary:
        avg = summary["avg11"].astype(float)
    else:
        avg = summary[list(METRIC_NAMES)].astype(float).mean(axis=1)
    ax0 = axes[0][0]
    bar_style: dict[str, Any] = {"capsize": 2, "error_kw": {"elinewidth": 0.8, "ecolor": "black"}}
    ax0.bar(range(len(strategies)), avg, color=colours, yerr=_yerr(summary, "avg11"), **bar_style)
    ax0.set_xticks(range(len(strategies)), strategies, rotation=30, ha="right", fontsize="small")
    ax0.set_title("Avg of 11 metrics", fontsize="medium")
    ax0.set_ylabel("score (macro over datasets)", fontsize="small")
    width = 0.8 / max(1, len(strategies))
    for ax, (group, metrics) in zip(axes[0][1:], groups, strict=True):
        for i, strategy in enumerate(strategies):
            row = summary.iloc[[i]]
            values = [float(row.iloc[0][m]) for m in metrics]
            errs = [_yerr(row, m) for m in metrics]
            yerr = None if any(e is None for e in errs) else [[e[k][0] for e in errs if e] for k in (0, 1)]
            ax.bar(
                [j + i * width for j in range(len(metrics))],
                values,
                width,
                label=strategy,
                color=colours[i],
                yerr=yerr,
                **bar_style,
            )
        ax.set_xticks([j + width * (len(strategies) - 1) / 2 for j in range(len(metrics))], list(metrics))
        ax.set_title(group, fontsize="medium")
    for ax in axes[0]:
        ax.set_ylim(0.0, 1.05)  # bars from 0: a bar's length is its value
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0][1].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="lower center",
        bbox_to_anchor=(0.5, 0.07 if banner is None else 0.1),
        ncol=min(len(strategies), 6),
        fontsize="small",
        frameon=False,
    )
    _caption(fig, CAPTION, banner)
    fig.tight_layout(rect=(0, 0.17 if banner is None else 0.2, 1, 1))  # the bottom strip: legend, caption
    return fig


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
"""One marker per strategy in `cost_figure`, so strategies differ by shape as well as colour."""


def _dodge(points: Sequence[tuple[float, float]]) -> list[float]:
    """Horizontal offsets in points: strategies drawn at the same (rounded) spot are spread side by side, so
    none hides another (S3 and S4 often cost and score the same)."""
    seen: dict[tuple[float, float], list[int]] = {}
    for i, (x, y) in enumerate(points):
        seen.setdefault((round(x, 6), round(y, 3)), []).append(i)
    offsets = [0.0] * len(points)
    for members in seen.values():
        for k, i in enumerate(members):
            offsets[i] = (k - (len(members) - 1) / 2) * 9.0
    return offsets


def draw_cost(summary: pd.DataFrame, *, banner: str | None = None) -> Figure:
    """E2E against cost per strategy: USD when any run spent money, else model calls, else agent invocations
    (an offline agent makes no model call but still one invocation per candidate).

    Error bars are the dataset-bootstrap 95 % CI of E2E (``E2E_lo``/``E2E_hi``) when present. Strategies are
    named in a legend (colour and marker), never by labels beside the points, and points at the same spot are
    set side by side: no label or point hides another. The y-axis starts at 0.

    Args:
        summary: `experiments.analysis.ablation.summary_frame` output (``strategy``, ``E2E``, ``USD``,
            ``calls``).
        banner: A line shown above the caption (the mechanics-check banner), or None.

    Returns:
        The figure (the caller saves and closes it).
    """
    from matplotlib.transforms import offset_copy

    xcol, xlabel = next(
        ((c, label) for c, label in COST_AXES if c in summary and bool((summary[c].astype(float) > 0).any())),
        COST_AXES[-1],
    )
    fig, ax = plt.subplots(figsize=(WIDTH_IN * 0.62, 4.2))
    rows = list(summary.itertuples(index=False))
    offsets = _dodge([(float(getattr(r, xcol)), float(r.E2E)) for r in rows])
    for i, row in enumerate(rows):
        x, y = float(getattr(row, xcol)), float(row.E2E)
        lo = getattr(row, "E2E_lo", None)
        hi = getattr(row, "E2E_hi", None)
        style: dict[str, Any] = {
            "color": plt.get_cmap("tab10")(i % 10),
            "marker": MARKERS[i % len(MARKERS)],
            "linestyle": "none",
            "label": str(row.strategy),
            "transform": offset_copy(ax.transData, fig=fig, x=offsets[i], y=0, units="points"),
        }
        if lo is not None and hi is not None and not (pd.isna(lo) or pd.isna(hi)):
            ax.errorbar(x, y, yerr=[[max(0.0, y - lo)], [max(0.0, hi - y)]], capsize=3, **style)
        else:
            ax.plot(x, y, **style)
    ax.set_ylim(0.0, 1.05)
    # Set by hand: artists drawn through an offset transform do not take part in autoscaling.
    right = max([float(getattr(r, xcol)) for r in rows] + [0.0])
    ax.set_xlim(0.0, right * 1.12 if right > 0 else 1.0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("E2E (macro over datasets)")
    ax.set_title("E2E against cost", fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax.grid(alpha=0.3)
    _caption(fig, f"Points: macro E2E (mean over seeds); error bars: {CI_METHOD}.", banner)
    fig.tight_layout(rect=(0, 0.08 if banner is None else 0.12, 1, 1))
    return fig

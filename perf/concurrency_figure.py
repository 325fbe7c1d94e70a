"""The bar chart of `perf/concurrency.py --figure`: ours, bare LiteLLM and the latency bound, in calls per
second, by latency and client processes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _tick(point: Mapping[str, Any]) -> str:
    """The x label of one (latency, processes) point; says when ours could not use that many processes."""
    n = point["processes"]
    label = f"{n} process" + ("es" if n > 1 else "")
    if point["ours_processes"] != n:
        label += f"\n(ours: {point['ours_processes']}; no run.processes)"
    return label


def figure(summary: Sequence[Mapping[str, Any]], path: Path, load: Sequence[float]) -> None:
    """Bar chart of calls per second: ours, bare LiteLLM, the latency bound; by latency and processes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latencies = sorted({s["latency_s"] for s in summary})
    fig, axes = plt.subplots(1, len(latencies), figsize=(4.6 * len(latencies) + 0.6, 4.6), squeeze=False)
    sides = (
        ("ours_calls_per_s", "ours (run_experiment)", "tab:blue"),
        ("bare_calls_per_s", "bare litellm.acompletion", "tab:orange"),
        ("bound_calls_per_s", "latency bound", "0.7"),
    )
    width = 0.26
    for ax, latency in zip(axes[0], latencies, strict=True):
        points = [s for s in summary if s["latency_s"] == latency]
        for j, (key, label, color) in enumerate(sides):
            xs = [i + (j - 1) * width for i in range(len(points))]
            ax.bar(
                xs,
                [p[key] or 0.0 for p in points],
                width,
                label=label,
                color=color,
                edgecolor="black",
                lw=0.5,
            )
            if key != "bound_calls_per_s":  # every repeat as a dot on its median bar
                for x, p in zip(xs, points, strict=True):
                    values = [r[key] for r in p["runs"]]
                    ax.plot([x] * len(values), values, "k.", ms=4)
        for i, p in enumerate(points):
            ax.annotate(
                f"ours/bare {p['ours_over_bare']:.2f}\nbound/phase {p['bound_ratio']:.2f}",
                (i, max(p[k] or 0.0 for k, _, _ in sides)),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=8,
            )
        top = max(max(p[k] or 0.0 for k, _, _ in sides) for p in points)
        ax.set_ylim(0, top * 1.3)
        ax.set_xticks(range(len(points)))
        ax.set_xticklabels([_tick(p) for p in points])
        ax.set_title(f"latency {latency * 1000:.0f} ms per call")
        ax.set_ylabel("model calls per second (server clock)")
        ax.set_xlabel(f"client processes (concurrency {points[0]['concurrency']} in total)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
    n = summary[0]["candidates"]
    fig.suptitle(
        f"S3, {n} candidates x {summary[0]['calls'] // max(1, n)} calls; median of {summary[0]['repeats']} "
        f"(dots: each run); load average {load[0]:.1f}",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)

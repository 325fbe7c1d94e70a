"""The S0-S4 ablation of a sweep folder: ``ablation.md``, ``ablation.csv``, ``ablation.tex``,
``ablation.png``, ``ablation_cost.png``.

Rows are strategies (runs that differ only by ``run.seed`` are repeats of one row, shown as mean ± spread);
columns the eleven metrics (official profile), cost per run (candidates, model calls, tokens, USD, wall time)
and E2E per USD; plus a bootstrap 95 % CI of E2E and a paired test against S0, both with datasets as the
resampling unit, the E2E threshold grid per strategy, and the oracle best-of-n upper bound where a run kept
several candidates. The figures: Fig.-7-style bars (the average of the eleven metrics per strategy, then one
panel per metric group) and E2E against cost per strategy.

    medstrat ablation MULTIRUN_DIR
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from benchmark.score.analysis import CAPABILITY_GROUPS
from benchmark.score.constants import METRIC_NAMES
from core.cli_errors import OneLineParser, cli_main, existing_dir
from experiments.analysis.oracle_bound import oracle_upper_bound
from experiments.publish.stats import (
    CI_METHOD,
    TEST_METHOD,
    bootstrap_ci,
    cluster_diffs,
    format_pm,
    mean_spread,
    paired_cluster_test,
)
from experiments.publish.tables import write_csv, write_tables
from experiments.stored.mechanics import sweep_banner
from experiments.stored.sweep import RunData, groups, load_runs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "COST_COLUMNS",
    "G_VALUES",
    "QF_VALUES",
    "STAT_COLUMNS",
    "RunData",
    "draw_ablation",
    "draw_cost",
    "load_runs",
    "main",
    "summary_frame",
    "threshold_frame",
    "write_ablation",
]

log = logging.getLogger(__name__)

G_VALUES = (0.70, 0.85, 0.95, 1.00)
QF_VALUES = (0.3, 0.4, 0.5, 0.6, 0.7)

REVISION_MEANING = {
    "rules": (
        "**S1/S2 with the `rules` agent** are not a model's self-refinement. S1 re-decides at temperature 0 "
        "the choices the agent sampled below its own top-ranked hypothesis and those behind outputs failing "
        "its own consistency checks (a temperature-0 candidate comes back unchanged); S2 re-decides at "
        "temperature 0 the decision points behind the validator's flagged fields, within the whitelist."
    ),
}
"""What an S1/S2 row measures for agents whose `revise` is not a model reviewing its output."""

COST_COLUMNS = ("candidates", "calls", "prompt_tokens", "completion_tokens", "USD", "wall_s")
"""Per-run cost, averaged over seeds: agent invocations (candidates and revisions made), model calls (0 for an
offline agent such as ``rules``), tokens, dollars and the run's wall-clock seconds."""
# The statistics table (ablation.md, the sweep report): CIs, the paired test against S0, the oracle bound.
STAT_COLUMNS = (
    "strategy",
    "E2E",
    "E2E_lo",
    "E2E_hi",
    "dE2E_vs_s0",
    "dE2E_lo",
    "dE2E_hi",
    "p_vs_s0",
    "n_datasets",
    "oracle_bestofn_E2E",
)


def _seed_mean(rows: Sequence[RunData], metric: str = "E2E") -> dict[str, float]:
    """Per dataset, the metric averaged over the runs (seeds) that scored it."""
    values: dict[str, list[float]] = {}
    for run in rows:
        for d, v in run.per_dataset(metric).items():
            values.setdefault(d, []).append(v)
    return {d: sum(v) / len(v) for d, v in values.items()}


def summary_frame(runs: Sequence[RunData], baseline: str = "s0") -> pd.DataFrame:
    """One row per label (strategy): the eleven macro metrics (mean over seeds), E2E's spread over seeds,
    cost per run, E2E per USD, E2E's dataset-bootstrap CI and the paired dataset-level test vs ``baseline``.

    Args:
        runs: `load_runs` output.
        baseline: The label compared against (default S0); absent → no paired columns.

    Returns:
        The frame (columns ``strategy``, METRIC_NAMES, ``E2E_sd``, ``seeds``, COST_COLUMNS, ``tokens``,
        ``E2E/USD``, ``<metric>_lo`` and ``<metric>_hi`` for every metric (dataset-bootstrap 95 % CI),
        ``avg11`` with ``avg11_lo``/``avg11_hi``, ``dE2E_vs_<b>``, ``dE2E_lo``, ``dE2E_hi``, ``p_vs_<b>``,
        ``n_datasets``, ``incomplete``).
    """
    by_label = groups(runs)
    base = by_label.get(baseline) or next(
        (g for lbl, g in by_label.items() if lbl.split()[0] == baseline), None
    )
    base_e2e = _seed_mean(base) if base else {}
    rows = []
    for label, members in by_label.items():
        row: dict[str, Any] = {"strategy": label}
        for k in METRIC_NAMES:
            row[k] = mean_spread([r.metrics.get("macro", {}).get(k) for r in members])[0]
        row["E2E_sd"] = mean_spread([r.metrics.get("macro", {}).get("E2E") for r in members])[1]
        row["seeds"] = len(members)
        costs = [r.cost() for r in members]
        for c in COST_COLUMNS:
            row[c] = sum(x[c] for x in costs) / len(costs)
        row["tokens"] = row["prompt_tokens"] + row["completion_tokens"]
        e2e = row["E2E"]
        row["E2E/USD"] = (e2e / row["USD"]) if (e2e is not None and row["USD"] > 0) else None
        mine = _seed_mean(members)
        row["E2E_lo"], row["E2E_hi"] = bootstrap_ci(mine)
        row.update(_metric_cis(members, row))
        diffs = cluster_diffs(mine, base_e2e) if base and members is not base else {}
        d, lo, hi, p = paired_cluster_test(diffs) if diffs else (None, None, None, None)
        row["dE2E_vs_" + baseline], row["dE2E_lo"], row["dE2E_hi"] = d, lo, hi
        row["p_vs_" + baseline] = p
        row["n_datasets"] = len(mine)
        row["incomplete"] = any(r.incomplete for r in members)
        rows.append(row)
    return pd.DataFrame(rows)


AVG = "avg11"
"""The column of the average of the eleven metrics (the first panel of ``ablation.png``)."""


def _metric_cis(members: Sequence[RunData], row: Mapping[str, Any]) -> dict[str, Any]:
    """Every metric's dataset-bootstrap CI (``<metric>_lo``/``_hi``; E2E's is set by the caller), and the
    average of the eleven metrics (``avg11``) with its CI: the error bars of every bar of ``ablation.png``."""
    out: dict[str, Any] = {}
    per_metric = {m: _seed_mean(members, m) for m in METRIC_NAMES}
    for m in METRIC_NAMES:
        if m != "E2E":
            out[f"{m}_lo"], out[f"{m}_hi"] = bootstrap_ci(per_metric[m])
    # Per dataset the mean of its eleven metrics: the bar is the macro mean of these, the CI resamples them.
    shared = set.intersection(*(set(v) for v in per_metric.values())) if per_metric else set()
    avg = {d: sum(per_metric[m][d] for m in METRIC_NAMES) / len(METRIC_NAMES) for d in sorted(shared)}
    values = [row.get(m) for m in METRIC_NAMES]
    known = [float(v) for v in values if v is not None]
    out[AVG] = sum(known) / len(known) if known and len(known) == len(values) else None
    out[f"{AVG}_lo"], out[f"{AVG}_hi"] = bootstrap_ci(avg)
    return out


def threshold_frame(runs: Sequence[RunData]) -> pd.DataFrame:
    """Macro E2E of every label over the g × q × f threshold grid (official scores; mean over seeds)."""
    rows = []
    for label, members in groups(runs).items():
        for g, q, f in itertools.product(G_VALUES, QF_VALUES, QF_VALUES):
            per_run = []
            for run in members:
                by_dataset: dict[str, list[dict[str, Any]]] = {}
                for row in run.samples:
                    scored = (row.get("scores") or {}).get("official")
                    if scored:
                        by_dataset.setdefault(row["dataset"], []).append(scored)
                means = [
                    sum(
                        bool(s["pair_valid"])
                        and s["source_score"] >= 1.0
                        and s["schema_valid_score"] >= g
                        and s["semantic_score"] >= q
                        and s["content_fidelity_score"] >= f
                        for s in items
                    )
                    / len(items)
                    for items in by_dataset.values()
                ]
                if means:
                    per_run.append(sum(means) / len(means))
            rows.append(
                {
                    "strategy": label,
                    "g": g,
                    "q": q,
                    "f": f,
                    "E2E": sum(per_run) / len(per_run) if per_run else None,
                }
            )
    return pd.DataFrame(rows, columns=["strategy", "g", "q", "f", "E2E"])


def write_ablation(sweep_dir: Path, *, figure: bool = True) -> list[Path]:
    """Write the ablation files into ``sweep_dir``.

    Args:
        sweep_dir: The multirun folder (its sub-folders are runs with ``metrics.json``).
        figure: Also draw ``ablation.png``.

    Returns:
        The files written.

    Raises:
        FileNotFoundError: No run folder under ``sweep_dir``.
    """
    runs = load_runs(sweep_dir)
    if not runs:
        raise FileNotFoundError(f"no run folders (with metrics.json) under {sweep_dir}")
    summary = summary_frame(runs)
    bounds = {
        label: mean_spread([oracle_upper_bound(r.run_dir) for r in members])[0]
        for label, members in groups(runs).items()
    }
    summary["oracle_bestofn_E2E"] = [bounds[s] for s in summary["strategy"]]
    grid = threshold_frame(runs)
    written = [write_csv(sweep_dir / "ablation_thresholds.csv", grid)]
    shown = summary.copy()
    shown["E2E ± sd"] = [format_pm(m, sd) for m, sd in zip(shown["E2E"], shown["E2E_sd"], strict=True)]
    main_cols = ["strategy", "seeds", *METRIC_NAMES, "E2E ± sd"]
    cost_cols = ["strategy", *COST_COLUMNS, "E2E/USD"]
    stat_cols = list(STAT_COLUMNS)
    slice_ = (
        grid[grid["q"] == grid["f"]]
        .pivot_table(index=["strategy", "g"], columns="q", values="E2E")
        .reset_index()
    )
    slice_.columns = [str(c) if not isinstance(c, float) else f"q=f={c}" for c in slice_.columns]
    notes = []
    mechanics = sweep_banner(r.agent for r in runs)  # shown under the title, not among the notes
    if any(r.metrics.get("simulation") for r in runs):
        notes.append(
            "**Simulation**: "
            + ", ".join(sorted({r.label for r in runs if r.metrics.get("simulation")}))
            + " ran on simulated candidates (the oracle output with sampled mistakes, `agent=simulated`), "
            "not a model's work; see `miss_rates` in their metrics.json."
        )
    fell_back = sorted({r.label for r in runs if r.metrics.get("selector_fallbacks")})
    if fell_back:
        notes.append(
            "**Selector fallback**: in "
            + ", ".join(fell_back)
            + " the selector raised on some samples and validator_max chose there (selector.on_error="
            "fallback; counts per dataset in their metrics.json `selector_fallbacks`): not the selector's "
            "own result."
        )
    if any(r.incomplete for r in runs):
        notes.append(
            "**Incomplete**: "
            + ", ".join(sorted({r.label for r in runs if r.incomplete}))
            + " stopped early (budget) or lost datasets; their numbers cover what finished."
        )
    for agent, meaning in REVISION_MEANING.items():
        if any(r.agent == agent and r.strategy in ("s1", "s2") for r in runs):
            notes.append(meaning)
    from experiments.analysis.budget_matched import shown_table

    budget = _budget(runs)
    budget_md: list[str | pd.DataFrame] = []
    if not budget.empty:
        written.append(write_csv(sweep_dir / "ablation_budget.csv", budget))
        budget_md = [
            "## Budget-matched: S3 (best-of-n') with n' chosen so that it spends no more than each other "
            f"strategy (cost axis: {budget['axis'].iloc[0]}; from the stored candidates, no new call); "
            "E2E as mean ± sd over seeds (the seeds column), costs as the mean over seeds",
            shown_table(budget),
        ]
    passk_md, passk_files = _passk(runs, sweep_dir)
    written += passk_files
    page: list[str | pd.DataFrame] = [
        "# Ablation (official profile, macro over datasets; mean over seeds)",
        *([f"**{mechanics}**"] if mechanics is not None else []),
        "E2E ± sd: the spread over seeds (sample sd); a single seed shows ± 0.0000.",
        shown[main_cols],
        "## Cost per run (mean over seeds): model calls, tokens, USD, wall-clock seconds",
        shown[cost_cols],
        f"## E2E with datasets as the unit: {CI_METHOD} (E2E_lo, E2E_hi); paired comparison vs S0: the "
        f"mean difference of per-dataset E2E (dE2E_vs_s0) with its {CI_METHOD} (dE2E_lo, dE2E_hi); "
        f"{TEST_METHOD}; oracle best-of-n upper bound (ground truth; not a strategy result)",
        shown[stat_cols],
        "## E2E threshold sensitivity (g = schema, q = f = semantic and content thresholds)",
        slice_,
        *budget_md,
        *passk_md,
        *notes,
    ]
    tables = write_tables(sweep_dir / "ablation", summary, page, shown[[*main_cols, *cost_cols[1:]]])
    written = [tables[0], written[0], *tables[1:], *written[1:]]  # .csv, _thresholds.csv, .md, .tex, ...
    if figure:
        from experiments.publish.figures import save_figure  # pyplot: only when a figure is drawn

        written.append(save_figure(draw_ablation(summary, banner=mechanics), sweep_dir / "ablation.png"))
        written.append(save_figure(draw_cost(summary, banner=mechanics), sweep_dir / "ablation_cost.png"))
    return written


def _passk(runs: Sequence[RunData], sweep_dir: Path) -> tuple[list[str], list[Path]]:
    """`experiments.analysis.passk.sweep_section` over the S3 rows that stored two or more candidates per
    dataset."""
    from experiments.analysis.passk import is_best_of_n_run, sweep_section

    rows: dict[str, list[Path]] = {}
    for label, members in groups(runs).items():
        if is_best_of_n_run(members[0].run_dir):
            rows[label] = [m.run_dir for m in members if (m.run_dir / "candidates").is_dir()]
    return sweep_section({k: v for k, v in rows.items() if v}, sweep_dir)


def _budget(runs: Sequence[RunData]) -> pd.DataFrame:
    """`experiments.analysis.budget_matched.budget_matched`, or an empty frame (logged) when it cannot be
    computed."""
    from experiments.analysis.budget_matched import budget_matched

    try:
        return budget_matched(runs)
    except Exception:  # a missing suite or unreadable candidates must not cost the rest of the ablation
        log.exception("budget-matched comparison skipped")
        return pd.DataFrame()


COST_AXES = (
    ("USD", "USD per run"),
    ("calls", "model calls per run"),
    ("candidates", "agent invocations per run (candidates + revisions)"),
)
"""The cost axis of `cost_figure`: the first column with a non-zero value."""


def _yerr(summary: pd.DataFrame, column: str) -> list[list[float]] | None:
    """Matplotlib's asymmetric error bars from ``<column>_lo``/``_hi`` (None when the CI is missing)."""
    from experiments.publish.figures import error_bars  # pyplot: only when a figure is drawn

    lo, hi = f"{column}_lo", f"{column}_hi"
    if lo not in summary or hi not in summary:
        return None
    return error_bars(summary[column], summary[lo], summary[hi])


def _caption(fig: Figure, text: str, banner: str | None) -> None:
    """The caption under a figure (methods), with the mechanics-check banner above it when there is one."""
    lines = [text] if banner is None else [banner, text]
    fig.text(0.5, 0.01, "\n".join(lines), ha="center", va="bottom", fontsize="x-small", wrap=True)


CAPTION = f"Bars: macro mean over datasets (mean over seeds); error bars: {CI_METHOD}; y-axis from 0."


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
    import matplotlib.pyplot as plt

    from experiments.publish.figures import WIDTH_IN  # pyplot: only when a figure is drawn

    groups = list(CAPABILITY_GROUPS.items())
    strategies = list(summary["strategy"])
    colours = [plt.get_cmap("tab10")(i % 10) for i in range(len(strategies))]
    fig, axes = plt.subplots(1, 1 + len(groups), figsize=(WIDTH_IN, 4.2), squeeze=False)
    ax0 = axes[0][0]
    bar_style: dict[str, Any] = {"capsize": 2, "error_kw": {"elinewidth": 0.8, "ecolor": "black"}}
    avg = summary[AVG].astype(float)
    ax0.bar(range(len(strategies)), avg, color=colours, yerr=_yerr(summary, AVG), **bar_style)
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
    import matplotlib.pyplot as plt
    from matplotlib.transforms import offset_copy

    from experiments.publish.figures import WIDTH_IN  # pyplot: only when a figure is drawn

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


@cli_main("medstrat ablation")
def main(argv: Sequence[str] | None = None) -> int:
    """CLI: redo the ablation files of a sweep folder; returns the exit code (docs/cli.md)."""
    parser = OneLineParser(prog="medstrat ablation", description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path, help="the multirun folder of `python -m experiments -m ...`")
    parser.add_argument("--no-figure", action="store_true", help="skip ablation.png")
    args = parser.parse_args(argv)
    existing_dir("SWEEP_DIR", args.sweep_dir)
    written = write_ablation(args.sweep_dir, figure=not args.no_figure)
    print((args.sweep_dir / "ablation.md").read_text(encoding="utf-8"))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0

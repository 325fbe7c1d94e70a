"""The S0-S4 ablation of a sweep folder: ``ablation.md``, ``ablation.csv``, ``ablation.tex``,
``ablation.png``.

Rows are strategies; columns the eleven metrics (official profile), tokens, USD and E2E per USD; plus
bootstrap 95 % CIs (resampling datasets), a paired sign-flip test against S0 on per-sample E2E, the E2E
threshold grid per strategy, and the oracle best-of-n upper bound where a run kept several candidates.

    python -m experiments.ablation MULTIRUN_DIR
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from benchmark.atomic import atomic_write_text
from benchmark.score.analysis import to_latex, to_markdown
from benchmark.score.constants import METRIC_NAMES
from experiments.oracle_bound import oracle_upper_bound
from experiments.stats import bootstrap_ci, sign_flip_test

__all__ = [
    "G_VALUES",
    "QF_VALUES",
    "RunData",
    "load_runs",
    "main",
    "summary_frame",
    "threshold_frame",
    "write_ablation",
]

log = logging.getLogger(__name__)

G_VALUES = (0.70, 0.85, 0.95, 1.00)
QF_VALUES = (0.3, 0.4, 0.5, 0.6, 0.7)


@dataclass
class RunData:
    """One finished run of the sweep, as read back from its folder."""

    strategy: str
    run_dir: Path
    metrics: dict[str, Any]
    usage: dict[str, Any]
    samples: list[dict[str, Any]] = field(default_factory=list)
    agent: str = ""

    @property
    def incomplete(self) -> bool:
        """The run stopped early (budget) or lost a dataset."""
        return bool(self.metrics.get("incomplete"))


def load_runs(sweep_dir: Path) -> list[RunData]:
    """Every run folder (holding ``metrics.json``) under ``sweep_dir``, sorted by strategy name."""
    runs = []
    for metrics_path in sorted(sweep_dir.rglob("metrics.json")):
        run_dir = metrics_path.parent
        info = (
            json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
            if (run_dir / "run.json").is_file()
            else {}
        )
        samples_path = run_dir / "samples.jsonl"
        samples = (
            [json.loads(line) for line in samples_path.read_text(encoding="utf-8").splitlines() if line]
            if samples_path.is_file()
            else []
        )
        usage_path = run_dir / "usage.json"
        runs.append(
            RunData(
                str(info.get("strategy") or run_dir.name),
                run_dir,
                json.loads(metrics_path.read_text(encoding="utf-8")),
                json.loads(usage_path.read_text(encoding="utf-8")) if usage_path.is_file() else {},
                samples,
                _agent_name(info),
            )
        )
    return sorted(runs, key=lambda r: r.strategy)


def _agent_name(info: dict[str, Any]) -> str:
    agent = (info.get("config") or {}).get("agent") or {}
    return str(agent.get("_target_") or agent.get("name") or "") if isinstance(agent, dict) else ""


REVISION_MEANING = {
    "rules": (
        "**S1/S2 with the `rules` agent** are not a model's self-refinement. S1 re-decides at temperature 0 "
        "the choices the agent sampled below its own top-ranked hypothesis and those behind outputs failing "
        "its own consistency checks (a temperature-0 candidate comes back unchanged); S2 re-decides at "
        "temperature 0 the decision points behind the validator's flagged fields, within the whitelist."
    ),
}
"""What an S1/S2 row measures for agents whose `revise` is not a model reviewing its output."""


def _e2e_by_sample(run: RunData) -> dict[tuple[str, int], float]:
    out = {}
    for row in run.samples:
        scored = (row.get("scores") or {}).get("official")
        out[(row["dataset"], int(row["index"]))] = float(bool(scored and scored.get("e2e")))
    return out


def summary_frame(runs: Sequence[RunData], baseline: str = "s0") -> pd.DataFrame:
    """One row per strategy: the eleven macro metrics, cost, E2E per USD, E2E's CI, the paired test vs S0."""
    base = next((r for r in runs if r.strategy == baseline), None)
    base_e2e = _e2e_by_sample(base) if base is not None else {}
    rows = []
    for run in runs:
        macro = run.metrics.get("macro", {})
        total = run.usage.get("total", {})
        usd = float(total.get("cost_usd") or 0.0)
        row: dict[str, Any] = {"strategy": run.strategy, **{k: macro.get(k) for k in METRIC_NAMES}}
        row["tokens"] = int(total.get("total_tokens") or 0)
        row["USD"] = usd
        e2e = macro.get("E2E")
        row["E2E/USD"] = (e2e / usd) if (e2e is not None and usd > 0) else None
        per_dataset = {d: m["E2E"] for d, m in run.metrics.get("datasets", {}).items()}
        row["E2E_lo"], row["E2E_hi"] = bootstrap_ci(per_dataset)
        mine = _e2e_by_sample(run)
        pairs = [mine[k] - base_e2e[k] for k in sorted(set(mine) & set(base_e2e))]
        row["dE2E_vs_" + baseline] = sum(pairs) / len(pairs) if pairs else None
        row["p_vs_" + baseline] = sign_flip_test(pairs) if pairs and run is not base else None
        row["n_pairs"] = len(pairs)
        row["incomplete"] = run.incomplete
        rows.append(row)
    return pd.DataFrame(rows)


def threshold_frame(runs: Sequence[RunData]) -> pd.DataFrame:
    """Macro E2E of every strategy over the g × q × f threshold grid (official scores)."""
    rows = []
    for run in runs:
        by_dataset: dict[str, list[dict[str, Any]]] = {}
        for row in run.samples:
            scored = (row.get("scores") or {}).get("official")
            if scored:
                by_dataset.setdefault(row["dataset"], []).append(scored)
        for g, q, f in itertools.product(G_VALUES, QF_VALUES, QF_VALUES):
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
            rows.append(
                {
                    "strategy": run.strategy,
                    "g": g,
                    "q": q,
                    "f": f,
                    "E2E": sum(means) / len(means) if means else None,
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
    bounds = {r.strategy: oracle_upper_bound(r.run_dir) for r in runs}
    summary["oracle_bestofn_E2E"] = [bounds[s] for s in summary["strategy"]]
    grid = threshold_frame(runs)
    written = [
        sweep_dir / "ablation.csv",
        sweep_dir / "ablation_thresholds.csv",
        sweep_dir / "ablation.md",
        sweep_dir / "ablation.tex",
    ]
    atomic_write_text(written[0], summary.to_csv(index=False))
    atomic_write_text(written[1], grid.to_csv(index=False))
    main_cols = ["strategy", *METRIC_NAMES, "tokens", "USD", "E2E/USD"]
    stat_cols = [
        "strategy",
        "E2E",
        "E2E_lo",
        "E2E_hi",
        "dE2E_vs_s0",
        "p_vs_s0",
        "n_pairs",
        "oracle_bestofn_E2E",
    ]
    slice_ = (
        grid[grid["q"] == grid["f"]]
        .pivot_table(index=["strategy", "g"], columns="q", values="E2E")
        .reset_index()
    )
    slice_.columns = [str(c) if not isinstance(c, float) else f"q=f={c}" for c in slice_.columns]
    notes = []
    if any(r.incomplete for r in runs):
        notes.append(
            "**Incomplete**: "
            + ", ".join(r.strategy for r in runs if r.incomplete)
            + " stopped early (budget) or lost datasets; their numbers cover what finished."
        )
    for agent, meaning in REVISION_MEANING.items():
        if any(r.agent == agent and r.strategy in ("s1", "s2") for r in runs):
            notes.append(meaning)
    md = "\n\n".join(
        [
            "# Ablation (official profile, macro over datasets)",
            to_markdown(summary[main_cols]),
            "## E2E: bootstrap 95 % CI over datasets, paired sign-flip test vs S0 (per-sample E2E), "
            "oracle best-of-n "
            "upper bound (ground truth; not a strategy result)",
            to_markdown(summary[stat_cols]),
            "## E2E threshold sensitivity (g = schema, q = f = semantic and content thresholds)",
            to_markdown(slice_),
            *notes,
        ]
    )
    atomic_write_text(written[2], md + "\n")
    atomic_write_text(written[3], to_latex(summary[main_cols]) + "\n")
    if figure:
        from experiments.figure import ablation_figure

        written.append(ablation_figure(summary, sweep_dir / "ablation.png"))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: redo the ablation files of a sweep folder."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments.ablation", description=__doc__.splitlines()[0]
    )
    parser.add_argument("sweep_dir", type=Path, help="the multirun folder of `python -m experiments -m ...`")
    parser.add_argument("--no-figure", action="store_true", help="skip ablation.png")
    args = parser.parse_args(argv)
    try:
        written = write_ablation(args.sweep_dir, figure=not args.no_figure)
    except FileNotFoundError as exc:
        print(f"error: {exc}")
        return 2
    print((args.sweep_dir / "ablation.md").read_text(encoding="utf-8"))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

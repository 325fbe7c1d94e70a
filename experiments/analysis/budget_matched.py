"""Budget-matched comparison: what S3 (best-of-n) achieves when it may spend only what another strategy
spent.

An S3 run with n stored candidates also contains best-of-1 … best-of-(n-1): its first n' candidates are
exactly what a run with ``strategy.n=n'`` would have generated (candidate k always has seed
``run.seed + k``). So the S3 budget curve, E2E against the cost of the first n' candidates, comes from
selection alone, with no agent call; `budget_matched` then reads, for every other strategy, the largest n'
that costs no more than it did.

Cost is USD when any run spent money, else model calls, else agent invocations (candidates and revisions:
the offline ``rules`` agent makes no model call).

    medstrat budget-matched MULTIRUN_DIR
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agents.base import Usage
from core.cli_errors import CliError, OneLineParser, cli_main, existing_dir
from experiments.analysis.passk import is_best_of_n_run
from experiments.publish.stats import format_pm, mean_spread
from experiments.selection.leaderboard import ReportCache, ScoreCache, StoredDataset, is_judge, load_stored
from experiments.stored.run_folder import RUN_INFO, json_or_empty
from experiments.stored.sweep import RunData, groups, load_runs
from strategies.selectors import build_selector

log = logging.getLogger(__name__)

__all__ = ["COST_AXES", "budget_curve", "budget_matched", "main", "shown_table"]

COST_AXES = ("USD", "calls", "candidates")
"""Cost columns in order of preference (the first one any run spent is used)."""


def _usage_cost(usages: Sequence[Usage]) -> dict[str, float]:
    return {
        "USD": sum(u.cost_usd for u in usages),
        "calls": float(sum(u.calls for u in usages)),
        "candidates": float(len(usages)),
    }


def budget_curve(run_dir: Path, selector: str = "validator_max", validator: str = "evidence") -> pd.DataFrame:
    """E2E and cost of best-of-n' for n' = 1 … n over an S3 run's stored candidates.

    Args:
        run_dir: A finished S3 run.
        selector: The selector (registered name).
        validator: The validator profile the selector reads.

    Returns:
        One row per n': ``n``, ``E2E`` (macro over datasets), ``USD``, ``calls``, ``candidates`` (whole run).
    """
    stored = load_stored(run_dir)
    sel = build_selector(selector)
    reports = ReportCache()
    n_max = max(len(s.candidates) for s in stored)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        scores = ScoreCache(Path(scratch))
        for n in range(1, n_max + 1):
            e2e = []
            usages = []
            for s in stored:
                part = StoredDataset(f"{s.key}@{n}", s.task, s.candidates[:n])
                reps = [reports.get(c, s.task, validator) for c in part.candidates]
                _, scored = scores.score_decisions(part, sel, validator, reps)
                if scored.metrics["official"]:
                    e2e.append(float(scored.metrics["official"]["E2E"]))
                usages += [c.usage for c in part.candidates]
            rows.append({"n": n, "E2E": sum(e2e) / len(e2e) if e2e else None, **_usage_cost(usages)})
    return pd.DataFrame(rows)


def _info(run: RunData) -> dict[str, Any]:
    info = json_or_empty(run.run_dir / RUN_INFO)
    return info if isinstance(info, dict) else {}


def _mean_curve(curves: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The seeds' budget curves as one: per n' (present in every seed) the mean cost and E2E's mean and sd."""
    shared = sorted(set.intersection(*(set(c["n"]) for c in curves)))
    rows = []
    for n in shared:
        at = [c[c["n"] == n].iloc[0] for c in curves]
        e2e, sd = mean_spread([None if pd.isna(r["E2E"]) else float(r["E2E"]) for r in at])
        rows.append(
            {
                "n": n,
                **{a: sum(float(r[a]) for r in at) / len(at) for a in COST_AXES},
                "E2E": e2e,
                "E2E_sd": sd,
            }
        )
    return pd.DataFrame(rows)


def budget_matched(runs: Sequence[RunData]) -> pd.DataFrame:
    """For every S3 row × every other row: the best-of-n' that spends no more than the other strategy.

    Every seed of a row counts: the S3 curve is the mean over its seeds' curves (each from that seed's
    stored candidates), the other row's cost is its mean over seeds, and E2E is reported as mean and sample
    sd over seeds; ``dE2E`` pairs the seeds both rows ran (its sd over those pairs), else it is the
    difference of the means (sd None).

    Args:
        runs: `experiments.analysis.ablation.load_runs` output.

    Returns:
        Rows ``s3``, ``strategy``, ``axis``, ``seeds``, ``s3_seeds``, ``budget`` (the other strategy's mean
        cost), ``E2E``/``E2E_sd`` (its E2E over seeds), ``s3_n`` (largest n' whose mean cost is within the
        budget; None when even one candidate costs more), ``s3_cost``, ``s3_E2E``/``s3_E2E_sd``,
        ``dE2E``/``dE2E_sd`` (S3 at that n' minus the other).
    """
    by_label = groups(runs)
    s3s = {label: members for label, members in by_label.items() if is_best_of_n_run(members[0].run_dir)}
    others = {label: members for label, members in by_label.items() if label not in s3s}
    for label, members in list(s3s.items()):
        judged = [r for r in members if is_judge(_selector_of(r)["selector"])]
        for r in judged:
            # Selecting from fewer stored candidates would need new verdicts: a model call, which an analysis
            # of stored runs never makes (the leaderboard re-ranks judged pools from the request cache).
            log.warning(
                "budget-matched: %s (seed %s, %s) left out: its selector %s needs a judge (re-rank it with "
                "medstrat leaderboard)",
                label,
                r.seed,
                r.run_dir.name,
                _selector_of(r)["selector"],
            )
        s3s[label] = [r for r in members if all(r is not j for j in judged)]
        if not s3s[label]:
            del s3s[label]
    if not s3s:
        return pd.DataFrame()
    spent = {label: [r.cost() for r in members] for label, members in by_label.items()}
    axis = next(
        (a for a in COST_AXES if any(c[a] > 0 for costs in spent.values() for c in costs)), "candidates"
    )
    rows = []
    for s3_label, s3_runs in s3s.items():
        curves = {r.seed: budget_curve(r.run_dir, **_selector_of(r)) for r in s3_runs}
        curve = _mean_curve(list(curves.values()))
        for label, members in others.items():
            budget = sum(c[axis] for c in spent[label]) / len(spent[label])
            e2e = {r.seed: r.metrics.get("macro", {}).get("E2E") for r in members}
            e2e_mean, e2e_sd = mean_spread(list(e2e.values()))
            within = curve[curve[axis] <= budget + 1e-12]
            best = within.iloc[-1] if len(within) else None
            row: dict[str, Any] = {
                "s3": s3_label,
                "strategy": label,
                "axis": axis,
                "seeds": len(members),
                "s3_seeds": len(s3_runs),
                "budget": budget,
                "E2E": e2e_mean,
                "E2E_sd": e2e_sd,
                "s3_n": None,
                "s3_cost": None,
                "s3_E2E": None,
                "s3_E2E_sd": None,
                "dE2E": None,
                "dE2E_sd": None,
            }
            if best is not None:
                n = int(best["n"])
                row.update(s3_n=n, s3_cost=float(best[axis]), s3_E2E=best["E2E"], s3_E2E_sd=best["E2E_sd"])
                row["dE2E"], row["dE2E_sd"] = _paired_difference(curves, n, e2e, best["E2E"], e2e_mean)
            rows.append(row)
    return pd.DataFrame(rows)


def _paired_difference(
    curves: Mapping[int | None, pd.DataFrame],
    n: int,
    other: Mapping[int | None, float | None],
    s3_mean: float | None,
    other_mean: float | None,
) -> tuple[float | None, float | None]:
    """S3 at n' minus the other row: over the seeds both ran (mean, sd), else the difference of the means."""
    pairs = []
    for seed in sorted(set(curves) & set(other), key=lambda s: -1 if s is None else s):
        mine = curves[seed][curves[seed]["n"] == n]["E2E"]
        theirs = other[seed]
        if len(mine) and not pd.isna(mine.iloc[0]) and theirs is not None:
            pairs.append(float(mine.iloc[0]) - float(theirs))
    if pairs:
        return mean_spread(pairs)
    if s3_mean is None or other_mean is None:
        return None, None
    return float(s3_mean) - float(other_mean), None


def _selector_of(run: RunData) -> dict[str, str]:
    config = _info(run).get("config") or {}
    selector = (config.get("selector") or {}).get("name") or "validator_max"
    validator = (config.get("validator") or {}).get("profile") or "evidence"
    return {"selector": str(selector), "validator": str(validator)}


def shown_table(budget: pd.DataFrame) -> pd.DataFrame:
    """The budget-matched table as printed: E2E columns as mean ± sd over seeds, the sd columns folded in.

    Args:
        budget: `budget_matched` output.

    Returns:
        The table without the ``axis`` column, ``E2E``, ``s3_E2E`` and ``dE2E`` as ``mean ± sd`` strings.
    """
    shown = budget.drop(columns=["axis"]).copy()
    for col in ("E2E", "s3_E2E", "dE2E"):
        if f"{col}_sd" in shown:
            shown[col] = [format_pm(m, sd) for m, sd in zip(shown[col], shown[f"{col}_sd"], strict=True)]
            shown = shown.drop(columns=[f"{col}_sd"])
    return shown


@cli_main("medstrat budget-matched")
def main(argv: Sequence[str] | None = None) -> int:
    """CLI: print the budget-matched comparison of a sweep folder; 0, or 2 for bad input (``docs/cli.md``)."""
    parser = OneLineParser(prog="medstrat budget-matched", description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path)
    args = parser.parse_args(argv)
    sweep = existing_dir("SWEEP_DIR", args.sweep_dir)
    runs = load_runs(sweep)
    if not runs:
        raise CliError(f"{sweep}: no run folders (with metrics.json) under it")
    frame = budget_matched(runs)
    if frame.empty:
        raise CliError(f"{sweep}: needs an S3 (best_of_n) run and a run of another strategy to compare with")
    print(f"cost axis: {frame['axis'].iloc[0]}; E2E as mean ± sd over seeds")
    print(shown_table(frame).to_string(index=False))
    return 0

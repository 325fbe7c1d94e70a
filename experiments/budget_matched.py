"""Budget-matched comparison: what S3 (best-of-n) achieves when it may spend only what another strategy
spent.

An S3 run with n stored candidates also contains best-of-1 … best-of-(n-1): its first n' candidates are
exactly what a run with ``strategy.n=n'`` would have generated (candidate k always has seed
``run.seed + k``). So the S3 budget curve, E2E against the cost of the first n' candidates, comes from
selection alone, with no agent call; `budget_matched` then reads, for every other strategy, the largest n'
that costs no more than it did.

Cost is USD when any run spent money, else model calls, else agent invocations (candidates and revisions:
the offline ``rules`` agent makes no model call).

    python -m experiments.budget_matched MULTIRUN_DIR
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agents.base import Usage
from core.cli_errors import CliError, OneLineParser, cli_main, existing_dir
from experiments.leaderboard import ReportCache, ScoreCache, StoredDataset, load_stored
from experiments.sweep_runs import RunData, groups, load_runs
from strategies.selectors import build_selector

__all__ = ["COST_AXES", "budget_curve", "budget_matched", "main"]

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
                _, scored = scores.score(part, sel, validator, reps)
                if scored.metrics["official"]:
                    e2e.append(float(scored.metrics["official"]["E2E"]))
                usages += [c.usage for c in part.candidates]
            rows.append({"n": n, "E2E": sum(e2e) / len(e2e) if e2e else None, **_usage_cost(usages)})
    return pd.DataFrame(rows)


def _info(run: RunData) -> dict[str, Any]:
    path = run.run_dir / "run.json"
    info = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return info if isinstance(info, dict) else {}


def _is_best_of_n(run: RunData) -> bool:
    info = _info(run)
    kind = str(((info.get("config") or {}).get("strategy") or {}).get("kind") or "")
    return kind == "best_of_n" or (not kind and info.get("strategy") == "s3")


def budget_matched(runs: Sequence[RunData]) -> pd.DataFrame:
    """For every S3 row × every other row: the best-of-n' that spends no more than the other strategy.

    Per label the first run (lowest seed) is used; its cost is read from ``usage.json`` (whole run).

    Args:
        runs: `experiments.ablation.load_runs` output.

    Returns:
        Rows ``s3``, ``strategy``, ``axis``, ``budget`` (the other strategy's cost), ``E2E`` (its E2E),
        ``s3_n`` (largest n' within the budget; None when even one candidate costs more), ``s3_cost``,
        ``s3_E2E``, ``dE2E`` (S3 at that n' minus the other).
    """
    by_label = groups(runs)
    firsts = {label: members[0] for label, members in by_label.items()}
    s3s = {label: run for label, run in firsts.items() if _is_best_of_n(run)}
    if not s3s:
        return pd.DataFrame()
    others = {label: run for label, run in firsts.items() if label not in s3s}
    spent = {label: _run_cost(run) for label, run in firsts.items()}
    axis = next((a for a in COST_AXES if any(c[a] > 0 for c in spent.values())), "candidates")
    rows = []
    for s3_label, s3_run in s3s.items():
        curve = budget_curve(s3_run.run_dir, **_selector_of(s3_run))
        for label, run in others.items():
            budget = spent[label][axis]
            within = curve[curve[axis] <= budget + 1e-12]
            best = within.iloc[-1] if len(within) else None
            e2e = run.metrics.get("macro", {}).get("E2E")
            rows.append(
                {
                    "s3": s3_label,
                    "strategy": label,
                    "axis": axis,
                    "budget": budget,
                    "E2E": e2e,
                    "s3_n": int(best["n"]) if best is not None else None,
                    "s3_cost": float(best[axis]) if best is not None else None,
                    "s3_E2E": float(best["E2E"]) if best is not None else None,
                    "dE2E": float(best["E2E"]) - float(e2e) if best is not None and e2e is not None else None,
                }
            )
    return pd.DataFrame(rows)


def _run_cost(run: RunData) -> dict[str, float]:
    total = run.usage.get("total", {})
    return {
        "USD": float(total.get("cost_usd") or 0.0),
        "calls": float(total.get("calls") or 0),
        "candidates": float(run.usage.get("candidates") or 0),
    }


def _selector_of(run: RunData) -> dict[str, str]:
    config = _info(run).get("config") or {}
    selector = (config.get("selector") or {}).get("name") or "validator_max"
    validator = (config.get("validator") or {}).get("profile") or "evidence"
    return {"selector": str(selector), "validator": str(validator)}


@cli_main("python -m experiments.budget_matched")
def main(argv: Sequence[str] | None = None) -> int:
    """CLI: print the budget-matched comparison of a sweep folder; 0, or 2 for bad input (``docs/cli.md``)."""
    parser = OneLineParser(prog="python -m experiments.budget_matched", description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path)
    args = parser.parse_args(argv)
    sweep = existing_dir("SWEEP_DIR", args.sweep_dir)
    runs = load_runs(sweep)
    if not runs:
        raise CliError(f"{sweep}: no run folders (with metrics.json) under it")
    frame = budget_matched(runs)
    if frame.empty:
        raise CliError(f"{sweep}: needs an S3 (best_of_n) run and a run of another strategy to compare with")
    print(frame.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Per-role tables of a run: what each agent of a candidate pool made, won and cost, and what the judge did.

Read from the per-dataset records (every candidate records its maker in ``agent``; a judge selector records
its verdicts and usage in each decision's ``details["judge"]``):

- per agent: candidates made, samples whose selected candidate it made (win rate), samples whose oracle
  choice it made (oracle rate: the scorer's best candidate, lowest index on ties, as the ``oracle`` selector
  picks), tokens, calls and dollars;
- the judge: calls, tokens, dollars, and how many samples it decided, found tied, or answered invalidly
  (those fell back to ``validator_max``).

Written as ``roles.md`` / ``roles.json`` in the run folder and printed under the metrics table.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.base import Usage
from core.atomic import atomic_write_json, atomic_write_text
from strategies.choice import decision_usage

__all__ = ["format_role_table", "oracle_makers", "role_table", "write_role_table"]


def _usage(d: Mapping[str, Any]) -> Usage:
    return Usage(**{k: v for k, v in (d or {}).items() if k != "total_tokens"})


def oracle_makers(record: Mapping[str, Any], dataset_root: Path) -> dict[str, str]:
    """Per sample index, the agent whose candidate the ground-truth oracle would pick (analysis only).

    Scored through `benchmark.score.evaluate.score_candidate`, the one door to ground truth.

    Args:
        record: One dataset's record (``candidates`` with ``output_dir`` and ``agent``).
        dataset_root: The dataset folder.

    Returns:
        ``{index: agent}`` for the samples some candidate wrote.
    """
    from benchmark.score.dataset import e2e_pass
    from benchmark.score.evaluate import score_candidate

    best: dict[str, tuple[tuple[float, ...], str]] = {}
    for k, cand in enumerate(record.get("candidates", [])):
        scored = score_candidate(
            cand["output_dir"], dataset_root, profile="official", unreadable_as_missing=True
        )
        for s in scored.per_sample:
            key = (
                float(e2e_pass(s.to_dict())),
                s.source_score * s.content_fidelity_score,
                s.schema_valid_score * s.semantic_score,
                -k,
            )
            if s.index not in best or key > best[s.index][0]:
                best[s.index] = (key, str(cand.get("agent", "")))
    return {i: agent for i, (_, agent) in best.items()}


def role_table(
    records: Mapping[str, Mapping[str, Any]], roots: Mapping[str, Path] | None = None
) -> dict[str, Any]:
    """The per-agent and judge summary of a run's records.

    Args:
        records: Per dataset, its record.
        roots: Per dataset, its folder; given, the oracle rate is computed too (it scores every candidate).

    Returns:
        ``{"agents": {label: {...}}, "judge": {...} | None}``.
    """
    made: Counter[str] = Counter()
    wins: Counter[str] = Counter()
    oracle: Counter[str] = Counter()
    spent: dict[str, Usage] = defaultdict(Usage)
    decided = 0
    judge = Counter[str]()
    judge_usage = Usage()
    for name, record in records.items():
        cands = record.get("candidates", [])
        for c in cands:
            made[str(c.get("agent", ""))] += 1
            spent[str(c.get("agent", ""))] += _usage(c.get("usage", {}))
        decisions = record.get("decisions", {})
        picks = oracle_makers(record, roots[name]) if roots is not None and name in roots and cands else {}
        for index, d in decisions.items():
            k = d.get("candidate")
            if k is None or not 0 <= k < len(cands):
                continue
            decided += 1
            wins[str(cands[k].get("agent", ""))] += 1
            if str(index) in picks:
                oracle[picks[str(index)]] += 1
            status = (d.get("details", {}).get("judge") or {}).get("status")
            if status:
                judge[str(status)] += 1
        judge_usage += decision_usage(d.get("details", {}) for d in decisions.values())
    agents = {
        label: {
            "candidates": made[label],
            "selected": wins[label],
            "win_rate": round(wins[label] / decided, 4) if decided else 0.0,
            **(
                {"oracle_rate": round(oracle[label] / decided, 4) if decided else 0.0}
                if roots is not None
                else {}
            ),
            "calls": spent[label].calls,
            "tokens": spent[label].total_tokens,
            "cost_usd": round(spent[label].cost_usd, 6),
        }
        for label in sorted(made)
    }
    judged = sum(judge.values())
    return {
        "samples": decided,
        "agents": agents,
        "judge": (
            {
                "samples": judged,
                **{status: judge[status] for status in ("chosen", "tie", "single", "invalid", "budget")},
                "calls": judge_usage.calls,
                "tokens": judge_usage.total_tokens,
                "cost_usd": round(judge_usage.cost_usd, 6),
            }
            if judged
            else None
        ),
    }


def format_role_table(table: Mapping[str, Any]) -> str:
    """The summary as Markdown: one row per agent, then the judge's row."""
    oracle = any("oracle_rate" in a for a in table["agents"].values())
    head = "| agent | candidates | selected | win rate |" + (" oracle rate |" if oracle else "")
    head += " calls | tokens | USD |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for label, a in table["agents"].items():
        row = f"| {label or '?'} | {a['candidates']} | {a['selected']} | {a['win_rate']:.3f} |"
        row += f" {a['oracle_rate']:.3f} |" if oracle else ""
        lines.append(row + f" {a['calls']} | {a['tokens']} | {a['cost_usd']:.4f} |")
    j = table.get("judge")
    if j:
        lines.append("")
        lines.append(
            f"judge: {j['samples']} samples · {j['chosen']} chosen by the judge · {j['tie']} ties · "
            f"{j['invalid']} invalid answers (validator_max chose) · "
            + (f"{j['budget']} not asked (run budget spent) · " if j.get("budget") else "")
            + f"{j['calls']} calls · "
            f"{j['tokens']} tokens · ${j['cost_usd']:.4f}"
        )
    return "\n".join(lines)


def write_role_table(run_dir: Path, table: Mapping[str, Any]) -> str:
    """Write ``roles.json`` and ``roles.md`` into the run folder and return the Markdown."""
    text = format_role_table(table)
    atomic_write_json(run_dir / "roles.json", dict(table))
    atomic_write_text(run_dir / "roles.md", text + "\n")
    return text

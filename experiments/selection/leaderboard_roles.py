"""Model roles on the selector leaderboard (`experiments.selection.leaderboard`): judge selectors, their
cost, and the per-agent win rates of a candidate pool.

- **Judge selectors** (``llm_judge``, ``hybrid``, any factory marked ``needs_judge``) re-rank the stored
  candidates with the judge the source run configured: its ``judge`` node, else its agent's config, as
  `experiments.run.roles.build_judge` builds it for a run, with the run's selector options when it ran that
  selector. The judge's request cache is the run's (``judge.cache``; ``auto`` is the user's cache file), and a
  verdict's request is built from the same candidates and validator reports, so a re-ranking of a judged run
  re-asks nothing already answered: those verdicts are cache hits.
- By default a judge selector is ranked only when every run configured a judge (a ``judge`` node, or a judge
  selector); otherwise it is skipped with one line, since ranking it would make model calls the runs never
  asked for. Named with ``--selectors``, it is ranked with the agent's model as the judge, as a run would.
  Where a judge cannot be built, or every one of its calls failed, the leaderboard says so in one line:
  skipped from the default list, refused (exit 2) when named.
- **Cost**: every row counts what its strategy would have spent: the stored candidates' calls, tokens and
  dollars plus its judge's (a cached verdict at the original call's price), so validator vs judge compare at
  equal spend. ``judge_*`` columns split the judge's part out.
- **Pools**: when the candidates come from more than one agent, ``win:<agent>`` is the share of decided
  samples whose kept candidate that agent made, under each (validator, selector).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from agents.base import Usage
from core.registry import OptionError
from experiments.stored.run_folder import run_info
from strategies.base import SampleDecision
from strategies.choice import decision_usage
from strategies.selectors import Selector, selectors

__all__ = [
    "COST_COLUMNS",
    "FAILED_CALL",
    "JudgeSource",
    "Spend",
    "build_judge_selector",
    "is_judge",
    "judge_notes",
    "judge_sources",
    "ready_judges",
    "role_columns",
    "role_sections",
    "spend_of",
    "unavailable_judges",
]

FAILED_CALL = "judge call failed"
"""How `agents.model.judge.LiteLLMJudge` begins the reason of a verdict whose call failed."""

COST_COLUMNS = ("calls", "tokens", "USD", "judge_calls", "judge_tokens", "judge_USD", "judge_cache_hits")


def is_judge(name: str) -> bool:
    """Whether the registered selector ``name`` needs a judge role (`strategies.judge`)."""
    return bool(getattr(selectors.get(name), "needs_judge", False))


@dataclass(frozen=True)
class JudgeSource:
    """What a stored run says about its judge.

    Attributes:
        judge: The run's ``judge`` node (None: the agent's config judges).
        agent: The run's ``agent`` node.
        selector: The run's ``selector`` node (its options apply when it names the selector being ranked).
    """

    judge: Mapping[str, Any] | None
    agent: Mapping[str, Any]
    selector: Any = None

    @property
    def configured(self) -> bool:
        """Whether the run set up a judge: a ``judge`` node, or a judge selector of its own."""
        name = _selector_name(self.selector)
        return bool(self.judge) or (name is not None and name in selectors.names() and is_judge(name))


def _selector_name(node: Any) -> str | None:
    if isinstance(node, str):
        return node
    if isinstance(node, Mapping) and node.get("name"):
        return str(node["name"])
    return None


def judge_sources(runs: Iterable[Path]) -> dict[str, JudgeSource]:
    """Per run folder (as a string), its judge configuration from ``run.json``."""
    out = {}
    for run in map(Path, runs):  # keyed as `StoredDataset.source` spells the folder
        config = run_info(run).get("config") or {}
        out[str(run)] = JudgeSource(config.get("judge"), config.get("agent") or {}, config.get("selector"))
    return out


def build_judge_selector(name: str, source: JudgeSource) -> Selector:
    """The judge selector ``name`` with the run's judge (and the run's options for it, when it ran it).

    Raises:
        OptionError: No judge can be made from the run's config.
    """
    from experiments.run.roles import build_judge, judge_selector

    node = source.selector
    options = (
        {k: v for k, v in node.items() if k not in ("name", "_target_", "on_error")}
        if isinstance(node, Mapping) and _selector_name(node) == name
        else {}
    )
    selector: Selector = judge_selector(selectors.get(name), options, build_judge(source.judge, source.agent))
    return selector


def ready_judges(
    names: Sequence[str], sources: Mapping[str, JudgeSource], named: bool
) -> tuple[list[str], dict[str, str]]:
    """The selectors to rank, and why each judge selector left out was left out.

    Args:
        names: The candidate selector names.
        sources: Per run, its judge configuration.
        named: The user named the selectors (``--selectors``): a judge that cannot be built is an error.

    Returns:
        ``(names kept, {name: reason skipped})``.

    Raises:
        OptionError: A named judge selector whose judge cannot be built from some run.
    """
    kept: list[str] = []
    skipped: dict[str, str] = {}
    for name in names:
        if not is_judge(name):
            kept.append(name)
            continue
        reason = None
        for run, source in sources.items():
            if not named and not source.configured:
                reason = (
                    f"{run} has no judge (judge=... or a judge selector); name it with --selectors to judge "
                    "with the run's agent model"
                )
                break
            try:
                build_judge_selector(name, source)
            except OptionError as exc:
                reason = f"judge unavailable for {run}: {exc}"
                break
        if reason is None:
            kept.append(name)
        elif named:
            raise OptionError(f"selector {name}: {reason}")
        else:
            skipped[name] = reason
    return kept, skipped


@dataclass(frozen=True)
class Spend:
    """What a selector spent deciding one dataset (small: it crosses process borders).

    Attributes:
        usage: The judge's usage summed over the samples.
        asked: Samples where the judge was asked (it answered, or its answer was invalid).
        failed: Of those, the calls that failed (no answer at all: the judge is unavailable).
        why: The first failure's reason.
    """

    usage: Usage
    asked: int = 0
    failed: int = 0
    why: str = ""


def spend_of(decisions: Mapping[int, SampleDecision]) -> Spend:
    """The judge's spend recorded in a selection's decisions (nothing for a validator-only selector)."""
    asked = failed = 0
    why = ""
    for d in decisions.values():
        verdict = d.details.get("judge") or {}
        if verdict.get("status") in ("chosen", "invalid"):
            asked += 1
            answer = str(verdict.get("answer", ""))
            if verdict.get("status") == "invalid" and answer.startswith(FAILED_CALL):
                failed += 1
                why = why or answer
    return Spend(decision_usage(d.details for d in decisions.values()), asked, failed, why)


def unavailable_judges(spent: Mapping[str, Sequence[Spend]]) -> dict[str, str]:
    """The judge selectors none of whose calls got an answer, with the first failure's reason."""
    out = {}
    for name, parts in spent.items():
        asked = sum(p.asked for p in parts)
        if asked and sum(p.failed for p in parts) == asked:
            out[name] = "judge unavailable: " + next(p.why for p in parts if p.why)
    return out


def role_columns(
    cells: Sequence[tuple[Sequence[Any], Mapping[int, int | None], Spend]],
    agents: Sequence[str],
    judged: bool,
) -> dict[str, Any]:
    """The cost and per-agent columns of one leaderboard row.

    Args:
        cells: Per dataset: its stored candidates (``usage``, ``agent``), the kept candidate per sample, and
            the selector's spend there.
        agents: Every agent label of the stored candidates (a ``win:<agent>`` column each when more than one).
        judged: Some row of the leaderboard has a judge selector (the ``judge_*`` columns are written).

    Returns:
        The columns.
    """
    made = Usage()
    judge = Usage()
    wins = dict.fromkeys(agents, 0)
    decided = 0
    for candidates, chosen, spend in cells:
        for c in candidates:
            made = made + c.usage
        judge = judge + spend.usage
        for k in chosen.values():
            if k is not None:
                decided += 1
                wins[candidates[k].agent] = wins.get(candidates[k].agent, 0) + 1
    total = made + judge
    out: dict[str, Any] = {
        "calls": total.calls,
        "tokens": total.total_tokens,
        "USD": round(total.cost_usd, 6),
    }
    if judged:
        out |= {
            "judge_calls": judge.calls,
            "judge_tokens": judge.total_tokens,
            "judge_USD": round(judge.cost_usd, 6),
            "judge_cache_hits": judge.cache_hits,
        }
    if len(agents) > 1:
        out |= {f"win:{a}": round(wins[a] / decided, 4) if decided else None for a in agents}
    return out


def role_sections(frame: pd.DataFrame, skipped: Mapping[str, str]) -> list[str | pd.DataFrame]:
    """The leaderboard's Markdown sections for cost, per-agent win rates and skipped judge selectors."""
    cost = ["validator", "selector", *[c for c in COST_COLUMNS if c in frame.columns]]
    parts: list[str | pd.DataFrame] = [
        "## Cost per selector: the stored candidates' plus the judge's (cached verdicts at the original "
        "call's price), so selectors compare at equal spend",
        frame[cost],
    ]
    wins = [c for c in frame.columns if str(c).startswith("win:")]
    if wins:
        parts += [
            "## Per agent: share of decided samples whose kept candidate each agent made",
            frame[["validator", "selector", *wins]],
        ]
    parts += [f"**{name} skipped**: {why}" for name, why in skipped.items()]
    return parts


def judge_notes(frame: pd.DataFrame, skipped: Mapping[str, str]) -> list[str]:
    """One line per judge selector skipped, and per row whose judge made calls the request cache did not
    answer (new spend: under a validator profile the run did not use, the judge sees other messages)."""
    lines = [f"{name} skipped: {why}" for name, why in skipped.items()]
    if "judge_calls" in frame.columns:
        for _, row in frame.iterrows():
            new = int(row["judge_calls"]) - int(row["judge_cache_hits"])
            if new > 0:
                lines.append(
                    f"{row['validator']}/{row['selector']}: {new} judge calls not in the request cache "
                    f"(${float(row['judge_USD']):.4f} for all its verdicts)"
                )
    return lines

"""A selector's answer with more than a position: why, whether it fell back, and what choosing cost.

A selector may return a plain ``int``; one that spends model calls (the judge selectors, `strategies.judge`)
returns a `Choice` so `strategies.selectors.choose` can record the reason, count the fallback and keep the
usage in the sample's decision, where the strategy adds it to its cost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.base import Usage
from strategies.context import current

__all__ = ["Choice", "bind_loop", "decision_usage", "selection_usage"]


@dataclass(frozen=True)
class Choice:
    """One selector decision.

    Attributes:
        candidate: The position chosen in the candidates list.
        reason: Why, in words (written to the sample's decision).
        fallback: True when the selector could not decide itself and ``validator_max`` chose (counted).
        usage: What deciding cost (a judge's call), added to the strategy's usage.
        details: JSON-able extras kept in the decision under ``details["judge"]``.
        charged: ``usage`` was charged to the run's budget when it was spent (the judge holds the budget);
            False: `selection_usage` charges it.
    """

    candidate: int
    reason: str
    fallback: bool = False
    usage: Usage = field(default_factory=Usage)
    details: Mapping[str, Any] = field(default_factory=dict)
    charged: bool = False


def decision_usage(details: Iterable[Mapping[str, Any]]) -> Usage:
    """The usage recorded by `Choice` selectors in decisions' details (``details["judge"]["usage"]``)."""
    total = Usage()
    for d in details:
        spent = (d.get("judge") or {}).get("usage")
        if isinstance(spent, Mapping):
            total = total + Usage(**{k: v for k, v in spent.items() if k != "total_tokens"})
    return total


def selection_usage(decisions: Mapping[int, Any]) -> Usage:
    """What choosing cost over a dataset's decisions; what was not charged to the run's budget yet is, here.

    Args:
        decisions: The `strategies.base.SampleDecision` per index.

    Returns:
        The summed usage of the selector's calls (zero for selectors that call nothing).
    """
    details = [d.details for d in decisions.values()]
    spent = decision_usage(details)
    budget = current().budget
    if budget is not None:
        # What a judge holding the budget charged per verdict is not charged twice.
        owed = decision_usage(d for d in details if not (d.get("judge") or {}).get("charged"))
        if owed.calls:
            budget.charge(owed.total_tokens, owed.cost_usd)
    return spent


def bind_loop(selector: object) -> None:
    """Give a selector that makes model calls (``bind_loop``) the running event loop before it runs in a
    worker thread, so its calls share the loop of the run's other model calls."""
    bind = getattr(selector, "bind_loop", None)
    if callable(bind):
        bind(asyncio.get_running_loop())

"""No paying for a model that makes no progress: a candidate's conversations that end on a limit with nothing
written make the later ones prove themselves, and after two the rest are not started (issue 33).

A model that only explores would otherwise run every conversation of a phased candidate (the plan, each batch,
the dataset JSON) to ``max_turns``: 240 requests on a 10-sample dataset at the default 60. With the guard the
plan's 60 turns are followed by batches that must write within 15 turns, and the dataset JSON is not started:
90 requests. A model that writes is not touched: its first write lifts the bound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from agents.llm.conversation import ConversationLimits, ConversationState

__all__ = ["BARREN_FRACTION", "MAX_BARREN", "ProgressGuard"]

MAX_BARREN = 2
"""Conversations of a candidate that may end on a limit with nothing written before the rest are skipped."""

BARREN_FRACTION = 4
"""After one such conversation, the next get ``max_turns // BARREN_FRACTION`` turns to write something."""


@dataclass
class ProgressGuard:
    """Counts a candidate's barren conversations (`ConversationState.barren`) and bounds the next ones.

    Attributes:
        barren: Conversations that ended on a limit with nothing written so far.
    """

    barren: int = 0

    def limits(self, limits: ConversationLimits) -> ConversationLimits:
        """``limits`` for the next conversation: a first-write bound once one conversation was barren."""
        if not self.barren:
            return limits
        return dataclasses.replace(limits, write_within=max(1, limits.max_turns // BARREN_FRACTION))

    def record(self, state: ConversationState, budget_spent: bool) -> bool:
        """Count a finished conversation; True when the candidate's remaining conversations must not start.

        Args:
            state: How it ended.
            budget_spent: The run's budget is spent (a stop the model is not to blame for).
        """
        if state.barren and not budget_spent:
            self.barren += 1
        return self.barren >= MAX_BARREN

    def skipped(self, unstarted: Sequence[str]) -> ConversationState | None:
        """The state that says, in the candidate's reason, which conversations were not started and why."""
        if self.barren < MAX_BARREN or not unstarted:
            return None
        return ConversationState(
            stop_reason=f"{', '.join(unstarted)}: {self.barren} conversations ended on a limit with nothing "
            "written"
        )

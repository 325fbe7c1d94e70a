"""The judge role: a model that picks one of several candidate outputs of a sample.

A strategy's judge selector (`strategies.judge`) builds a `JudgeRequest` (the text of what differs, the
validator's messages, one composite image of the candidates side by side) and asks a `Judge`; the judge
answers with a candidate number through a tool call. This module holds only the protocol and the data, so any
agent config can provide a judge (`agents.model.judge.LiteLLMJudge`, or a custom ``_target_``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agents.base import Usage

__all__ = ["CHOOSE_TOOL", "Judge", "JudgeAnswer", "JudgeRequest"]

CHOOSE_TOOL = "choose_candidate"
"""The one tool a judge is offered; its ``candidate`` argument is the answer."""


@dataclass(frozen=True)
class JudgeRequest:
    """What a judge sees for one sample.

    Attributes:
        dataset: The dataset name.
        index: The manifest index.
        choices: How many candidates it chooses among (answers are ``1..choices``).
        text: The question: per candidate, the fields that differ and the validator's failed checks.
        image_png: One PNG with the candidates' images side by side (numbered), or None when none has one.
        key: What makes two requests the same (the request cache key and the judge's seed come from it).
        seed: The run's seed (``Task.seed``): another seed asks for another verdict, even on the same
            candidates; the same seed is answered by the request cache.
    """

    dataset: str
    index: int
    choices: int
    text: str
    image_png: bytes | None
    key: str
    seed: int = 0


@dataclass(frozen=True)
class JudgeAnswer:
    """A judge's verdict.

    Attributes:
        choice: The 1-based candidate number, or None when the answer was missing or invalid.
        reason: The judge's one-line reason, or why the answer is invalid.
        usage: What the call cost.
        charged: The judge charged the call to the run's `agents.budget.Budget` itself (it holds it), so the
            strategy must not charge it again.
        stopped: The run's budget was spent: the judge was not asked (``choice`` is None).
    """

    choice: int | None
    reason: str
    usage: Usage
    charged: bool = False
    stopped: bool = False


@runtime_checkable
class Judge(Protocol):
    """Anything that answers a `JudgeRequest` (synchronously: selectors run in worker threads)."""

    name: str

    def judge(self, request: JudgeRequest) -> JudgeAnswer:
        """Choose one candidate.

        Args:
            request: The sample's candidates as text and image.

        Returns:
            The answer (``choice`` None when the judge gave no valid one; never raises for that).
        """
        ...

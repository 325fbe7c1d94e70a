"""A scripted judge for the fake server: requests offering the ``choose_candidate`` tool get a fixed verdict.

Wraps any script, so one server plays both the candidates' agent (a replay) and the judge of
``selector=llm_judge`` offline: ``medstrat fakeserver --replay DATASET --judge 1``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.judge import CHOOSE_TOOL
from testbed.fakeserver.script import Reply, Script, Step, tool_call

__all__ = ["is_judge_request", "with_judge"]


def is_judge_request(request: Mapping[str, Any]) -> bool:
    """Whether the request offers the judge's ``choose_candidate`` tool."""
    tools = request.get("tools") or []
    return any(isinstance(t, Mapping) and t.get("function", {}).get("name") == CHOOSE_TOOL for t in tools)


def with_judge(script: Script, candidate: int, usage: tuple[int, int] | None = None) -> Script:
    """Answer judge requests with ``choose_candidate(candidate)``, every other request with ``script``.

    Args:
        script: What the agents' requests get.
        candidate: The 1-based number the judge always answers (out of range: an invalid answer, for tests).
        usage: Fixed ``(prompt_tokens, completion_tokens)`` of a verdict; None: estimated from the request.

    Returns:
        The combined script.
    """
    verdict = Reply(
        tool_calls=(tool_call(CHOOSE_TOOL, {"candidate": candidate, "reason": "scripted judge"}),),
        usage=usage,
    )

    def answer(request: Mapping[str, Any], serial: int) -> Step:
        return verdict if is_judge_request(request) else script(request, serial)

    return answer

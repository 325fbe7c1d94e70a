"""Scripts for the fake server: what it answers to each request.

A script is any callable ``(request_body, serial) -> Step``. A `Step` is an assistant message (text and/or
tool calls) or a fault (an HTTP error status, a garbage body, a delay). `TurnScript` answers by conversation
turn (the number of assistant messages already in the request), so concurrent candidates each walk the same
script independently, and a retried request gets the same answer as the failed attempt would have.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Delay",
    "Fault",
    "Garbage",
    "Reply",
    "Script",
    "Step",
    "TurnScript",
    "assistant_turn",
    "script_from_json",
    "tool_call",
    "with_faults",
]


@dataclass(frozen=True)
class Reply:
    """An assistant message.

    Attributes:
        content: Text (None when only tool calls are returned).
        tool_calls: OpenAI-style tool calls (see `tool_call`).
        usage: Optional fixed ``(prompt_tokens, completion_tokens)``; else estimated from the request size.
    """

    content: str | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()
    usage: tuple[int, int] | None = None


@dataclass(frozen=True)
class Fault:
    """An HTTP error answer (429, 500, 503 ...).

    Attributes:
        status: The HTTP status code.
        message: The error message in the OpenAI error body.
        retry_after: The ``Retry-After`` header in seconds sent with a 429 (None: no header).
    """

    status: int = 500
    message: str = "injected fault"
    retry_after: float | None = 0.0


@dataclass(frozen=True)
class Garbage:
    """A 200 answer whose body is not a chat completion.

    Attributes:
        body: The raw body.
    """

    body: str = "<<<this is not json>>>"


@dataclass(frozen=True)
class Delay:
    """Wait before answering (longer than the client timeout to provoke a timeout).

    Attributes:
        seconds: How long to wait.
        then: What to answer afterwards.
    """

    seconds: float
    then: Step = field(default_factory=lambda: Reply(content="late"))


Step = Reply | Fault | Garbage | Delay
Script = Callable[[Mapping[str, Any], int], Step]


def tool_call(name: str, arguments: Mapping[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    """Build an OpenAI tool call.

    Args:
        name: The tool name.
        arguments: The arguments (a dict is JSON-encoded; a string is sent verbatim, e.g. invalid JSON).
        call_id: The call id; defaults to a deterministic id derived from name and arguments.

    Returns:
        A ``{"id", "type": "function", "function": {"name", "arguments"}}`` dict.
    """
    args = arguments if isinstance(arguments, str) else json.dumps(dict(arguments), sort_keys=True)
    cid = call_id or f"call_{abs(hash((name, args))) % 10**10:010d}"
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def assistant_turn(*calls: dict[str, Any], content: str | None = None) -> Reply:
    """Build an assistant reply made of tool calls (and optional text).

    Args:
        *calls: Tool calls from `tool_call`.
        content: Optional text.

    Returns:
        The reply.
    """
    return Reply(content=content, tool_calls=tuple(calls))


def _turn_of(request: Mapping[str, Any]) -> int:
    return sum(1 for m in request.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")


class TurnScript:
    """Answer turn k of every conversation with ``steps[k]``.

    Args:
        steps: One step per turn; a callable step is called with the request to build the answer.
        after_end: What to answer once the steps run out (default: a text reply, no tool call).
    """

    def __init__(
        self,
        steps: Sequence[Step | Callable[[Mapping[str, Any]], Step]],
        after_end: Step | None = None,
    ) -> None:
        self.steps = list(steps)
        self.after_end = after_end or Reply(content="I have nothing more to do.")

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        turn = _turn_of(request)
        if turn >= len(self.steps):
            return self.after_end
        step = self.steps[turn]
        return step(request) if callable(step) else step


def with_faults(
    script: Script,
    rate: float,
    faults: Sequence[Step] = (Fault(429, "rate limited"),),
    seed: int = 0,
) -> Script:
    """Wrap a script so that a share of requests gets a fault instead of the scripted answer.

    Args:
        script: The underlying script.
        rate: Probability of a fault per request.
        faults: Faults to choose among (uniformly).
        seed: Seed of the fault draws.

    Returns:
        The wrapped script.
    """
    rng = random.Random(seed)
    lock = threading.Lock()

    def faulty(request: Mapping[str, Any], serial: int) -> Step:
        with lock:
            hit = rng.random() < rate
            fault = rng.choice(list(faults))
        return fault if hit else script(request, serial)

    return faulty


def _step_from_json(item: Mapping[str, Any]) -> Step:
    if "fault" in item:
        after = item.get("retry_after", 0.0)
        return Fault(
            int(item["fault"]),
            str(item.get("message", "injected fault")),
            None if after is None else float(after),
        )
    if "garbage" in item:
        return Garbage(str(item["garbage"]))
    if "delay" in item:
        return Delay(float(item["delay"]), _step_from_json(item.get("then", {"content": "late"})))
    calls = tuple(
        tool_call(str(c["name"]), c.get("arguments", {}), c.get("id")) for c in item.get("tool_calls", [])
    )
    return Reply(content=item.get("content"), tool_calls=calls)


def script_from_json(data: Sequence[Mapping[str, Any]]) -> TurnScript:
    """Build a turn script from JSON (the ``--script FILE`` format of ``medstrat fakeserver``).

    Each item is one turn: ``{"content": "...", "tool_calls": [{"name": "list_dir", "arguments": {...}}]}``,
    ``{"fault": 429}``, ``{"garbage": "..."}`` or ``{"delay": 5, "then": {...}}``.

    Args:
        data: The parsed JSON list.

    Returns:
        The script.

    Raises:
        ValueError: The JSON is not a list of objects.
    """
    if not isinstance(data, list) or not all(isinstance(i, dict) for i in data):
        raise ValueError("a fake-server script must be a JSON list of objects, one per turn")
    return TurnScript([_step_from_json(i) for i in data])

"""What of a conversation is sent to the model: old tool results, long arguments and images beyond a window.

The agent keeps the whole history (the trace records it); each request sends a *view* of it: the opening
messages (system prompt, instruction, task) whole, the last `ContextWindow.keep_results` tool results whole,
older tool results and long tool-call arguments replaced by a one-line stub, and only the last
`ContextWindow.max_images` image parts (older ones become a text stub). A request's size is then bounded by
the window, not by how many turns the conversation took. A context-window error makes the agent retry with
`ContextWindow.shrunk` (half the window, half the images) instead of failing the candidate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ContextWindow", "count_images", "text_chars"]

# Below these sizes a stub would save nothing worth the lost detail.
_SHORT_RESULT = 240
_SHORT_ARGUMENTS = 320


@dataclass(frozen=True)
class ContextWindow:
    """How much of the history each request carries.

    Attributes:
        keep_results: Tool results (the most recent ones) sent whole; older ones are stubbed.
        max_images: Image parts sent per request (the most recent ones).
    """

    keep_results: int = 12
    max_images: int = 4

    def __post_init__(self) -> None:
        if self.keep_results < 1 or self.max_images < 0:
            raise ValueError(
                f"context window needs keep_results >= 1 and max_images >= 0, got {self.keep_results}, "
                f"{self.max_images}"
            )

    def shrunk(self) -> ContextWindow | None:
        """Half the window after a context-window error, or None when it cannot shrink any more."""
        if self.keep_results <= 1 and self.max_images == 0:
            return None
        return ContextWindow(max(1, self.keep_results // 2), self.max_images // 2)

    def view(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The messages to send: the history (opening messages first) with what lies beyond the window
        stubbed, as a new list whose changed messages are new dicts.

        Every assistant tool call keeps its tool message (providers reject an unanswered call); only the
        contents shrink. Messages inside the window are passed as they are (not copied).
        """
        out: list[dict[str, Any]] = [dict(m) if not isinstance(m, dict) else m for m in messages]
        opening = next((k for k, m in enumerate(out) if m.get("role") == "assistant"), len(out))
        tool_positions = [k for k in range(opening, len(out)) if out[k].get("role") == "tool"]
        # Everything before the oldest kept tool result is "old": its results and long arguments are stubbed.
        kept_from = (
            tool_positions[-self.keep_results] if len(tool_positions) >= self.keep_results else opening
        )
        for k in range(opening, kept_from):
            message = out[k]
            role = message.get("role")
            if role == "tool":
                content = message.get("content")
                if isinstance(content, str) and len(content) > _SHORT_RESULT:
                    out[k] = {
                        **message,
                        "content": f"[elided: an earlier tool result of {len(content)} chars]",
                    }
            elif role == "assistant" and message.get("tool_calls"):
                out[k] = {**message, "tool_calls": [_stub_arguments(c) for c in message["tool_calls"]]}
        _keep_last_images(out, opening, self.max_images)
        return out


def _stub_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str) or len(arguments) <= _SHORT_ARGUMENTS:
        return dict(call)
    # Still a JSON object: some providers' converters parse old arguments again (Gemini does).
    stub = json.dumps({"elided": f"{len(arguments)} chars of arguments of an earlier call"})
    return {**call, "function": {**function, "arguments": stub}}


def _keep_last_images(out: list[dict[str, Any]], opening: int, max_images: int) -> None:
    seen = 0
    for k in range(len(out) - 1, opening - 1, -1):
        content = out[k].get("content")
        if out[k].get("role") != "user" or not isinstance(content, list):
            continue
        parts = []
        changed = False
        for part in reversed(content):
            if isinstance(part, Mapping) and part.get("type") == "image_url":
                seen += 1
                if seen > max_images:
                    parts.append({"type": "text", "text": "[image elided: an earlier view_image]"})
                    changed = True
                    continue
            parts.append(part)
        if changed:
            out[k] = {**out[k], "content": list(reversed(parts))}


def count_images(messages: Sequence[Mapping[str, Any]]) -> int:
    """Image parts in a request's messages.

    Args:
        messages: Chat messages.

    Returns:
        How many ``image_url`` parts they hold.
    """
    return sum(
        1
        for m in messages
        if isinstance(m.get("content"), list)
        for part in m["content"]
        if isinstance(part, Mapping) and part.get("type") == "image_url"
    )


def text_chars(messages: Sequence[Mapping[str, Any]]) -> int:
    """Characters of a request's messages with the images left out (a text-token estimate is this / 4).

    Args:
        messages: Chat messages.

    Returns:
        The JSON length of the messages, image parts excluded.
    """
    total = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            rest = {k: v for k, v in m.items() if k != "content"}
            parts = [p for p in content if not (isinstance(p, Mapping) and p.get("type") == "image_url")]
            total += len(json.dumps({**rest, "content": parts}, default=str))
        else:
            total += len(json.dumps(m, default=str))
    return total

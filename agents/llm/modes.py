"""Which mode a candidate of the LiteLLM agent runs in, and its fallback: the one place it is decided.

The modes are sibling modules: the tools loop (`agents.llm.conversation`, in phases by `agents.llm.phases`
for a dataset larger than a batch), the guided mode (`agents.llm.guided`) and the script mode
(`agents.llm.script_mode`). `pick` chooses how a candidate starts:

- ``agent.mode=script``: the script mode, whatever the model or the window (it has no fallback);
- ``agent.mode=guided``: the guided mode;
- ``agent.mode=tools``: the guided mode at once when an earlier candidate of the agent showed that its model
  cannot call tools, or when the opening of a tools conversation cannot fit the server's window
  (`opening_overflow`); else the tools loop, redone guided in the same candidate when it shows that the
  model cannot call tools (`cannot_call_tools`; the attempt's calls stay in the usage).

A candidate that ran guided names why in its status: ``guided mode (<reason>)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from agents.llm.conversation import ConversationState

__all__ = ["MODES", "cannot_call_tools", "opening_overflow", "pick"]

MODES = ("tools", "script", "guided")
"""Values of ``agent.mode``: the per-sample tool calls, the coding-agent mode (`agents.llm.script_mode`),
or the guided mode (`agents.llm.guided`: the framework walks the steps, the model answers each with one
constrained JSON object)."""


def pick(
    setting: str,
    remembered: str | None,
    window: int | None,
    opening: Callable[[], Sequence[str]],
    reply_tokens: int,
) -> tuple[str, str | None]:
    """The mode a candidate starts in and, when it is guided, why.

    Args:
        setting: ``agent.mode`` (one of `MODES`).
        remembered: Why an earlier candidate of the agent fell back to guided (`cannot_call_tools`), or None.
        window: The server's window in tokens, None when unknown.
        opening: The texts of the tools-mode opening request (built only when the window is checked).
        reply_tokens: The per-call completion cap (0: none).

    Returns:
        ``("script", None)``, ``("tools", None)`` or ``("guided", reason)``.
    """
    if setting == "script" and remembered is None:
        return "script", None
    because = "agent.mode=guided" if setting == "guided" else remembered
    if because is None and window is not None:
        because = opening_overflow(opening(), reply_tokens, window)
    return ("tools", None) if because is None else ("guided", because)


def cannot_call_tools(states: Mapping[str, ConversationState], mode: str = "tools") -> str | None:
    """Why a tools-mode candidate showed its model cannot work the tool loop (it is redone guided), in one
    line naming ``mode`` (a script-mode candidate is redone guided alike); None when it did not.

    Either the model answered in prose only (no tool call in the whole candidate, a conversation ended on its
    text replies), or the first request of a conversation already overflowed the window.
    """
    if any(s.tool_calls for s in states.values()):
        return None
    for label, state in states.items():
        failed = state.failed or ""
        if "replies in a row without a tool call" in failed:
            return f"{mode} mode, {label}: {failed}"
        if failed.startswith("context window exceeded") and state.turns == 0:
            return f"{mode} mode, {label}: the first request did not fit the window"
    return None


def opening_overflow(texts: Sequence[str], reply_tokens: int, window: int) -> str | None:
    """Why a tools-mode opening request (its texts and tool definitions) with its reply cannot fit a known
    window; None when it fits.
    """
    # Characters per token of our prompts (JSON and English) run at 3-4: 3.5 keeps a near miss sent.
    tokens = int(sum(len(text) for text in texts) / 3.5) + reply_tokens
    if tokens <= window:
        return None
    return f"the tools-mode opening, ~{tokens} tokens with its reply, exceeds the window of {window}"

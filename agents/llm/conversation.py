"""One conversation of the LiteLLM agent with the model: the tool loop, bounded and accounted.

A conversation sends a `ContextWindow` view of its history with the tool definitions, runs every tool call
the model returns inside the sandbox, appends the results (tool messages, then one user message with the
images a vision model asked to see), and repeats until the model calls ``finish`` (and the finish is
accepted), a limit or the run budget stops it, or the model fails it:

- ``max_text_replies`` replies in a row without a tool call, or ``max_failed_turns`` turns in a row whose
  every tool call failed, end it with a reason (one failed call among good ones in a parallel turn, such as a
  harmless "no such file", does not count);
- a ``finish`` while samples of its scope are missing or fail the schema is answered once with the list;
  the next ``finish`` is accepted;
- a context-window error shrinks the window and retries (a few times), it does not fail the candidate;
- what goes back into the history is clean: tool-call arguments are stored as the JSON they parsed to, and an
  argument string that is not a JSON object, or is over ``max_argument_chars``, is replaced by a short
  JSON stub with the error (it never reaches the provider again, and an oversized one is never run).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from agents.base import FatalAgentError, Usage
from agents.budget import Budget, BudgetExceeded
from agents.llm import prompts
from agents.llm.context import ContextWindow, count_images
from agents.model.client import ModelClient, ModelReply, is_context_window_error
from agents.tools.tool_pool import ToolPool
from agents.tools.tools import ToolBox, ToolResult
from agents.trace import TraceWriter

__all__ = [
    "WRITING_TOOLS",
    "ConversationLimits",
    "ConversationSetup",
    "ConversationState",
    "FinishCheck",
    "converse",
    "opening_messages",
    "record_reply",
]

log = logging.getLogger(__name__)

#: ``(toolbox) -> problems`` run when the model calls finish: one line per missing or invalid output.
FinishCheck = Callable[[ToolBox], list[str]]

# Context-window errors retried with a smaller window before the conversation gives up.
_MAX_SHRINKS = 3

WRITING_TOOLS = frozenset({"write_annotation", "write_data_meta", "write_plan", "edit_fields", "run_python"})
"""The tools whose successful call is progress: an output, the plan, an edit, or code that may write them."""


@dataclass(frozen=True)
class ConversationLimits:
    """Bounds of one conversation (the plan, one batch, the dataset JSON, or a whole small dataset).

    Attributes:
        max_turns: Model calls.
        max_tool_calls: Tool calls.
        max_tokens: Prompt plus completion tokens.
        max_text_replies: Replies in a row without a tool call before it ends.
        max_failed_turns: Turns in a row whose every tool call failed before it ends.
        max_argument_chars: Longest tool-call argument string run; a longer one is refused unrun.
        write_within: Turns the conversation gets to make its first write (`WRITING_TOOLS`) before it is
            stopped; None: no such bound (the agent sets it once another conversation of the candidate ended
            on a limit with nothing written).
    """

    max_turns: int
    max_tool_calls: int
    max_tokens: int
    max_text_replies: int = 3
    max_failed_turns: int = 4
    max_argument_chars: int = 1_000_000
    write_within: int | None = None


@dataclass
class ConversationState:
    """What one conversation did and how it ended.

    Attributes:
        usage: Tokens, cost, calls, retries and cache hits.
        turns: Model calls answered.
        tool_calls: Tool calls run (or refused).
        stop_reason: The limit or budget that stopped it, if any.
        failed: Why the model or the provider failed it, if so.
        fatal: Set when the failure dooms the whole run (`FatalAgentError`).
        finished: The model's ``finish`` was accepted.
        finish_warned: A ``finish`` was answered with the missing outputs once already.
        text_streak: Replies in a row without a tool call.
        failed_turns: Turns in a row whose every tool call failed.
        largest_request_images: Most image parts sent in one request.
        shrinks: Context-window errors answered by shrinking the window.
        writes: Successful calls of the `WRITING_TOOLS`.
        limit_hit: One of its own limits stopped it (turns, tokens, tool calls, first write), not the budget,
            the model or the provider.
        note: How it adapted to the model, said in the candidate's reason (a script run from a prose reply).
    """

    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    tool_calls: int = 0
    stop_reason: str | None = None
    failed: str | None = None
    fatal: str | None = None
    finished: bool = False
    finish_warned: bool = False
    text_streak: int = 0
    failed_turns: int = 0
    largest_request_images: int = 0
    shrinks: int = 0
    writes: int = 0
    limit_hit: bool = False
    note: str | None = None

    @property
    def barren(self) -> bool:
        """It ended on one of its limits with nothing written: what a model that makes no progress does."""
        return self.limit_hit and self.writes == 0 and self.failed is None


@dataclass
class ConversationSetup:
    """What a conversation works with (built once per candidate by the agent).

    Attributes:
        client: The model client.
        tools: Tool definitions offered.
        params: Sampling parameters.
        candidate_index: Part of the cache key.
        budget: The run budget, or None.
        executor: Where tool calls run (off the event loop).
        pool: Worker processes for heavy tools, or None.
        trace: The candidate's trace.
        window: The context window.
    """

    client: ModelClient
    tools: Sequence[Mapping[str, Any]]
    params: Mapping[str, Any]
    candidate_index: int
    budget: Budget | None
    executor: Executor
    pool: ToolPool | None
    trace: TraceWriter
    window: ContextWindow


async def converse(
    setup: ConversationSetup,
    messages: list[dict[str, Any]],
    toolbox: ToolBox,
    limits: ConversationLimits,
    label: str,
    finish_check: FinishCheck | None = None,
    prose: Callable[[Any], list[dict[str, Any]]] | None = None,
) -> ConversationState:
    """Run one conversation (``label`` names it in the trace: ``"plan"``, ``"batch 2/5"`` ...) to its end, its
    history appended to ``messages``; never raises (a fatal provider error is in ``state.fatal``).

    ``finish_check`` lists the problems that make the first ``finish`` be answered instead of accepted;
    ``prose`` gives the tool calls a reply without any means (its text content in, calls out; none: a text
    reply, as without it): the script mode's fenced script (`agents.llm.script_mode.ProseCalls`).
    """
    state = ConversationState()
    trace = setup.trace
    window = setup.window
    while not state.finished:
        limit = _limit_hit(limits, state)
        if limit is not None:
            state.stop_reason, state.limit_hit = limit, True
            trace.write("stop", conversation=label, reason=limit)
            return state
        view = window.view(messages)
        try:
            if setup.budget is not None:
                setup.budget.check()
            reply = await setup.client.complete(view, setup.tools, setup.params, setup.candidate_index)
        except BudgetExceeded as exc:
            state.stop_reason = exc.reason
            trace.write("stop", conversation=label, reason=exc.reason)
            return state
        except FatalAgentError as exc:  # every candidate would fail alike: the agent stops the run
            state.failed = state.fatal = exc.reason
            trace.write("provider_error", conversation=label, error=exc.reason, fatal=True)
            return state
        except Exception as exc:  # non-transient, or transient with retries exhausted
            if is_context_window_error(exc):
                smaller = window.shrunk() if state.shrinks < _MAX_SHRINKS else None
                if smaller is not None:
                    state.shrinks += 1
                    trace.write(
                        "context_trimmed",
                        conversation=label,
                        keep_results=smaller.keep_results,
                        max_images=smaller.max_images,
                        error=str(exc)[:300],
                    )
                    window = smaller
                    continue
                state.failed = (
                    f"context window exceeded ({type(exc).__name__}) even with the history trimmed "
                    f"{state.shrinks} times"
                )
            else:
                state.failed = f"provider error: {type(exc).__name__}: {str(exc)[:500]}"
            trace.write("provider_error", conversation=label, error=state.failed)
            return state
        record_reply(setup, state, reply, view, label)
        calls = list(reply.message.get("tool_calls") or [])
        if not calls and prose is not None:
            calls = prose(reply.message.get("content"))
            if calls:
                trace.write("prose_calls", conversation=label, tools=[c["function"]["name"] for c in calls])
        runnable = [_prepare(c, limits.max_argument_chars) for c in calls]
        messages.append(
            {**reply.message, "tool_calls": [r.stored for r in runnable]} if calls else reply.message
        )
        if not calls:
            state.text_streak += 1
            if state.text_streak >= limits.max_text_replies:
                state.failed = f"{state.text_streak} replies in a row without a tool call"
                trace.write("stop", conversation=label, reason=state.failed)
                return state
            messages.append({"role": "user", "content": prompts.NO_TOOL_CALL_NUDGE})
            continue
        state.text_streak = 0
        # One hop per assistant turn (not per tool call): the tools run in order in the agent's pool,
        # and their results and trace lines are built there too, off the event loop.
        await asyncio.get_running_loop().run_in_executor(
            setup.executor, _run_tools, setup, runnable, messages, toolbox, state, limits, label, finish_check
        )
        if state.failed is not None:
            trace.write("stop", conversation=label, reason=state.failed)
            return state
        if state.stop_reason is not None and not state.finished:
            trace.write("stop", conversation=label, reason=state.stop_reason)
            return state
    return state


def opening_messages(system: str, texts: Sequence[str]) -> list[dict[str, Any]]:
    """A conversation's first messages: the system prompt, then one user message per text."""
    return [{"role": "system", "content": system}, *({"role": "user", "content": t} for t in texts)]


def record_reply(
    setup: ConversationSetup,
    state: ConversationState,
    reply: ModelReply,
    view: Sequence[Mapping[str, Any]],
    label: str,
) -> None:
    """Account one answered call: the state's turns and usage, the run budget, the trace's ``model_call``."""
    state.turns += 1
    state.largest_request_images = max(state.largest_request_images, count_images(view))
    state.usage = state.usage + reply.usage()
    # Cache hits cost nothing in this run, so they do not draw on the run budget.
    if setup.budget is not None and not reply.cached:
        setup.budget.charge(reply.prompt_tokens + reply.completion_tokens, reply.cost_usd)
    setup.trace.write(
        "model_call",
        conversation=label,
        turn=state.turns,
        message=reply.message,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        cost_usd=reply.cost_usd,
        cached=reply.cached,
        retries=reply.retries,
        latency_s=round(reply.latency_s, 4),
        slot_wait_s=round(reply.waited_s, 4),
        sent_messages=len(view),
        sent_images=count_images(view),
    )


def _limit_hit(limits: ConversationLimits, state: ConversationState) -> str | None:
    if limits.write_within is not None and state.writes == 0 and state.turns >= limits.write_within:
        return (
            f"nothing written in {limits.write_within} turns (the bound after a conversation of this "
            "candidate ended on a limit with nothing written)"
        )
    if state.turns >= limits.max_turns:
        return f"max_turns ({limits.max_turns}) reached"
    if state.usage.total_tokens >= limits.max_tokens:
        return f"max_tokens ({limits.max_tokens}) reached"
    return None


@dataclass(frozen=True)
class _Call:
    """A tool call as run (``raw``) and as stored in the history (``stored``)."""

    call_id: str
    name: str
    raw: str
    stored: dict[str, Any]
    refused: ToolResult | None
    path: str


def _prepare(call: Mapping[str, Any], max_chars: int) -> _Call:
    """Decide what of a tool call is run and what is kept in the history sent to the provider."""
    function = call.get("function") or {}
    name = str(function.get("name", ""))
    raw = function.get("arguments")
    raw = raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {})
    refused: ToolResult | None = None
    parsed: Any = None
    if len(raw) > max_chars:
        refused = ToolResult(
            f"Not run: the arguments of {name} are {len(raw)} characters, over the limit of {max_chars}. "
            "Send smaller arguments (one sample per call; images are rendered by the tools, never sent).",
            "argument_too_large",
        )
        stored_args = json.dumps(
            {"refused": f"{len(raw)} chars of arguments over the {max_chars}-char limit"}
        )
    else:
        try:
            parsed = json.loads(raw or "{}")
        except ValueError as exc:
            parsed = exc
        if isinstance(parsed, dict):
            stored_args = json.dumps(parsed, ensure_ascii=False)
        else:
            # Kept as is, a malformed string breaks some providers' conversion of the whole history (Gemini:
            # "Unable to convert openai tool calls"); the stub is valid JSON and says what was wrong.
            problem = str(parsed) if isinstance(parsed, ValueError) else "not a JSON object"
            stored_args = json.dumps({"invalid_arguments": problem[:200], "head": raw[:120]})
    stored = {
        "id": str(call.get("id", "")),
        "type": "function",
        "function": {"name": name, "arguments": stored_args},
    }
    path = str(parsed.get("path", "?")) if isinstance(parsed, dict) else "?"
    return _Call(str(call.get("id", "")), name, raw, stored, refused, path)


def _run_tools(
    setup: ConversationSetup,
    calls: list[_Call],
    messages: list[dict[str, Any]],
    toolbox: ToolBox,
    state: ConversationState,
    limits: ConversationLimits,
    label: str,
    finish_check: FinishCheck | None,
) -> None:
    """Run one assistant turn's tool calls in order; called in the agent's pool while the loop waits."""
    images: list[dict[str, Any]] = []
    failures = 0
    for call in calls:
        if state.tool_calls >= limits.max_tool_calls:
            # Every tool call of the assistant turn needs an answer, or providers reject the next request.
            messages.append(
                {"role": "tool", "tool_call_id": call.call_id, "content": "Not run: tool-call limit."}
            )
            state.stop_reason = f"max_tool_calls ({limits.max_tool_calls}) reached"
            state.limit_hit = True
            continue
        state.tool_calls += 1
        if call.refused is not None:
            result = call.refused
        elif setup.pool is None:
            result = toolbox.run(call.name, call.raw)
        else:
            result = setup.pool.run(toolbox, call.name, call.raw)
        if result.finished and finish_check is not None and not state.finish_warned:
            problems = finish_check(toolbox)
            if problems:
                state.finish_warned = True
                result = ToolResult(
                    prompts.FINISH_NOT_YET.format(problems="\n".join(f"- {p}" for p in problems))
                )
        setup.trace.write(
            "tool",
            conversation=label,
            name=call.name,
            call_id=call.call_id,
            arguments=call.raw,
            error=result.error,
            result=result.text[:2000],
            image=result.image_url is not None,
        )
        text = result.text + ("\nThe image follows in the next message." if result.image_url else "")
        messages.append({"role": "tool", "tool_call_id": call.call_id, "content": text})
        if result.image_url is not None:
            caption = prompts.VIEW_IMAGE_CAPTION.format(path=call.path, call_id=call.call_id)
            images.append({"type": "text", "text": caption})
            images.append({"type": "image_url", "image_url": {"url": result.image_url}})
        if result.error is None and call.name in WRITING_TOOLS and call.refused is None:
            state.writes += 1
        if result.error is not None:
            failures += 1
            last_error = f"{result.error} in {call.name or '?'}: {result.text[:200]}"
        if result.finished:
            state.finished = True
    if images:
        messages.append({"role": "user", "content": images})
    if calls and failures == len(calls):
        state.failed_turns += 1
        if state.failed_turns >= limits.max_failed_turns:
            state.failed = (
                f"{state.failed_turns} turns in a row with every tool call failed (last: {last_error})"
            )
    else:
        state.failed_turns = 0

"""The LiteLLM tool-calling agent: a model standardizes one dataset by calling sandboxed tools.

The loop: send the conversation and the tool definitions, run every tool call the model returns inside the
sandbox, append the results (tool messages, then one user message with the images a vision model asked to
see), and repeat until the model calls ``finish`` or a limit ends the candidate. Limits and the run budget end
a candidate cleanly with what was written; a non-transient provider error or repeated bad tool calls fail it
with a reason. Nothing raises out of `generate`/`revise`: the run goes on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import shutil
import time
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agents.base import Candidate, FatalAgentError, Feedback, Task, Usage
from agents.instructions import instruction_text
from agents.litellm import prompts
from agents.litellm.budget import Budget, BudgetExceeded
from agents.litellm.cache import RequestCache
from agents.litellm.client import ModelClient, TokenPrice
from agents.litellm.code_tool import CODE_TOOL, CodeLimits, CodeRunner, RunPythonArgs
from agents.litellm.retry import RetryPolicy
from agents.litellm.review_tools import EDITABLE_OPTION, feedback_with_values
from agents.litellm.sandbox import Sandbox, SandboxLimits
from agents.litellm.script_mode import (
    MODES,
    SCRIPT_SYSTEM_PROMPT,
    ScriptOptions,
    script_tool_definitions,
    script_toolbox,
)
from agents.litellm.tool_pool import ToolPool
from agents.litellm.tools import ToolBox, tool_definitions
from agents.trace import TraceWriter

__all__ = ["LiteLLMAgent"]

log = logging.getLogger(__name__)


@dataclass
class _Run:
    """Mutable state of one candidate's loop."""

    usage: Usage
    turns: int = 0
    tool_calls: int = 0
    bad_streak: int = 0
    stop_reason: str | None = None
    failed: str | None = None
    fatal: str | None = None
    finished: bool = False


class LiteLLMAgent:
    """A tool-calling agent over any LiteLLM model string.

    Args:
        model: The LiteLLM model string, e.g. ``"openai/gpt-4o-mini"`` or ``"gemini/gemini-2.0-flash"``.
        api_base: Endpoint override (a local vLLM/Ollama server, the fake server in tests).
        api_key: Explicit key; by default LiteLLM reads the provider's environment variable. Never written.
        temperature: Sampling temperature; None uses the task's.
        max_tokens_per_call: Completion-token cap per call.
        timeout_s: Per-attempt provider timeout.
        retry: Retry policy for transient provider errors.
        cache: A `RequestCache`, or a path to its SQLite file, or None for no cache.
        budget: A run-wide `Budget` shared by every candidate, or None.
        price: Fallback per-token price for models LiteLLM cannot price.
        sandbox_limits: Size caps of the tools.
        vision: Whether to send images to the model; None asks ``litellm.supports_vision``.
        max_bad_tool_calls: Consecutive failed tool calls (invalid JSON, unknown tool, refused path ...)
            after which the candidate fails.
        extra_params: Further ``acompletion`` parameters (e.g. ``{"top_p": 0.9}``).
        tools: Opt-in tool sets: ``"code"`` adds ``run_python`` (`agents.litellm.code_tool`).
        code_limits: Bounds of each ``run_python`` call (`CodeLimits` or a mapping of its fields).
        tool_processes: Worker processes for the CPU-heavy tools (render, inspect, view_image, the write and
            review tools; `agents.litellm.tool_pool`), so they never hold the event loop's GIL; 0 runs every
            tool in the agent's threads. Started on first use, stopped by `close`.
        mode: ``"tools"`` (per-sample tool calls) or ``"script"``: the coding-agent mode, where the model
            explores and writes one conversion script run by ``run_python`` (`agents.litellm.script_mode`).
        script: Bounds and feedback of the script mode (`ScriptOptions` or a mapping of its fields).

    Raises:
        MissingApiKeyError: No key for the provider (before any call; a `ValueError`).
        ValueError: An unknown model string, mode, tool set, code limit, script option or a negative
            ``tool_processes``.
    """

    name = "litellm"
    #: Waits on a model for most of its time: ``run.processes=auto`` runs it in one process per core.
    calls_model = True

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens_per_call: int | None = 4096,
        timeout_s: float = 120.0,
        retry: RetryPolicy | Mapping[str, Any] | None = None,
        cache: RequestCache | Path | str | None = None,
        budget: Budget | None = None,
        price: TokenPrice | None = None,
        sandbox_limits: SandboxLimits | None = None,
        vision: bool | None = None,
        max_bad_tool_calls: int = 5,
        extra_params: Mapping[str, Any] | None = None,
        tools: str | Sequence[str] | None = None,
        code_limits: Mapping[str, Any] | CodeLimits | None = None,
        tool_processes: int = 0,
        mode: str = "tools",
        script: Mapping[str, Any] | ScriptOptions | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown agent.mode {mode!r}; valid: {list(MODES)}")
        #: ``"tools"`` or ``"script"`` (the coding-agent mode).
        self.mode = mode
        self.script = ScriptOptions.of(script)
        if tool_processes < 0:
            raise ValueError(f"agent.tool_processes must be 0 or more, got {tool_processes}")
        tool_sets = {tools} if isinstance(tools, str) else set(tools or ())
        if tool_sets - {"code"}:
            raise ValueError(f"unknown agent.tools {sorted(tool_sets - {'code'})}; valid: ['code']")
        #: Whether ``run_python`` is offered (``tools=["code"]``).
        self.code = "code" in tool_sets
        self.code_limits = CodeLimits.of(code_limits)
        if isinstance(retry, Mapping):  # from the config: agent.retry.max_attempts=...
            retry = RetryPolicy(**retry)
        if isinstance(cache, str | Path):
            cache = RequestCache(Path(cache))
        self.client = ModelClient(
            model,
            api_base=api_base,
            api_key=api_key,
            timeout_s=timeout_s,
            retry=retry,
            cache=cache,
            price=price,
            extra_params=extra_params,
        )
        self._api_key = api_key
        self.model = model
        self.temperature = temperature
        self.max_tokens_per_call = max_tokens_per_call
        self.budget = budget
        self.sandbox_limits = sandbox_limits or SandboxLimits()
        self.vision = self.client.supports_vision() if vision is None else vision
        self.max_bad_tool_calls = max_bad_tool_calls
        if mode == "script":
            self.tools = script_tool_definitions()
        else:
            self.tools = tool_definitions({CODE_TOOL: RunPythonArgs} if self.code else None)
        self.tool_processes = tool_processes
        self._tool_pool: ThreadPoolExecutor | None = None
        # Workers start on the first pooled call; the finalizer stops them if `close` is never called.
        self._process_pool = ToolPool(tool_processes) if tool_processes else None
        if self._process_pool is not None:
            weakref.finalize(self, self._process_pool.close)

    def _tools_executor(self) -> ThreadPoolExecutor:
        """The agent's own pool for tool work, created on first use.

        Not the event loop's default executor: LiteLLM hops through that one on every ``acompletion``
        (it maps parameters in a worker thread), so renders queued there would delay every model call.
        As many threads as cores: tool work is mostly CPU under the GIL, and more threads would only take
        the GIL from the event loop more often; plus one per tool process, since a thread waiting for a
        process holds no GIL and the processes should not wait for a thread.
        """
        if self._tool_pool is None:
            self._tool_pool = ThreadPoolExecutor(
                max_workers=max(2, os.cpu_count() or 2) + self.tool_processes,
                thread_name_prefix="litellm-agent-tools",
            )
        return self._tool_pool

    def close(self) -> None:
        """Stop the tool threads and tool processes (the run calls this at its end and on Ctrl-C).

        The agent stays usable: the pools start again on the next call.
        """
        # Processes first: a turn still running in a thread then gets "not run" for its remaining pooled
        # calls instead of holding the shutdown until all of them are done.
        if self._process_pool is not None:
            self._process_pool.close()
            self._process_pool = ToolPool(self.tool_processes)
            weakref.finalize(self, self._process_pool.close)
        if self._tool_pool is not None:
            self._tool_pool.shutdown(wait=True, cancel_futures=True)
            self._tool_pool = None

    def __repr__(self) -> str:
        return f"LiteLLMAgent(model={self.model!r}, vision={self.vision})"

    async def generate(self, task: Task) -> Candidate:
        """Standardize the dataset into ``task.output_dir``.

        Args:
            task: The dataset and candidate options.

        Returns:
            The candidate; ``status="failed"`` with a reason when the provider or the model failed.
        """
        return await self._run(task, self._opening(task), "generate")

    async def revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable_fields: Sequence[str]
    ) -> Candidate:
        """Copy ``candidate`` into ``task.output_dir`` and let the model revise the editable fields.

        Args:
            task: The dataset; its ``output_dir`` receives the revised candidate.
            candidate: The candidate to revise.
            feedback: What to fix.
            editable_fields: Field paths the revision may change (the strategy enforces the whitelist).

        Returns:
            The revised candidate.
        """
        source = Path(candidate.output_dir).resolve()
        target = task.output_dir.resolve()
        if source != target and source.is_dir():
            await asyncio.get_running_loop().run_in_executor(
                self._tools_executor(), lambda: shutil.copytree(source, target, dirs_exist_ok=True)
            )
        # The feedback carries the current value of every field it names, read from the copy being revised.
        text = feedback_with_values(feedback, target)
        revise = prompts.REVISE_PROMPT.format(editable=", ".join(editable_fields) or "(none)", feedback=text)
        # edit_fields refuses, at once, a field outside the editable ones (the strategy enforces them anyway).
        editing = dataclasses.replace(task, options={**task.options, EDITABLE_OPTION: list(editable_fields)})
        return await self._run(editing, [*self._opening(task), revise], "revise")

    # -- the loop --------------------------------------------------------------------------------

    def _opening(self, task: Task) -> list[str]:
        """The first user messages: the task instruction verbatim (the benchmark's S0 text when the run
        found one, `agents.instructions`), then this dataset's name, manifest and schema."""
        return [instruction_text(task.options, "s0"), self._task_prompt(task)]

    def _task_prompt(self, task: Task) -> str:
        manifest = "\n".join(f"{e.index}\t{e.relpath}" for e in task.entries)
        schema = (
            json.dumps(task.output_schema, ensure_ascii=False, sort_keys=True)
            if task.output_schema
            else prompts.ANNOTATION_GUIDE
        )
        return prompts.TASK_PROMPT.format(
            name=task.name,
            candidate_index=task.candidate_index,
            count=len(task.entries),
            manifest=manifest,
            schema=schema,
        )

    def _params(self, task: Task) -> dict[str, Any]:
        params: dict[str, Any] = {
            "temperature": task.temperature if self.temperature is None else self.temperature,
        }
        if self.max_tokens_per_call is not None:
            params["max_tokens"] = self.max_tokens_per_call
        return params

    async def _run(self, task: Task, user_prompts: Sequence[str], mode: str) -> Candidate:
        start = time.perf_counter()
        out = task.output_dir
        out.mkdir(parents=True, exist_ok=True)
        trace_path = task.out_dir / f"trace_{mode}.jsonl"
        trace = TraceWriter(trace_path, secrets=[self._api_key])
        sandbox = Sandbox(task.root, out, self.sandbox_limits)
        if self.mode == "script":
            toolbox = script_toolbox(task, sandbox, self.vision, self.code_limits, self.script)
            system = SCRIPT_SYSTEM_PROMPT
        else:
            extra_tools = None
            if self.code:
                runner = CodeRunner(task.root, out, task.out_dir / "workspace", self.code_limits)
                extra_tools = {CODE_TOOL: (RunPythonArgs, runner)}
            toolbox = ToolBox(task, sandbox, self.vision, extra_tools)
            system = prompts.with_code_tool(prompts.SYSTEM_PROMPT) if self.code else prompts.SYSTEM_PROMPT
        if self._process_pool is not None:
            self._process_pool.warm()  # the workers start while the first model call is in flight
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            *({"role": "user", "content": text} for text in user_prompts),
        ]
        state = _Run(usage=Usage())
        trace.write(
            "start",
            mode=mode,
            agent_mode=self.mode,
            model=self.model,
            dataset=task.name,
            candidate=task.candidate_index,
            samples=len(task.entries),
            vision=self.vision,
        )
        try:
            await self._loop(task, messages, toolbox, state, trace)
        except Exception as exc:  # the last line of defence: a candidate never takes the run down
            log.exception("candidate %d of %s crashed", task.candidate_index, task.name)
            state.failed = f"internal error: {type(exc).__name__}: {exc}"
        usage = Usage(
            prompt_tokens=state.usage.prompt_tokens,
            completion_tokens=state.usage.completion_tokens,
            cost_usd=state.usage.cost_usd,
            wall_s=time.perf_counter() - start,
            calls=state.usage.calls,
            retries=state.usage.retries,
            cache_hits=state.usage.cache_hits,
        )
        written = sorted(toolbox.written_indices())
        missing = sorted(set(task.indices) - set(written))
        status, reason = _outcome(state, written, missing)
        trace.write("end", status=status, reason=reason, written=written, usage=usage.to_dict())
        trace.close()
        if state.fatal is not None:
            raise FatalAgentError(state.fatal)
        return Candidate(
            output_dir=out,
            usage=usage,
            trace_path=trace_path,
            status=status,
            reason=reason,
            candidate_index=task.candidate_index,
            agent=self.name,
        )

    def _limit_hit(self, task: Task, state: _Run) -> str | None:
        limits = task.limits
        if state.turns >= limits.max_turns:
            return f"max_turns ({limits.max_turns}) reached"
        if state.usage.total_tokens >= limits.max_tokens:
            return f"max_tokens per candidate ({limits.max_tokens}) reached"
        return None

    async def _loop(
        self,
        task: Task,
        messages: list[dict[str, Any]],
        toolbox: ToolBox,
        state: _Run,
        trace: TraceWriter,
    ) -> None:
        params = self._params(task)
        while not state.finished:
            limit = self._limit_hit(task, state)
            if limit is not None:
                state.stop_reason = limit
                trace.write("stop", reason=limit)
                return
            try:
                if self.budget is not None:
                    self.budget.check()
                reply = await self.client.complete(messages, self.tools, params, task.candidate_index)
            except BudgetExceeded as exc:
                state.stop_reason = exc.reason
                trace.write("stop", reason=exc.reason)
                return
            except FatalAgentError as exc:  # every candidate would fail alike: `_run` stops the run
                state.failed = state.fatal = exc.reason
                trace.write("provider_error", error=exc.reason, fatal=True)
                return
            except Exception as exc:  # non-transient, or transient with retries exhausted
                state.failed = f"provider error: {type(exc).__name__}: {str(exc)[:500]}"
                trace.write("provider_error", error=state.failed)
                return
            state.turns += 1
            spent = reply.prompt_tokens + reply.completion_tokens
            state.usage = state.usage + Usage(
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                cost_usd=reply.cost_usd,
                calls=1,
                retries=reply.retries,
                cache_hits=int(reply.cached),
            )
            # Cache hits cost nothing in this run, so they do not draw on the run budget.
            if self.budget is not None and not reply.cached:
                self.budget.charge(spent, reply.cost_usd)
            trace.write(
                "model_call",
                turn=state.turns,
                message=reply.message,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                cost_usd=reply.cost_usd,
                cached=reply.cached,
                retries=reply.retries,
                latency_s=round(reply.latency_s, 4),
            )
            messages.append(reply.message)
            calls = reply.message.get("tool_calls") or []
            if not calls:
                messages.append({"role": "user", "content": prompts.NO_TOOL_CALL_NUDGE})
                continue
            # One hop per assistant turn (not per tool call): the tools run in order in the agent's pool,
            # and their results and trace lines are built there too, off the event loop.
            await asyncio.get_running_loop().run_in_executor(
                self._tools_executor(), self._run_tools, task, calls, messages, toolbox, state, trace
            )
            if state.failed is not None:
                return
            if state.stop_reason is not None and not state.finished:
                trace.write("stop", reason=state.stop_reason)
                return

    def _run_tools(
        self,
        task: Task,
        calls: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        toolbox: ToolBox,
        state: _Run,
        trace: TraceWriter,
    ) -> None:
        """Run one assistant turn's tool calls in order; called in the agent's pool while the loop waits."""
        images: list[dict[str, Any]] = []
        for call in calls:
            function = call.get("function") or {}
            name = str(function.get("name", ""))
            call_id = str(call.get("id", ""))
            if state.tool_calls >= task.limits.max_tool_calls:
                # Every tool call of the assistant turn needs an answer, or providers reject the next request.
                messages.append(
                    {"role": "tool", "tool_call_id": call_id, "content": "Not run: tool-call limit."}
                )
                state.stop_reason = f"max_tool_calls ({task.limits.max_tool_calls}) reached"
                continue
            state.tool_calls += 1
            arguments = function.get("arguments")
            pool = self._process_pool
            result = toolbox.run(name, arguments) if pool is None else pool.run(toolbox, name, arguments)
            trace.write(
                "tool",
                name=name,
                call_id=call_id,
                arguments=function.get("arguments"),
                error=result.error,
                result=result.text[:2000],
                image=result.image_url is not None,
            )
            text = result.text + ("\nThe image follows in the next message." if result.image_url else "")
            messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
            if result.image_url is not None:
                caption = prompts.VIEW_IMAGE_CAPTION.format(path=_path_arg(function), call_id=call_id)
                images.append({"type": "text", "text": caption})
                images.append({"type": "image_url", "image_url": {"url": result.image_url}})
            if result.error is None:
                state.bad_streak = 0
            else:
                state.bad_streak += 1
                if state.bad_streak >= self.max_bad_tool_calls:
                    state.failed = (
                        f"{state.bad_streak} failed tool calls in a row "
                        f"(last: {result.error} in {name or '?'}: "
                        f"{result.text[:200]})"
                    )
            if result.finished:
                state.finished = True
        if images:
            messages.append({"role": "user", "content": images})


def _path_arg(function: Mapping[str, Any]) -> str:
    try:
        args = json.loads(function.get("arguments") or "{}")
    except ValueError:
        return "?"
    return str(args.get("path", "?")) if isinstance(args, dict) else "?"


def _outcome(
    state: _Run, written: list[int], missing: list[int]
) -> tuple[Literal["ok", "failed"], str | None]:
    """Status and reason of a finished loop: a candidate with no annotation at all is a failure."""
    if state.failed is not None:
        return "failed", state.failed
    stopped = state.stop_reason or "finished"
    if not written:
        return "failed", f"{stopped}; no annotation was written"
    if state.finished and not missing:
        return "ok", None
    notes = [
        r
        for r in (state.stop_reason, prompts.FINISH_MISSING.format(missing=missing) if missing else None)
        if r
    ]
    return "ok", "; ".join(notes)

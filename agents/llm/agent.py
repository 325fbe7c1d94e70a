"""The LiteLLM tool-calling agent: a model standardizes one dataset by calling sandboxed tools.

What a request carries is bounded independently of the dataset's sample count:

- a dataset of at most ``batch_size`` samples is one conversation (`agents.llm.conversation`);
- a larger one is done in phases (`agents.llm.phases`): a plan conversation that explores and writes down
  the conventions, one conversation per batch of samples given the plan and its own samples only (run
  concurrently, ``concurrency`` at a time), and one that writes ``data_meta.json``;
- within every conversation, old tool results, long arguments and all but the last few images are stubbed
  (`agents.llm.context`), and a context-window error shrinks that window instead of failing.

Limits (`agents.base.Limits`) bound each conversation, so a candidate's totals scale with its manifest. A
candidate that a limit or the budget stops with samples (or the dataset JSON) unwritten is ``incomplete``
with the missing indices; one the model or the provider fails is ``failed`` with the reason. Nothing raises
out of `generate`/`revise` but `FatalAgentError` (a failure every candidate would share).
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
from functools import partial
from pathlib import Path
from typing import Any

from agents.base import Candidate, FatalAgentError, Feedback, ManifestEntry, Task, Usage
from agents.budget import Budget, BudgetExceeded
from agents.instructions import instruction_text
from agents.llm import modes, phases, prompts, sample_evidence
from agents.llm.context import ContextWindow
from agents.llm.conversation import (
    ConversationLimits,
    ConversationSetup,
    ConversationState,
    FinishCheck,
    converse,
    opening_messages,
)
from agents.llm.guided import GuidedRun, Structured
from agents.llm.options import AgentOptions
from agents.llm.outcome import Revision, candidate_outcome, unwritten_reasons
from agents.llm.progress import ProgressGuard
from agents.llm.script_mode import (
    run_script,
    script_tool_definitions,
    script_toolbox,
)
from agents.model.cache import sampling_seed
from agents.model.client import ModelClient
from agents.model.config import ModelConfig
from agents.model.vision import resolve_vision
from agents.tools.code_tool import CODE_TOOL, CodeRunner, RunPythonArgs
from agents.tools.review_tools import EDITABLE_OPTION
from agents.tools.sandbox import Sandbox
from agents.tools.tool_pool import ToolPool
from agents.tools.tools import ToolBox, tool_definitions
from agents.trace import TraceWriter

__all__ = ["LiteLLMAgent", "resolve_vision"]

log = logging.getLogger(__name__)

_DEFAULTS = AgentOptions()


@dataclass
class _Candidate:
    """What the conversations of one candidate share."""

    task: Task
    setup: ConversationSetup
    sandbox: Sandbox
    extra_tools: dict[str, Any] | None
    states: dict[str, ConversationState]
    stop: asyncio.Event
    #: Per sample, the last failed read of its file in any conversation (`ToolBox.sample_failures`).
    sample_failures: dict[int, str] = dataclasses.field(default_factory=dict)
    #: Counts conversations that end on a limit with nothing written (`agents.llm.progress`).
    progress: ProgressGuard = dataclasses.field(default_factory=ProgressGuard)


class LiteLLMAgent:
    """A tool-calling agent over any LiteLLM model string.

    The config gives the fields of both objects flat (``agent.model``, ``agent.batch_size``,
    ``agent.server.slots``): `core.registry.call_with_options` builds them.

    Args:
        model: The model, its endpoint, key, retries, cache, price and server (`ModelConfig`).
        options: Sampling, bounds, tools and mode (`AgentOptions`).
        budget: A run-wide `Budget` shared by every candidate, or None.

    Raises:
        MissingApiKeyError: No key for the provider (before any call; a `ValueError`).
        ValueError: An unknown model string.

    Example:
        >>> agent = LiteLLMAgent(ModelConfig("gemini/gemini-2.0-flash"), AgentOptions(batch_size=4))
    """

    name = "litellm"
    #: Waits on a model for most of its time: ``run.processes=auto`` runs it in one process per core.
    calls_model = True
    #: Its guided plan step samples ``task.options["plans"]`` (else ``agent.plans``) plans.
    samples_plans = True

    def __init__(
        self, model: ModelConfig, options: AgentOptions = _DEFAULTS, *, budget: Budget | None = None
    ) -> None:
        self.options = options
        #: ``"tools"``, ``"guided"`` or ``"script"`` (the coding-agent mode).
        self.mode = options.mode
        self.script = options.script
        #: Whether ``run_python`` is offered (``tools=["code"]``).
        self.code = "code" in options.tools
        self.code_limits = options.code_limits
        #: What the config and the server said of the server (window, slots); None without a ``server`` block.
        self.server = model.server
        window, slots = self.server.resolve(model.api_base) if self.server is not None else (None, None)
        self.client = ModelClient(model, slots=slots, context_window=window)
        #: How the guided mode asks for JSON (a forced tool call until the server shows it ignores one).
        self.structured = Structured()
        #: Why this agent's candidates go straight to the guided mode (its model showed it cannot call tools).
        self._guided_because: str | None = None
        self._api_key = model.api_key
        #: Whether a call's cost is known (LiteLLM's price map or ``price``): ``run.budget_usd`` needs it.
        self.priced = self.client.priced
        self.model = model.model
        self.temperature = options.temperature
        self.max_tokens_per_call = options.max_tokens_per_call
        self.budget = budget
        known = self.client.vision_support() if options.vision is None else None
        self.vision = resolve_vision(options.vision, model.model, known)
        self.batch_size = options.batch_size
        self.concurrency = options.concurrency
        self.window = ContextWindow(options.keep_results, options.max_images if self.vision else 0)
        extra_models = {CODE_TOOL: RunPythonArgs} if self.code else {}
        # Script mode offers its own tool set (explore, run_python, review, finish); no render/write tools.
        self.tools = (
            script_tool_definitions() if self.mode == "script" else tool_definitions(extra_models or None)
        )
        # The plan conversation only looks and writes the plan: no tool that writes a sample (or runs code
        # that could) is offered there, so every sample is written by its own batch.
        self._plan_tools = tool_definitions(
            {phases.PLAN_TOOL: phases.WritePlanArgs}, only=phases.PLAN_READ_TOOLS
        )
        self.tool_processes = options.tool_processes
        self._tool_pool: ThreadPoolExecutor | None = None
        # Workers start on the first pooled call; the finalizer stops them if `close` is never called.
        self._process_pool = ToolPool(self.tool_processes) if self.tool_processes else None
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

        Returns:
            The candidate: ``ok``; ``incomplete`` with the missing indices when a limit or the budget
            stopped it; ``failed`` with a reason when the provider or the model failed.
        """
        return await self._candidate(task, "generate", None, None)

    async def revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable_fields: Sequence[str]
    ) -> Candidate:
        """Copy ``candidate`` into ``task.output_dir`` and let the model revise the editable fields.

        A dataset larger than ``batch_size`` is revised batch by batch: each batch conversation gets the
        general feedback, the items about its own samples and its samples only (with per-sample items, only
        the samples they name are revisited); items about ``data_meta.json`` go to one last conversation.
        """
        source = Path(candidate.output_dir).resolve()
        target = task.output_dir.resolve()
        if source != target and source.is_dir():
            await asyncio.get_running_loop().run_in_executor(
                self._tools_executor(), lambda: shutil.copytree(source, target, dirs_exist_ok=True)
            )
        plan = phases.read_plan(source.parent / phases.PLAN_FILE)
        # edit_fields refuses, at once, a field outside the editable ones (the strategy enforces them anyway).
        editing = dataclasses.replace(task, options={**task.options, EDITABLE_OPTION: list(editable_fields)})
        revising = Revision(feedback, list(editable_fields), target, plan)
        return await self._candidate(editing, "revise", revising, plan)

    # -- one candidate ------------------------------------------------------------------------------

    async def _candidate(
        self, task: Task, mode: str, revision: Revision | None, plan: dict[str, Any] | None
    ) -> Candidate:
        start = time.perf_counter()
        out = task.output_dir
        out.mkdir(parents=True, exist_ok=True)
        trace_path = task.out_dir / f"trace_{mode}.jsonl"
        trace = TraceWriter(trace_path, secrets=[self._api_key])
        extra_tools = None
        if self.code:
            runner = CodeRunner(task.root, out, task.out_dir / "workspace", self.code_limits)
            extra_tools = {CODE_TOOL: (RunPythonArgs, runner)}
        if self._process_pool is not None:
            self._process_pool.warm()  # the workers start while the first model call is in flight
        setup = ConversationSetup(
            client=self.client,
            tools=self.tools,
            params=self._params(task, revision),
            candidate_index=task.candidate_index,
            budget=self.budget,
            executor=self._tools_executor(),
            pool=self._process_pool,
            trace=trace,
            window=self.window,
        )
        sandbox = Sandbox(task.root, out, self.options.sandbox_limits)
        run = _Candidate(task, setup, sandbox, extra_tools, {}, asyncio.Event())
        # Script mode is one conversation whatever the size: the script, not the context, covers the samples.
        phased = self.mode != "script" and len(task.entries) > self.batch_size
        trace.write(
            "start",
            mode=mode,
            model=self.model,
            dataset=task.name,
            candidate=task.candidate_index,
            samples=len(task.entries),
            vision=self.vision,
            batch_size=self.batch_size,
            phased=phased,
        )
        guided_because: str | None = None
        try:
            opening = partial(self._opening, task, revision, phased)
            window, reply = self.client.context_window, self.max_tokens_per_call or 0
            starts, guided_because = modes.pick(self.mode, self._guided_because, window, opening, reply)
            if starts == "script":
                await self._script(run, revision)
            elif starts == "tools":
                await (self._phases(run, revision, plan) if phased else self._single(run, revision))
            if starts != "guided":  # a model that only wrote prose (no fenced script either) is redone guided
                guided_because = modes.cannot_call_tools(run.states, starts)
                if guided_because is not None:
                    self._guided_because = guided_because
                    # The attempt cost calls: they stay in the usage, not in the status.
                    spent = ConversationState(usage=sum((s.usage for s in run.states.values()), Usage()))
                    run.states = {f"{starts} attempt": spent}
                    run.stop.clear()
            if guided_because is not None:
                guided = GuidedRun(
                    run.setup,
                    ToolBox(task, run.sandbox, False),
                    task,
                    run.states,
                    self.structured,
                    self.max_tokens_per_call or 1024,
                    self.concurrency,
                    plans=self.options.plans,
                )
                await guided.work(instruction_text(task.options, "s0"), revision, plan)
                run.sample_failures.update(guided.sample_failures)
        except Exception as exc:  # the last line of defence: a candidate never takes the run down
            log.exception("candidate %d of %s crashed", task.candidate_index, task.name)
            run.states["internal"] = ConversationState(failed=f"internal error: {type(exc).__name__}: {exc}")
        usage = sum((state.usage for state in run.states.values()), Usage())
        usage = dataclasses.replace(usage, wall_s=time.perf_counter() - start)
        # One rule for every mode: an annotation whose mask, boxes or image is not written is not a sample.
        gaps = phases.unfinished(out, task.indices)
        written, missing = phases.written_and_missing(task.indices, gaps)
        status, reason = candidate_outcome(run.states, written, gaps, (out / "data_meta.json").is_file())
        if guided_because is not None:
            reason = f"guided mode ({guided_because})" + (f"; {reason}" if reason else "")
        trace.write(
            "end", status=status, reason=reason, written=written, missing=missing, usage=usage.to_dict()
        )
        trace.close()
        fatal = next((s.fatal for s in run.states.values() if s.fatal is not None), None)
        if fatal is not None:
            raise FatalAgentError(fatal)
        return Candidate(
            output_dir=out,
            usage=usage,
            trace_path=trace_path,
            status=status,
            reason=reason,
            candidate_index=task.candidate_index,
            agent=self.name,
            skipped=unwritten_reasons(gaps, run.sample_failures),
            missing=tuple(missing) if status == "incomplete" else (),
        )

    def _opening(self, task: Task, revision: Revision | None, phased: bool) -> list[str]:
        """The texts of a tools-mode opening request (what `modes.pick` measures against the window)."""
        opening = [prompts.SYSTEM_PROMPT, instruction_text(task.options, "s0"), json.dumps(self.tools)]
        opening.append(self._task_prompt(task) if not phased else prompts.PLAN_PROMPT)
        return opening + ([revision.prompt(None)] if revision is not None else [])

    def _task_opening(self, task: Task, revision: Revision | None) -> list[str]:
        """The user texts that open a whole-dataset conversation: instruction, task prompt, revision."""
        opening = [instruction_text(task.options, "s0"), self._task_prompt(task)]
        return opening + ([revision.prompt(None)] if revision is not None else [])

    async def _script(self, run: _Candidate, revision: Revision | None) -> None:
        """The script mode: one conversation in which the model writes and runs one conversion script."""
        opening = self._task_opening(run.task, revision)
        box = script_toolbox(run.task, run.sandbox, self.vision, self.code_limits, self.script)
        run.states["script"] = await run_script(run.setup, box, opening, self._limits(run.task))
        run.sample_failures.update(box.sample_failures)

    def _limits(self, task: Task) -> ConversationLimits:
        return ConversationLimits(
            max_turns=task.limits.max_turns,
            max_tool_calls=task.limits.max_tool_calls,
            max_tokens=task.limits.max_tokens,
            max_text_replies=self.options.max_text_replies,
            max_failed_turns=self.options.max_failed_turns,
            max_argument_chars=self.options.max_argument_chars,
        )

    async def _talk(
        self,
        run: _Candidate,
        label: str,
        opening: Sequence[str],
        entries: Sequence[ManifestEntry],
        finish_check: FinishCheck,
        extra: Mapping[str, Any] | None = None,
        plan_tools: bool = False,
    ) -> ConversationState:
        """One conversation over ``entries`` (its tools may write only those samples)."""
        system = prompts.with_code_tool(prompts.SYSTEM_PROMPT) if self.code else prompts.SYSTEM_PROMPT
        messages = opening_messages(system, opening)
        if plan_tools:
            toolbox = ToolBox(
                phases.scoped(run.task, ()), run.sandbox, self.vision, extra, only=phases.PLAN_READ_TOOLS
            )
        else:
            tools = {**(run.extra_tools or {}), **(extra or {})}
            toolbox = ToolBox(phases.scoped(run.task, entries), run.sandbox, self.vision, tools or None)
        setup = dataclasses.replace(run.setup, tools=self._plan_tools) if plan_tools else run.setup
        limits = run.progress.limits(self._limits(run.task))
        state = await converse(setup, messages, toolbox, limits, label, finish_check)
        run.states[label] = state
        run.sample_failures.update(toolbox.sample_failures)
        if state.failed is not None:
            run.stop.set()  # the model or the provider failed: batches not yet started are not started
        if run.progress.record(state, self._budget_spent()):
            run.stop.set()  # the model makes no progress: its other conversations would each repeat that
        return state

    async def _single(self, run: _Candidate, revision: Revision | None) -> None:
        """A dataset of at most ``batch_size`` samples: one conversation does everything."""
        task = run.task
        check = phases.dataset_check(task.output_dir, task.indices)
        await self._talk(run, "dataset", self._task_opening(task, revision), task.entries, check)

    async def _phases(self, run: _Candidate, revision: Revision | None, plan: dict[str, Any] | None) -> None:
        """A larger dataset: plan (generate only), batches concurrently, then the dataset JSON."""
        task = run.task
        out = task.output_dir
        instruction = instruction_text(task.options, "s0")
        schema = self._schema(task)
        kept: dict[str, Any] = dict(plan or {})
        if revision is None:
            excerpt, shown = phases.manifest_excerpt(task.entries)
            prompt = prompts.PLAN_PROMPT.format(
                name=task.name,
                candidate_index=task.candidate_index,
                count=len(task.entries),
                shown=shown,
                manifest=excerpt,
                schema=schema,
            )
            handler = phases.plan_handler(task.out_dir, kept)
            state = await self._talk(
                run,
                "plan",
                [instruction, prompt],
                task.entries,
                lambda _box: [] if kept else ["no plan is written: call write_plan"],
                extra={phases.PLAN_TOOL: (phases.WritePlanArgs, handler)},
                plan_tools=True,
            )
            run.setup.trace.write("plan", plan=kept or None)
            if state.failed is not None or (state.stop_reason is not None and self._budget_spent()):
                return
        entries = task.entries if revision is None else revision.entries(task.entries)
        batches = phases.split_batches(entries, self.batch_size)
        slots = asyncio.Semaphore(self.concurrency)
        unstarted: list[str] = []

        async def batch(k: int, members: tuple[ManifestEntry, ...]) -> None:
            async with slots:
                if run.stop.is_set():
                    unstarted.append(f"batch {k}/{len(batches)}")
                    return
                prompt = prompts.BATCH_PROMPT.format(
                    name=task.name,
                    candidate_index=task.candidate_index,
                    batch=k,
                    batches=len(batches),
                    plan=phases.plan_text(kept),
                    count=len(members),
                    total=len(task.entries),
                    manifest="\n".join(f"{e.index}\t{e.relpath}" for e in members),
                    schema=schema,
                    evidence=sample_evidence.evidence_text(task.root, members),
                )
                opening = [instruction, prompt]
                if revision is not None:
                    opening.append(revision.prompt([e.index for e in members]))
                indices = [e.index for e in members]
                label = f"batch {k}/{len(batches)}"
                await self._talk(run, label, opening, members, phases.samples_check(out, indices))

        await asyncio.gather(*(batch(k, members) for k, members in enumerate(batches, start=1)))
        meta_due = revision is None or revision.touches_meta
        skipped = run.progress.skipped([*unstarted, *(["meta"] if meta_due else [])])
        if skipped is not None:  # said in the candidate's status: the conversations it skipped and why
            run.states["not started"] = skipped
        if run.stop.is_set() or not meta_due:
            return
        opening = [instruction, phases.meta_prompt(task, kept)]
        if revision is not None:
            opening.append(revision.prompt(None, meta_only=True))
        await self._talk(run, "meta", opening, task.entries, phases.meta_check(out))

    def _budget_spent(self) -> bool:
        """Whether the run budget is spent (later phases are then not started)."""
        if self.budget is None:
            return False
        try:
            self.budget.check()
        except BudgetExceeded:
            return True
        return False

    # -- prompts ---------------------------------------------------------------------------------

    def _schema(self, task: Task) -> str:
        if task.output_schema:
            return json.dumps(task.output_schema, ensure_ascii=False, sort_keys=True)
        return prompts.ANNOTATION_GUIDE

    def _task_prompt(self, task: Task) -> str:
        return prompts.TASK_PROMPT.format(
            name=task.name,
            candidate_index=task.candidate_index,
            count=len(task.entries),
            manifest="\n".join(f"{e.index}\t{e.relpath}" for e in task.entries),
            schema=self._schema(task),
            evidence=sample_evidence.evidence_text(task.root, task.entries),
        )

    def _params(self, task: Task, revision: Revision | None = None) -> dict[str, Any]:
        # The seed carries run.seed and the candidate index to the provider (where it takes one) and always
        # into the cache key: three seeds are three samples, a rerun of one seed is answered by the cache. A
        # revision also mixes in what it revises: S1's second round opens with the same prompt as its first
        # but revises another output, and must be a sample of its own, not the first round's replay.
        salt = revision.digest() if revision is not None else ""
        params: dict[str, Any] = {
            "temperature": task.temperature if self.temperature is None else self.temperature,
            "seed": sampling_seed(task.seed, task.candidate_index, salt),
        }
        if self.max_tokens_per_call is not None:
            params["max_tokens"] = self.max_tokens_per_call
        return params

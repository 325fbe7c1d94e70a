"""``agent.mode=guided``: the framework walks the steps, the model answers each in constrained JSON.

For a model that cannot drive a tool loop (a small local model: prose instead of tool calls, a window of a few
thousand tokens), the agent takes the loop over. Every request is fresh (a system prompt and one user message
of evidence, never a history), sized to the server's window, and asks for exactly one JSON object, under a
schema (`PLAN_SCHEMA`, `answer_schema` ...):

1. **plan** (once per candidate): the dataset's name, modality, task, dimension and class names, from the
   folder's tree, its README, the manifest and the first sample's ``inspect``;
2. per sample: the **slice** or **frame** to render (a volume or video only; null takes the tool's default),
   the **mask file** (segmentation only: one of the dataset's files named most like the sample, or none),
   then the **annotation** (the values only the model can decide; the framework writes the record around
   them); the framework runs ``inspect``, ``render`` and ``write_annotation`` with them;
3. **data_meta** (once): the dataset's anatomy, domain and description, under the plan and the counts.

The answer is asked as a forced tool call (``tool_choice`` naming the one tool offered, which llama.cpp, vLLM
and the hosted APIs turn into grammar-constrained JSON). A server that answers a forced call without one (it
ignored ``tool_choice``) is asked by ``response_format`` (a JSON schema) from then on, for every later
request of the agent. A request the window cannot hold is sent again with its evidence halved (the window the
server named in its error is used from then on). A sample whose step fails is left unwritten with the reason
(``Candidate.skipped``); only a failed plan fails the candidate.

Servers that honour a schema (llama.cpp, vLLM, Ollama, the hosted APIs) turn it into a grammar, so even a
small model's answer has the shape asked. Only the JSON Schema subset llama.cpp's grammar converter reads is
used: ``const``, ``enum``, ``anyOf``, ``required``, ``additionalProperties: false``, string
``minLength``/``maxLength`` and array ``minItems``/``maxItems`` (every string and list is bounded: a model
that rambles inside a value still ends). The model answers only what is its to decide; the framework puts each
answer into the benchmark's record (`annotation_record`: exactly one spatial and one task branch, ``"NA"``/
``"unknown"`` strings where the scorer refuses null, the record's paths, the size of the image ``render``
wrote, the plan's decisions), so every record passes the schema checks (SPEC §2).

A local server spends its time evaluating prompts, and reuses the prefix its last request shares with the
next (llama.cpp). So the schema and the ask of a step are the same for every sample of a candidate, and each
request opens with what every sample shares (the plan) and ends with the sample's own evidence.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from agents.base import FatalAgentError, Feedback, ManifestEntry, Task
from agents.budget import BudgetExceeded
from agents.llm.conversation import ConversationSetup, ConversationState, record_reply
from agents.llm.outcome import Revision
from agents.llm.phases import PLAN_FILE, manifest_excerpt
from agents.llm.sample_evidence import path_parts, table_rows
from agents.model.client import is_context_window_error
from agents.tools.tools import ToolBox, ToolResult
from benchmark.fields import DIMENSION, MODALITY_PRIMARY, TASK_TYPE
from core.atomic import atomic_write_json, read_json_or_none
from validator.dataset_facts import ANNOTATION_WORDS

__all__ = [
    "DEFAULT_WINDOW",
    "GUIDED_SYSTEM",
    "META_SCHEMA",
    "PLANS_FILE",
    "PLAN_SCHEMA",
    "GuidedPlan",
    "GuidedRun",
    "Structured",
    "annotation_record",
    "answer_of",
    "answer_schema",
    "choice_schema",
    "data_meta_record",
    "mask_choices",
]

log = logging.getLogger(__name__)

#: The window assumed when neither the config nor the server says one (the smallest common local window).
DEFAULT_WINDOW = 8192
# Conservative characters per token for JSON-heavy text (English prose runs at ~4): an estimate that errs
# towards smaller requests, since the real count is only known once the server refuses one.
_CHARS_PER_TOKEN = 2.5
# What the chat template, the system prompt and the message framing take besides the evidence.
_OVERHEAD_TOKENS = 320
_MAX_SHRINKS = 3
_MASK_CHOICES = 12
_FILES_SCANNED = 20_000
_TABLES = (".csv", ".tsv", ".xlsx", ".xls", ".parquet")
PLANS_FILE = "plans.json"
"""Beside ``plan.json`` when several plans were sampled: each with its seed, score and reasons."""

GUIDED_SYSTEM = (
    "You standardize a raw medical imaging dataset into the MDS-Bench format, one step at a time. Each "
    "request gives you evidence from the dataset's files and asks for one JSON object; its schema fixes the "
    "shape. Fill every value from the evidence (file names, headers, README, tables); write short values."
)

# The ask names no example values: small models answered the first modality of a list of examples (CT)
# for data of another modality. What decides each value is the evidence above the ask.
PLAN_ASK = (
    "Decide the dataset-level facts from the evidence above: dataset_name (as the README or folder "
    "names it), modality (the imaging technique the README, file headers or names state), task_type, "
    "dimension (2D, 3D for a volume, video) and classes (the label names the tables, folders or README "
    "use; for segmentation the mask's classes with background first)."
)
# The per-sample asks are the same for every sample (the sample is named in the evidence): a server that
# reuses the prompt prefix of its last request then re-reads only the sample's own evidence.
SLICE_ASK = (
    "Choose the {what} of this sample to render as its image, within the range above, or null for the "
    "middle one (the mask's largest, when there is a mask)."
)
MASK_ASK = "Choose the file holding this sample's segmentation mask, or null when none of them is its mask."
ANNOTATION_ASK = (
    "Annotate this sample: who the subject is (subject_id from the file or folder name), sex, site{what}, "
    "from the evidence about this sample (its label-table row, when one names it)."
)
META_ASK = (
    "Write the dataset's data_meta.json: its anatomical structure, domain and a one-sentence description."
)
REVISE_ASK = "Revise your answer for this sample as the feedback asks; keep what is right."
REPLAN_ASK = (
    "Revise your plan as the feedback asks, from the evidence above; keep what is right. The plan fixes the "
    "dataset_name, modality, task_type, dimension and classes of every record."
)
# Record fields the plan fixes (`annotation_record`, `data_meta_record`): feedback naming one
# of them can only be acted on by a new plan.
_PLAN_PATHS = (
    "record.dataset_name",
    TASK_TYPE,
    DIMENSION,
    MODALITY_PRIMARY,
    "tasks.classification.class_names",
    "tasks.segmentation.classes",
    "tasks.detection.class_names",
    "data_meta.dataset_name",
    "data_meta.modality_primary",
    "data_meta.task_type",
    "data_meta.num_classes_per_task",
)


def asks_plan(revision: Revision) -> bool:
    """Whether a revision may change the plan: free-text feedback (S1), or an item naming a field the plan
    fixes (S2's checklist)."""
    items = revision.feedback.items if isinstance(revision.feedback, Feedback) else ()
    if not items:
        return True
    # An item may name a field the plan fixes, or a block holding one (``media_geometry``).
    return any(
        path.startswith(_PLAN_PATHS) or any(fixed.startswith(path + ".") for fixed in _PLAN_PATHS)
        for _i, path, _m in items
    )


class Structured:
    """How the agent's server is asked for a JSON object: a forced tool call until it shows it ignores one.

    Shared by every candidate of the agent, so a server found to ignore ``tool_choice`` costs one wasted call,
    not one per candidate.
    """

    def __init__(self) -> None:
        self.by_tool_choice = True
        self.why: str | None = None

    def give_up_tool_choice(self, why: str) -> None:
        """Ask by ``response_format`` from now on."""
        if self.by_tool_choice:
            log.warning("guided mode: %s; asking by response_format from now on", why)
        self.by_tool_choice = False
        self.why = why


@dataclass
class GuidedRun:
    """One candidate in the guided mode.

    Attributes:
        setup: The candidate's client, trace, budget and sampling parameters.
        toolbox: Its tools (run by the framework here, never by the model).
        task: The dataset and candidate.
        states: The candidate's conversations by label (each step is one; `agents.llm.outcome` adds
            them up).
        structured: How the server is asked (shared by the agent's candidates).
        max_output: The per-call completion cap (reserved in every request's budget).
        concurrency: Samples in flight at once.
        plans: Plans sampled in the plan step (a task's ``options["plans"]`` takes precedence); the raw data's
            best-supported one is kept.
        sample_failures: Per sample, why it was left unwritten.
    """

    setup: ConversationSetup
    toolbox: ToolBox
    task: Task
    states: dict[str, ConversationState]
    structured: Structured
    max_output: int
    concurrency: int = 4
    plans: int = 1
    sample_failures: dict[int, str] = field(default_factory=dict)
    _files: list[str] | None = field(default=None, repr=False)

    # -- the steps ------------------------------------------------------------------------------------

    async def work(self, instruction: str, revision: Revision | None, plan: Mapping[str, Any] | None) -> None:
        """`generate`, or `revise` when there is a revision; the toolbox's failed reads join the reasons."""
        if revision is None:
            await self.generate(instruction)
        else:
            await self.revise(revision, plan, instruction)
        for index, why in self.toolbox.sample_failures.items():
            self.sample_failures.setdefault(index, why)

    async def generate(self, instruction: str) -> None:
        """Plan, every sample, then data_meta (a failed plan fails the candidate; nothing else does)."""
        plan = await self._plan(instruction)
        if plan is None:
            return
        await self._each(self.task.entries, lambda entry: self._sample(plan, entry))
        await self._meta(plan, None)
        self._note_nothing_written()

    async def revise(self, revision: Revision, plan_data: Mapping[str, Any] | None, instruction: str) -> None:
        """Re-ask the annotation of each sample the feedback names (every sample for free text), and
        data_meta when it is named; the images and masks stay as they are."""
        plan: GuidedPlan | None
        try:
            plan = GuidedPlan.of(plan_data or {}) if plan_data and plan_data.get("guided") else None
        except ValueError:
            plan = None
        if plan is None:  # a candidate of another mode: its plan is made now
            plan = await self._plan(instruction)
            if plan is None:
                return
        entries = revision.entries(self.task.entries)
        replanned = False
        if asks_plan(revision):
            revised = await self._replan(plan, revision.prompt(None), self._plan_parts(instruction))
            if (revised.task_type, revised.dimension) != (plan.task_type, plan.dimension):
                # The images, masks and payloads follow the task and the dimension: the samples are redone.
                await self._each(self.task.entries, lambda entry: self._sample(revised, entry))
                await self._meta(revised, None)
                return
            if revised != plan:  # every record carries the plan's name, modality and classes
                entries, plan, replanned = list(self.task.entries), revised, True
        current = plan
        await self._each(entries, lambda e: self._revise_sample(current, e, revision))
        if revision.touches_meta or replanned:
            await self._meta(current, revision)

    async def _each(
        self, entries: Sequence[ManifestEntry], step: Callable[[ManifestEntry], Awaitable[None]]
    ) -> None:
        """``step`` for every sample, ``concurrency`` at a time."""
        gate = asyncio.Semaphore(self.concurrency)

        async def one(entry: ManifestEntry) -> None:
            async with gate:
                await step(entry)

        await asyncio.gather(*(one(e) for e in entries))

    def _plan_parts(self, instruction: str) -> list[tuple[str, str]]:
        """The plan's evidence: the instruction, the manifest, the tree, README, tables, the first sample."""
        task = self.task
        excerpt, shown = manifest_excerpt(task.entries)
        first = task.entries[0]
        tree = self._tool("tree", {"path": "data", "max_depth": 3})
        return [
            ("Instruction", instruction),
            ("Dataset folder", f"{task.name} ({len(task.entries)} samples; {shown} manifest lines shown)"),
            ("Manifest", excerpt),
            ("Files", tree),
            *self._readme(),
            *self._tables(tree),
            *self._evidence(first),  # how a label table names one sample: a label per image, or none
            (f"inspect {first.relpath}", self._tool("inspect", {"path": first.relpath})),
            *self._reads_as(first),
        ]

    async def _plan(self, instruction: str) -> GuidedPlan | None:
        parts = self._plan_parts(instruction)
        count = int(self.task.options.get("plans") or self.plans)
        if count > 1:
            return await self._best_plan(parts, count)
        return await self._plan_answer("plan", PLAN_ASK, parts)

    async def _plan_answer(self, label: str, ask: str, parts: Sequence[tuple[str, str]]) -> GuidedPlan | None:
        """One plan asked under ``label``, kept as the candidate's ``plan.json``; None with the reason."""
        answer = await self._ask(label, "write_plan", ask, PLAN_SCHEMA, parts)
        state = self.states[label]
        if answer is None:
            state.failed = state.failed or state.stop_reason or "no plan"
            state.stop_reason = None
            return None
        try:
            plan = GuidedPlan.of(answer)
        except ValueError as exc:
            state.failed = f"the plan is not usable: {exc}"
            return None
        self._keep_plan(plan)
        return plan

    def _keep_plan(self, plan: GuidedPlan) -> None:
        """``plan.json`` holds ``plan`` (written when it does not already), and the trace says so."""
        path = self.task.out_dir / PLAN_FILE
        if read_json_or_none(path) != plan.to_dict():
            atomic_write_json(path, plan.to_dict(), durable=False)
        self.setup.trace.write("plan", plan=plan.to_dict())

    async def _replan(
        self, plan: GuidedPlan, feedback: str, parts: Sequence[tuple[str, str]], label: str = "replan"
    ) -> GuidedPlan:
        """The plan asked again with ``feedback`` after its evidence ``parts`` (its decisions are fixed in
        every record, so only a new plan changes them); the old plan when the answer is unusable."""
        asked = [
            *parts,
            ("Your plan", json.dumps({k: v for k, v in plan.to_dict().items() if k != "guided"})),
            ("Feedback", feedback),
        ]
        revised = await self._plan_answer(label, REPLAN_ASK, asked)
        if revised is None:
            state = self.states[label]
            log.warning("guided mode: the plan was not revised (%s); the samples keep it", state.failed)
            state.failed = None  # an unrevised plan leaves the candidate as it was, not failed
            self._keep_plan(plan)  # a revision's folder may not hold it yet
            return plan
        return revised

    async def _best_plan(self, parts: Sequence[tuple[str, str]], count: int) -> GuidedPlan | None:
        """``count`` plans, each a request of its own seed (the first is the one-plan request itself); the
        one the raw data supports best (`validator.plan_support`; ties: the earliest) is kept, every one is
        kept in ``plans.json`` with its score and reasons. A kept plan the data contradicts is asked once
        more with the contradictions as feedback, and the answer is kept if the data supports it better."""
        # Imported on use: ~60 ms kept out of the agent's import, which the tools and script modes pay too.
        from validator.plan_support import plan_support

        paths = [e.relpath for e in self.task.entries]
        seed = int(self.setup.params.get("seed") or 0)
        sampled: list[dict[str, Any]] = []
        best: tuple[float, int, GuidedPlan] | None = None
        for j in range(count):
            label = "plan" if j == 0 else f"plan {j + 1}"
            run = self
            if j > 0:
                # A seed of its own: the request cache keeps each sample, and the server samples anew.
                params = {**self.setup.params, "seed": (seed * 1000 + j) % 2**31}
                run = replace(self, setup=replace(self.setup, params=params))
            answer = await run._ask(label, "write_plan", PLAN_ASK, PLAN_SCHEMA, parts)
            state = self.states[label]
            entry: dict[str, Any] = {"seed": run.setup.params.get("seed"), "answer": answer}
            plan: GuidedPlan | None = None
            if answer is None:
                entry["error"] = state.failed or state.stop_reason or "no plan"
            else:
                try:
                    plan = GuidedPlan.of(answer)
                except ValueError as exc:
                    entry["error"] = f"the plan is not usable: {exc}"
            if plan is None:
                # An unusable plan scores below any checked one and fails nothing while another is usable.
                entry |= {"score": None, "reasons": [entry["error"]]}
            else:
                support = plan_support(self.task.root, paths, plan.to_dict())
                entry |= {"plan": plan.to_dict(), **support.to_dict()}
                if best is None or support.score > best[0]:
                    best = (support.score, j, plan)
            sampled.append(entry)
            if state.fatal or (self.setup.budget is not None and self.setup.budget.exhausted):
                break  # the server is gone or the budget spent: the next requests would fail as well
            if j > 0:
                state.failed = state.stop_reason = None
        if best is not None and best[0] < 1.0 and not self.states["plan"].fatal:
            # The check's reasons are feedback no sampled plan saw: the best is asked once more with them.
            reasons = next(e["reasons"] for e in sampled if e.get("plan") == best[2].to_dict())
            feedback = "The dataset's files contradict this plan:\n" + "\n".join(f"- {r}" for r in reasons)
            revised = await self._replan(best[2], feedback, parts, label="plan checked")
            self.states["plan checked"].failed = None
            if revised != best[2]:
                support = plan_support(self.task.root, paths, revised.to_dict())
                sampled.append({"revised_from": best[1], "plan": revised.to_dict(), **support.to_dict()})
                if support.score > best[0]:
                    best = (support.score, len(sampled) - 1, revised)
        kept = None if best is None else best[1]
        atomic_write_json(self.task.out_dir / PLANS_FILE, {"kept": kept, "plans": sampled}, durable=False)
        self.setup.trace.write("plans", kept=kept, plans=sampled)
        first = self.states["plan"]
        if best is None:
            first.failed = first.failed or first.stop_reason or sampled[0].get("error") or "no plan"
            first.stop_reason = None
            return None
        if not first.fatal:
            first.failed = first.stop_reason = None
        self._keep_plan(best[2])
        return best[2]

    async def _sample(self, plan: GuidedPlan, entry: ManifestEntry) -> None:
        i, source = entry.index, entry.relpath
        label = f"sample {i}"
        inspected = self._tool("inspect", {"path": source})
        render: dict[str, Any] = {"index": i, "source": source}
        what = {"3D": "slice", "video": "frame"}.get(plan.dimension)
        count = extent(inspected, plan.dimension)
        if what is not None and count is not None and count > 1:
            key = "slice_index" if what == "slice" else "frame"
            parts = [
                ("Plan", _plan_text(plan)),
                (f"Sample {i}: inspect {source}", inspected),
                ("Range", f"{what} 0 to {count - 1}"),
            ]
            ask = SLICE_ASK.format(what=what)
            answer = await self._ask(label, f"choose_{what}", ask, choice_schema(key, "integer"), parts)
            if answer is None:
                return self._skip(i, label, f"no {what} chosen")
            if isinstance(answer.get(key), int) and 0 <= answer[key] < count:
                render[key] = answer[key]
        rendered = self._run_json("render", render)
        if "error" in rendered:
            return self._skip(i, label, f"render failed: {rendered['error']}")
        info = {**(rendered.get("render") or {}), "size": rendered.get("size")}
        mask_file = None
        mask_text = ""
        if plan.task_type == "segmentation":
            mask_file, mask_text = await self._mask(plan, entry, info, label)
            if mask_file is None:
                # The annotation is still asked for (its other fields may be right), but the sample is not
                # written without its mask: this is the reason the candidate gives for it.
                self.sample_failures[i] = mask_text or "no mask file was chosen for the segmentation"
        shown = f"images/{i}.png, {info.get('size')} pixels" + (
            f", slice {info['slice_index']}" if isinstance(info.get("slice_index"), int) else ""
        )
        parts = [
            ("Plan", _plan_text(plan)),
            *self._evidence(entry),
            (f"inspect {source}", inspected),
            ("Rendered", shown + (f"; mask: {mask_text}" if mask_text else "")),
        ]
        ask = ANNOTATION_ASK.format(what=_label_word(plan))
        answer = await self._ask(label, "annotate", ask, answer_schema(plan), parts)
        if answer is None:
            return self._skip(i, label, "no annotation answer")
        annotation = annotation_record(plan, i, source, info, answer, mask_file)
        written = self._run_json("write_annotation", {"index": i, "annotation": annotation})
        if "error" in written:
            self._skip(i, label, f"write_annotation failed: {written['error']}")

    async def _mask(
        self, plan: GuidedPlan, entry: ManifestEntry, info: Mapping[str, Any], label: str
    ) -> tuple[str | None, str]:
        if self._files is None:  # one walk of the tree per candidate, shared by its samples
            self._files = data_files(self.toolbox.sandbox.read_root, {e.relpath for e in self.task.entries})
        choices = mask_choices(self._files, entry)
        if not choices:
            return None, ""
        parts = [
            ("Plan", _plan_text(plan)),
            (f"Sample {entry.index}", entry.relpath),
            ("Files", "\n".join(choices)),
        ]
        answer = await self._ask(
            label, "choose_mask", MASK_ASK, choice_schema("mask_file", [*choices, None]), parts
        )
        chosen = answer.get("mask_file") if answer else None
        if chosen not in choices:
            return None, ""
        args: dict[str, Any] = {"index": entry.index, "source": chosen, "kind": "mask"}
        for key in ("slice_index", "frame"):
            if isinstance(info.get(key), int):
                args[key] = info[key]
        result = self._run_json("render", args)
        if "error" in result:
            return None, f"the mask {chosen} could not be rendered: {result['error']}"
        return str(chosen), f"masks/{entry.index}.png from {chosen}"

    async def _revise_sample(self, plan: GuidedPlan, entry: ManifestEntry, revision: Revision) -> None:
        i, source = entry.index, entry.relpath
        label = f"revise {i}"
        out = self.toolbox.sandbox.output_dir
        current = read_json_or_none(out / "standardized_annotations" / f"{i}.json")
        if not isinstance(current, dict) or not (out / "images" / f"{i}.png").is_file():
            return  # nothing to revise: generating a missing sample is not a revision
        info = rendered_info(current, out / "images" / f"{i}.png")
        mask_file = mask_of(current) if (out / "masks" / f"{i}.png").is_file() else None
        parts = [
            ("Plan", _plan_text(plan)),
            *self._evidence(entry),
            (f"inspect {source}", self._tool("inspect", {"path": source})),
            ("Feedback", revision.prompt([i])),
            ("Your answer", json.dumps(answer_of(current), ensure_ascii=False)),
        ]
        answer = await self._ask(label, "annotate", REVISE_ASK, answer_schema(plan), parts)
        if answer is not None:
            annotation = annotation_record(plan, i, source, info, answer, mask_file)
            self._run_json("write_annotation", {"index": i, "annotation": annotation})

    async def _meta(self, plan: GuidedPlan, revision: Revision | None) -> None:
        out = self.toolbox.sandbox.output_dir
        written = len(self.toolbox.written_indices())
        if not written:
            return
        images = sum(1 for i in self.task.indices if (out / "images" / f"{i}.png").is_file())
        parts = [
            ("Plan", _plan_text(plan)),
            ("Written", f"{written} annotations, {images} images"),
            *self._readme(),
        ]
        if revision is not None:
            parts.append(("Feedback", revision.prompt(None, meta_only=True)))
        answer = await self._ask("meta", "write_data_meta", META_ASK, META_SCHEMA, parts)
        if answer is not None:
            meta = data_meta_record(plan, written, images, answer)
            self._run_json("write_data_meta", {"data_meta": meta})

    # -- asking -------------------------------------------------------------------------------------

    async def _ask(
        self, label: str, name: str, ask: str, schema: Mapping[str, Any], parts: Sequence[tuple[str, str]]
    ) -> dict[str, Any] | None:
        """One JSON object under ``schema``, sized to the window; None with the reason in the step's state."""
        state = self.states.setdefault(label, ConversationState())
        client = self.setup.client
        tool = {"type": "function", "function": {"name": name, "description": ask, "parameters": schema}}
        schema_chars = len(json.dumps(schema, ensure_ascii=False))
        share = 1.0
        note = ""
        for _attempt in range(_MAX_SHRINKS + 2):
            window = client.context_window or DEFAULT_WINDOW
            tokens = window - self.max_output - _OVERHEAD_TOKENS - int(schema_chars / _CHARS_PER_TOKEN)
            budget = int(max(200.0, tokens * _CHARS_PER_TOKEN) * share)
            body = fit(parts, budget - len(ask) - len(note))
            messages = [
                {"role": "system", "content": GUIDED_SYSTEM},
                {"role": "user", "content": f"{body}\n\n{ask}{note}"},
            ]
            forced = self.structured.by_tool_choice
            params = dict(self.setup.params)
            if forced:
                params["tool_choice"] = {"type": "function", "function": {"name": name}}
                tools: list[Mapping[str, Any]] = [tool]
            else:
                params["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": dict(schema)},
                }
                tools = []
            try:
                if self.setup.budget is not None:
                    self.setup.budget.check()
                reply = await client.complete(messages, tools, params, self.task.candidate_index)
            except BudgetExceeded as exc:
                state.stop_reason = exc.reason
                return None
            except FatalAgentError as exc:
                state.failed = state.fatal = exc.reason
                return None
            except Exception as exc:
                if is_context_window_error(exc) and share > 1 / 2**_MAX_SHRINKS:
                    # A window the error named anew sizes the next request by itself; otherwise our estimate
                    # of the tokens was short, and half the evidence goes.
                    learnt = (client.context_window or DEFAULT_WINDOW) < window
                    share = share if learnt else share / 2
                    state.shrinks += 1
                    self.setup.trace.write(
                        "context_trimmed", conversation=label, window=client.context_window, share=share
                    )
                    continue
                state.failed = f"provider error: {type(exc).__name__}: {str(exc)[:300]}"
                self.setup.trace.write("provider_error", conversation=label, error=state.failed)
                return None
            record_reply(self.setup, state, reply, messages, label)
            answer, problem = answer_object(reply.message, name)
            if answer is not None:
                self._note_off_schema(label, name, state, answer, schema)
                return answer
            if forced and not reply.message.get("tool_calls"):
                self.structured.give_up_tool_choice(f"the server answered a forced {name} call without it")
                continue
            if note:
                break
            note = f"\n(Your last answer was not one JSON object: {problem}. Send exactly one.)"
        state.stop_reason = f"{name}: no JSON object in the model's answers"
        return None

    def _note_off_schema(
        self,
        label: str,
        name: str,
        state: ConversationState,
        answer: Mapping[str, Any],
        schema: Mapping[str, Any],
    ) -> None:
        """Say when an answer left its schema (a server that ignored the grammar): a step's record takes the
        schema's first value for what is off (`annotation_record`), a plan keeps what
        `GuidedPlan.of` can use or is refused; neither is silent."""
        from jsonschema import Draft202012Validator  # on use: most answers come from a grammar and pass

        errors = sorted(Draft202012Validator(schema).iter_errors(answer), key=lambda e: list(e.path))
        if not errors:
            return
        where = ".".join(str(p) for p in errors[0].path) or "the answer"
        taken = "the plan keeps what it can use" if name == "write_plan" else "the framework's default taken"
        why = f"{len(errors)} value(s) outside the schema, {taken} ({where}: "
        why += f"{errors[0].message[:120]})"
        log.warning("guided mode: %s: %s", label, why)
        self.setup.trace.write("off_schema", conversation=label, errors=[e.message[:200] for e in errors])
        state.note = f"{label}: {why}"

    # -- tools ----------------------------------------------------------------------------------------

    def _run(self, name: str, args: Mapping[str, Any]) -> ToolResult:
        """Run a tool for the model (the framework's call, traced as the model's would be)."""
        result = self.toolbox.run(name, json.dumps(dict(args)))
        self.setup.trace.write(
            "tool",
            conversation="guided",
            name=name,
            arguments=dict(args),
            error=result.error,
            result=result.text[:2000],
            image=False,
        )
        return result

    def _tool(self, name: str, args: Mapping[str, Any]) -> str:
        """Run a tool; its result as plain ``key: value`` lines (`plain`)."""
        return plain(self._run(name, args).text)

    def _run_json(self, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Run a tool; its JSON result, or ``{"error": first line}``."""
        result = self._run(name, args)
        if result.error is not None:
            return {"error": result.text.splitlines()[0][:300] if result.text else result.error}
        try:
            parsed = json.loads(result.text)
        except ValueError:
            return {"text": result.text}
        return parsed if isinstance(parsed, dict) else {"result": parsed}

    def _evidence(self, entry: ManifestEntry) -> list[tuple[str, str]]:
        """The sample's own evidence: the label-table rows that name it (as the validator matches them) and
        its path's folders and file name (`agents.llm.sample_evidence`)."""
        parts = [(f"Path of sample {entry.index}", path_parts(entry.relpath))]
        try:
            rows = table_rows(self.task.root, entry.relpath)
        except (OSError, ValueError) as exc:  # an unreadable table leaves the sample without rows
            log.warning("guided mode: label-table rows of %s not read: %s", entry.relpath, exc)
            rows = []
        if rows:
            parts.append((f"Label-table rows naming sample {entry.index}", "\n".join(rows)))
        return parts

    def _reads_as(self, entry: ManifestEntry) -> list[tuple[str, str]]:
        """How the sample's file reads (2D, 3D, video), as the plan's dimension is checked
        (`validator.plan_support.reads_as`): its shape alone does not say (an RGB image's 3 is no depth)."""
        from validator.plan_support import reads_as  # on use, as in `_best_plan`

        try:
            line = reads_as(self.task.root, entry.relpath)
        except (OSError, ValueError) as exc:  # an unreadable file leaves the plan without the line
            log.warning("guided mode: %s not read: %s", entry.relpath, exc)
            line = None
        return [(f"{entry.relpath} reads as", line)] if line else []

    def _readme(self) -> list[tuple[str, str]]:
        found = self._tool("find", {"pattern": "readme*", "kind": "file", "limit": 3})
        first = next((line.split()[0] for line in found.splitlines() if line.startswith("data/")), None)
        if first is None:
            return []
        return [(first, self._tool("read_text", {"path": first, "max_bytes": 2000}))]

    def _tables(self, tree: str) -> list[tuple[str, str]]:
        """The first rows of the label tables the tree lists (at most two)."""
        shown = []
        for line in tree.splitlines():
            path = line.strip().split("\t")[0]
            if path.startswith("data/") and path.lower().endswith(_TABLES):
                shown.append((f"table_head {path}", self._tool("table_head", {"path": path, "rows": 5})))
            if len(shown) == 2:
                break
        return shown

    def _skip(self, index: int, label: str, why: str) -> None:
        reason = self.states.get(label)
        detail = reason.failed or reason.stop_reason if reason is not None else None
        self.sample_failures[index] = f"{why}: {detail}" if detail else why
        if reason is not None:
            # A sample's failure leaves that sample unwritten; it does not fail the candidate.
            reason.failed = None

    def _note_nothing_written(self) -> None:
        if self.toolbox.written_indices() or not self.sample_failures:
            return
        first = self.sample_failures[min(self.sample_failures)]
        self.states["samples"] = ConversationState(failed=f"no sample written (first: {first})")


def _plan_text(plan: GuidedPlan) -> str:
    classes = ", ".join(plan.classes)
    return (
        f"dataset {plan.dataset_name}; modality {plan.modality}; {plan.task_type}; {plan.dimension}; "
        f"classes: {classes}"
    )


def _label_word(plan: GuidedPlan) -> str:
    return {"classification": " and its class label", "segmentation": "", "detection": " and its boxes"}[
        plan.task_type
    ]


# -- evidence: what a request shows the model and reads back -----------------------------------------


def plain(text: str) -> str:
    """A JSON tool result as ``key: value`` lines; other text as it is.

    Small models read lines better than nested JSON, and some servers' chat templates HTML-escape every quote
    of a message (llama-cpp-python's ``chatml-function-calling``: ``"`` becomes ``&#34;``), which a small
    model then copies into its answer.
    """
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if not isinstance(value, dict | list):
        return text
    lines: list[str] = []

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict) and node:
            for key, item in node.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        elif isinstance(node, list) and node and any(isinstance(v, dict | list) for v in node):
            for k, item in enumerate(node[:20]):
                walk(f"{prefix}[{k}]", item)
        else:
            shown = node if isinstance(node, str) else json.dumps(node, ensure_ascii=False)
            lines.append(f"{prefix}: {shown}"[:240])

    walk("", value)
    return "\n".join(lines)


def fit(parts: Sequence[tuple[str, str]], budget: int) -> str:
    """The evidence as titled sections, the longest cut (head kept) until the whole fits ``budget`` chars."""
    sections = [(title, text or "") for title, text in parts]
    total = sum(len(t) + len(text) + 6 for t, text in sections)
    if total > budget:
        fixed = sum(len(t) + 6 for t, _ in sections)
        room = max(0, budget - fixed)
        sizes = [len(text) for _, text in sections]
        # Water-filling: short sections stay whole, the long ones share what is left equally.
        cap = room
        for _ in range(len(sizes)):
            small = [s for s in sizes if s <= cap]
            left = len(sizes) - len(small)
            if not left:
                break
            cap = max(0, (room - sum(small)) // left)
        cut = []
        for title, text in sections:
            if len(text) > cap:
                text = text[: max(0, cap - 40)] + f"\n[... {len(text) - max(0, cap - 40)} chars cut to fit]"
            cut.append((title, text))
        sections = cut
    return "\n\n".join(f"## {title}\n{text}" for title, text in sections)


def answer_object(message: Mapping[str, Any], name: str) -> tuple[dict[str, Any] | None, str]:
    """The JSON object of a reply: the forced call's arguments, else the content; or None and why not."""
    calls = [c for c in message.get("tool_calls") or [] if (c.get("function") or {}).get("name") == name]
    raw = (calls[0].get("function") or {}).get("arguments") if calls else message.get("content")
    if not raw:
        return None, "an empty answer"
    try:
        # strict=False: a raw tab or newline inside a string (small models write them) is no reason to re-ask.
        value = json.loads(raw, strict=False) if isinstance(raw, str) else raw
    except ValueError as exc:
        return None, f"invalid JSON ({exc})"
    if not isinstance(value, dict):
        return None, "not an object"
    return value, ""


def extent(inspected: str, dimension: str) -> int | None:
    """Slices (3D: a volume's first canonical axis, ``Z``) or frames (video) the inspected file has, when it
    says; None for a 2D file (an RGB bitmap's three axes are no volume)."""
    try:
        summary = json.loads(inspected)
    except ValueError:
        return None
    if not isinstance(summary, dict):
        return None
    frames = summary.get("n_frames")
    if dimension == "video":
        return frames if isinstance(frames, int) else None
    shape, axes = summary.get("shape"), str(summary.get("axes") or "")
    if isinstance(shape, list) and len(shape) >= 3 and isinstance(shape[0], int) and axes[:1] in ("Z", "T"):
        return int(shape[0])
    return frames if isinstance(frames, int) and frames > 1 else None


def data_files(read_root: Path, images: set[str]) -> list[str]:
    """The dataset's files below ``data/`` (``data/...``, manifest images and dot files excepted), at most
    ``_FILES_SCANNED`` of them; listed once per candidate, not once per sample."""
    names: list[str] = []
    for folder, dirs, files in os.walk(read_root):
        dirs.sort()
        for name in sorted(files):
            rel = "data/" + (Path(folder) / name).relative_to(read_root).as_posix()
            if rel not in images and not name.startswith("."):
                names.append(rel)
            if len(names) >= _FILES_SCANNED:
                return names
    return names


def mask_choices(files: Sequence[str], entry: ManifestEntry) -> list[str]:
    """The files (`data_files`) most likely the sample's mask, best first.

    A mask shares the sample's numbers (its case or subject id) and carries an annotation word in its path
    (`validator.dataset_facts.ANNOTATION_WORDS`, read inside words: ``3LABEL``, ``labelsTr``); another image
    of the sample's own series (same folder, same suffix) shares the most characters of its name and is
    none. Name likeness only breaks ties: ranked by it alone, a sample's sibling images filled the list and
    the mask in another folder fell off it.
    """
    sample = PurePosixPath(entry.relpath)
    target = sample.name.lower()
    numbers = set(re.findall(r"\d+", sample.name))

    folder = str(sample.parent)

    def rank(rel: str) -> tuple[int, bool, bool]:
        # String work only: a path object per file costs more than the ranking on a tree of thousands.
        parent, _, name = rel.rpartition("/")
        shared = len(numbers & set(re.findall(r"\d+", name)))
        words = re.findall(r"[a-z]+", rel.lower().removeprefix("data/"))
        annotated = any(w in ANNOTATION_WORDS for w in words)
        sibling = parent == folder and PurePosixPath(name).suffixes == sample.suffixes
        return -shared, not annotated, sibling

    ranked = sorted(((rank(rel), rel) for rel in files), key=lambda pair: pair[0])
    if len(ranked) > _MASK_CHOICES:
        # Likeness (difflib, the slow part on a tree of thousands of files) only orders the files that tie
        # with the last one kept.
        last = ranked[_MASK_CHOICES - 1][0]
        ranked = [pair for pair in ranked if pair[0] <= last]

    def likeness(rel: str) -> float:
        return difflib.SequenceMatcher(None, target, rel.rpartition("/")[2].lower()).ratio()

    ranked.sort(key=lambda pair: (*pair[0], -likeness(pair[1])))
    return [rel for _key, rel in ranked[:_MASK_CHOICES]]


def rendered_info(annotation: Mapping[str, Any], image: Path) -> dict[str, Any]:
    """What `annotation_schema` needs of an image written earlier: its size and the slice or frame."""
    from PIL import Image

    with Image.open(image) as img:
        info: dict[str, Any] = {"size": list(img.size)}
    spatial = (
        ((annotation.get("media_geometry") or {}).get("spatial") or {})
        if isinstance(annotation, dict)
        else {}
    )
    three_d = spatial.get("three_d") if isinstance(spatial, dict) else None
    video = spatial.get("video") if isinstance(spatial, dict) else None
    if isinstance(three_d, dict) and isinstance(three_d.get("slice_index"), int):
        info["slice_index"] = three_d["slice_index"]
        info["axis"] = three_d.get("slice_axis") if isinstance(three_d.get("slice_axis"), int) else 0
    if isinstance(video, dict) and isinstance(video.get("frame_index"), int):
        info["frame"] = video["frame_index"]
    return info


def mask_of(annotation: Mapping[str, Any]) -> str | None:
    extra = ((annotation.get("context") or {}).get("sample") or {}).get("extra") or {}
    value = extra.get("mask_file") if isinstance(extra, dict) else None
    return str(value) if isinstance(value, str) else None


# -- the answers' schemas and the records built around them ------------------------------------------


TASKS = ("classification", "segmentation", "detection")
DIMENSIONS = ("2D", "3D", "video")
_MAX_CLASSES = 8


def _text(longest: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": longest}


def _object(properties: Mapping[str, Any]) -> dict[str, Any]:
    """An object with exactly these keys, in this order (the grammar writes them so)."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }


PLAN_SCHEMA: dict[str, Any] = _object(
    {
        "dataset_name": _text(60),
        "modality": _text(30),
        "task_type": {"enum": list(TASKS)},
        "dimension": {"enum": list(DIMENSIONS)},
        "classes": {"type": "array", "items": _text(40), "minItems": 1, "maxItems": _MAX_CLASSES},
    }
)
"""The dataset-level decisions, made once per candidate and fixed in every later answer."""


@dataclass(frozen=True)
class GuidedPlan:
    """The model's dataset-level decisions.

    Attributes:
        dataset_name: The dataset's name.
        modality: Its imaging modality.
        task_type: classification, segmentation or detection.
        dimension: 2D, 3D or video.
        classes: Class names in id order (segmentation: background first).
    """

    dataset_name: str
    modality: str
    task_type: str
    dimension: str
    classes: tuple[str, ...]

    @classmethod
    def of(cls, answer: Mapping[str, Any]) -> GuidedPlan:
        """The plan from the model's JSON object (a server that ignored the schema may send anything).

        Raises:
            ValueError: A field is missing or outside the schema.
        """
        try:
            name = str(answer["dataset_name"]).strip()
            modality = str(answer["modality"]).strip()
            task, dim = str(answer["task_type"]), str(answer["dimension"])
            raw = answer["classes"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"the plan lacks {exc}") from None
        if task not in TASKS or dim not in DIMENSIONS:
            raise ValueError(f"task_type {task!r} / dimension {dim!r} outside {TASKS} / {DIMENSIONS}")
        if not isinstance(raw, list) or not raw:
            raise ValueError("classes must be a non-empty list")
        classes: list[str] = []
        for value in raw:
            text = str(value).strip()
            if text and text not in classes:  # a repeated name would make two ids of one class
                classes.append(text)
        if not name or not modality or not classes:
            raise ValueError("dataset_name, modality and classes must not be empty")
        return cls(name, modality, task, dim, tuple(classes[:_MAX_CLASSES]))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able (kept as the candidate's ``plan.json``)."""
        return {
            "guided": True,
            "dataset_name": self.dataset_name,
            "modality": self.modality,
            "task_type": self.task_type,
            "dimension": self.dimension,
            "classes": list(self.classes),
        }

    def class_table(self) -> dict[str, str]:
        """Class id → name: segmentation from 0 (background), detection from 1, classification from 0."""
        start = 1 if self.task_type == "detection" else 0
        return {str(k + start): name for k, name in enumerate(self.classes)}


def choice_schema(name: str, options: Sequence[Any] | str) -> dict[str, Any]:
    """One value: one of ``options``, or of a JSON type (``"integer"``); null is always allowed (the tool's
    default)."""
    if isinstance(options, str):
        return _object({name: {"anyOf": [{"type": options}, {"type": "null"}]}})
    return _object({name: {"enum": [*options, None] if None not in options else list(options)}})


_SPATIAL_KEY = {"2D": "common", "3D": "three_d", "video": "video"}
_SEGMENTATION_VARIANT = {"2D": "2d_coco", "3D": "3d_mask", "video": "video_coco"}
_SEGMENTATION_PAYLOAD = {"2D": "coco_2d", "3D": "mask_3d", "video": "video_coco"}
_DETECTION_VARIANT = {"2D": "2d", "3D": "3d", "video": "video"}
_MAX_BOXES = 4


def answer_schema(plan: GuidedPlan) -> dict[str, Any]:
    """The JSON Schema of what the model answers for one sample of the plan: the values only it can decide,
    the same schema for every sample.

    The rest of the record (paths, sizes, the plan's task, dimension and classes) is the framework's
    (`annotation_record`): a model made to spell out constants spends a decoding step on every token of them,
    and a schema that names the sample makes each request's prompt differ from its very first lines, so a
    server's prefix cache could reuse nothing across samples.
    """
    fields: dict[str, Any] = {
        "subject_id": _text(40),
        "sex": {"enum": ["unknown", "M", "F"]},
        "race_ethnicity": {"enum": ["NA", "unknown"]},
        "site_id": {"enum": ["NA", "unknown"]},
    }
    names = list(plan.class_table().values())
    if plan.task_type == "classification":
        fields["label"] = {"enum": names}
    elif plan.task_type == "detection":
        box = _object(
            {
                "bbox": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
                "category_name": {"enum": names},
            }
        )
        fields["boxes"] = {"type": "array", "items": box, "minItems": 0, "maxItems": _MAX_BOXES}
    return _object(fields)


def _spatial(plan: GuidedPlan, rendered: Mapping[str, Any]) -> dict[str, Any]:
    size = list(rendered.get("size") or [])
    branch: dict[str, Any] = {"pixel_size_px": size} if len(size) == 2 else {}
    if plan.dimension == "3D" and isinstance(rendered.get("slice_index"), int):
        branch["slice_axis"] = int(rendered.get("axis") or 0)
        branch["slice_index"] = rendered["slice_index"]
    if plan.dimension == "video" and isinstance(rendered.get("frame"), int):
        branch["frame_index"] = rendered["frame"]
    if not branch:  # an active branch must not be empty (SPEC §3.3, item 11)
        branch["was_resampled"] = False
    active = _SPATIAL_KEY[plan.dimension]
    return {key: branch if key == active else {} for key in ("common", "three_d", "video")}


def _task_branch(
    plan: GuidedPlan, index: int, mask_written: bool, answer: Mapping[str, Any]
) -> dict[str, Any]:
    table = plan.class_table()
    ids = {name: int(key) for key, name in table.items()}
    first = next(iter(table.values()))
    if plan.task_type == "classification":
        # The id is the framework's: it and the name always agree.
        name = answer.get("label") if answer.get("label") in ids else first
        return {
            "schema_variant": "multiclass",
            "class_names": table,
            "label": ids[str(name)],
            "label_name": name,
        }
    if plan.task_type == "segmentation":
        fields: dict[str, Any] = {"schema_variant": _SEGMENTATION_VARIANT[plan.dimension], "classes": table}
        if mask_written:
            fields[_SEGMENTATION_PAYLOAD[plan.dimension]] = {
                "format": "label_map_png",
                "mask_path": f"masks/{index}.png",
            }
        return fields
    boxes = []
    for box in answer.get("boxes") or []:
        if not isinstance(box, Mapping):
            continue
        name = box.get("category_name") if box.get("category_name") in ids else first
        boxes.append(
            {"bbox": list(box.get("bbox") or []), "category_id": ids[str(name)], "category_name": name}
        )
    return {"schema_variant": _DETECTION_VARIANT[plan.dimension], "class_names": table, "boxes2d": boxes}


def annotation_record(
    plan: GuidedPlan,
    index: int,
    source: str,
    rendered: Mapping[str, Any],
    answer: Mapping[str, Any],
    mask_file: str | None = None,
) -> dict[str, Any]:
    """The per-image annotation of one sample: the model's answer (`answer_schema`; a value outside its schema
    falls back to the schema's first one) in the benchmark's record, which passes its schema checks (SPEC §3.3
    g_i).

    ``rendered`` is what ``render`` reported of the image it wrote (``size``, ``slice_index``, ``axis``,
    ``frame``); ``mask_file`` the raw mask rendered to ``masks/<index>.png``, if one was.
    """

    def pick(key: str, allowed: Sequence[str]) -> str:
        value = answer.get(key)
        return value if isinstance(value, str) and value in allowed else allowed[0]

    extra: dict[str, Any] = {"source_file": source, "original_filename": PurePosixPath(source).name}
    if mask_file is not None:
        extra["mask_file"] = mask_file
    tasks: dict[str, Any] = {task: {} for task in TASKS}
    tasks[plan.task_type] = _task_branch(plan, index, mask_file is not None, answer)
    subject = str(answer.get("subject_id") or "").strip()[:40] or "unknown"
    return {
        "media_geometry": {
            "media": {"task_type": plan.task_type, "dimension": plan.dimension},
            "spatial": _spatial(plan, rendered),
        },
        "tasks": tasks,
        "record": {
            "schema_version": "1.0.1",
            "dataset_name": plan.dataset_name,
            "image_path": f"images/{index}.png",
        },
        "context": {
            "sample": {
                "subject_id": subject,
                "sex": pick("sex", ["unknown", "M", "F"]),
                "race_ethnicity": pick("race_ethnicity", ["NA", "unknown"]),
                "site_id": pick("site_id", ["NA", "unknown"]),
                "modality_primary": plan.modality,
                "extra": extra,
            }
        },
    }


def answer_of(annotation: Mapping[str, Any]) -> dict[str, Any]:
    """The model's answer inside a record `annotation_record` wrote (what a revision shows the model): its
    values under `answer_schema`, the keys the record has.
    """
    sample = (
        ((annotation.get("context") or {}).get("sample") or {}) if isinstance(annotation, Mapping) else {}
    )
    answer = {k: sample[k] for k in ("subject_id", "sex", "race_ethnicity", "site_id") if k in sample}
    tasks = annotation.get("tasks") or {} if isinstance(annotation, Mapping) else {}
    if isinstance(tasks.get("classification"), Mapping) and "label_name" in tasks["classification"]:
        answer["label"] = tasks["classification"]["label_name"]
    boxes = (
        (tasks.get("detection") or {}).get("boxes2d") if isinstance(tasks.get("detection"), Mapping) else None
    )
    if isinstance(boxes, list):
        answer["boxes"] = [
            {"bbox": b.get("bbox"), "category_name": b.get("category_name")}
            for b in boxes
            if isinstance(b, Mapping)
        ]
    return answer


META_SCHEMA: dict[str, Any] = _object(
    {"anatomical_structure": _text(40), "domain": _text(30), "dataset_description": _text(160)}
)
"""The dataset-level values that are the model's to decide (the rest of data_meta is `data_meta_record`'s)."""


def data_meta_record(
    plan: GuidedPlan, written: int, images: int, answer: Mapping[str, Any]
) -> dict[str, Any]:
    """``data_meta.json`` from the plan, the counts of annotations and images written and the model's
    `META_SCHEMA` answer.
    """

    def text(key: str) -> str:
        return str(answer.get(key) or "").strip() or "unknown"

    return {
        "schema_version": "1.0.2",
        "dataset_name": plan.dataset_name,
        "modality_primary": [plan.modality],
        "task_type": [plan.task_type],
        "anatomical_structure": text("anatomical_structure"),
        "domain": text("domain"),
        "dataset_description": text("dataset_description"),
        "data_volume": {"total": written},
        "valid_image_n": {"total": images},
        "num_classes_per_task": {plan.task_type: {"num_classes": len(plan.classes)}},
    }

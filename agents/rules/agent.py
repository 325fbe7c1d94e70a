"""`RulesAgent`: the offline, deterministic baseline standardizer (no model) implementing the `Agent`
protocol.

It is a baseline and, at temperature > 0, a simulation of sampling noise (softmax over its own ranked
hypotheses at each decision point); it is never a model. Usage is zero tokens, zero cost and zero calls, with
real wall time; the trace (JSONL) records every decision and every per-sample error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import medio
from agents.base import Candidate, Feedback, Task, Usage
from agents.rules.classify import plan_labels
from agents.rules.context import DatasetContext
from agents.rules.decisions import Decider
from agents.rules.pipeline import DatasetPlan, standardize_sample
from agents.rules.revise import (
    decision_events,
    fields_to_rewrite,
    merge_fields,
    points_for_fields,
    self_check_points,
)
from agents.rules.source import EXACT_PAIR_SCORE, container_shapes, mask_candidates, mask_key_hypotheses
from agents.rules.writer import SampleResult, build_annotation, build_data_meta
from agents.trace import TraceWriter
from benchmark.errors import is_storage_failure
from benchmark.fields import IMAGE_PATH
from benchmark.layout import OutputLayout
from core.atomic import atomic_write_json, read_json_or_none

log = logging.getLogger(__name__)

__all__ = ["TRACE_NAME", "RulesAgent"]

TRACE_NAME = "trace.jsonl"
_CONTAINER_SUFFIXES = (".npz", ".h5", ".hdf5", ".mat")


class RulesAgent:
    """The ``rules`` baseline: general heuristics over what is on disk, with seeded sampling among hypotheses.

    Args:
        temperature: Default temperature when the task's is None-like; the task's own temperature wins.
        name: The agent's name in candidates and reports.
    """

    cpu_bound = True
    """Heuristics over local files, no model call: one candidate at a time per process
    (`agents.base.cpu_bound`)."""

    def __init__(self, temperature: float | None = None, name: str = "rules") -> None:
        self.name = name
        self.default_temperature = temperature

    async def generate(self, task: Task) -> Candidate:
        """Standardize every manifest sample of the task's dataset into ``task.output_dir``.

        Returns:
            The candidate; ``status="failed"`` only when nothing at all could be written.
        """
        return await asyncio.to_thread(self._run, task, {}, frozenset(), None)

    async def revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable_fields: Sequence[str]
    ) -> Candidate:
        """Re-decide, at temperature 0, the decision points behind the fields the feedback names.

        Every other decision is replayed from the candidate's trace, and only the named (and editable) fields
        of the written JSON change; images and masks are rewritten only when a named field concerns them.
        The feedback names the fields by path (``Feedback.items``); free text re-decides every editable field.
        """
        return await asyncio.to_thread(self._revise, task, candidate, feedback, tuple(editable_fields))

    # ------------------------------------------------------------------ generation
    def _run(
        self,
        task: Task,
        replay: dict[tuple[int | None, str], str],
        redecide: frozenset[str],
        only_write: dict[int | None, list[str]] | None,
    ) -> Candidate:
        start = time.perf_counter()
        layout = OutputLayout(task.output_dir)
        trace_path = Path(task.out_dir) / TRACE_NAME
        temperature = task.temperature if task.temperature is not None else (self.default_temperature or 0.0)
        trace_path.unlink(missing_ok=True)  # the candidate's trace (decisions, per-sample errors) starts anew
        trace = TraceWriter(trace_path)
        decider = Decider(
            temperature=float(temperature),
            seed=task.seed,
            candidate_index=task.candidate_index,
            replay=replay,
            redecide=redecide,
            on_record=lambda record: trace.write("decision", **record.to_dict()),
            scope=task.name,
        )
        trace.write(
            "start",
            agent=self.name,
            dataset=task.name,
            seed=task.seed,
            temperature=temperature,
            candidate_index=task.candidate_index,
            samples=len(task.entries),
        )
        try:
            ctx = DatasetContext.build(Path(task.root), task.name, [e.relpath for e in task.entries])
            plan = self._plan(ctx, decider)
        except (OSError, ValueError, medio.MedioError) as exc:
            trace.write("end", status="failed", reason=str(exc))
            trace.close()
            return self._candidate(task, start, trace_path, "failed", f"cannot read the dataset: {exc}")
        trace.write("plan", task_type=plan.task, context=ctx.json_dump())
        results: list[SampleResult] = []
        skipped: dict[int, str] = {}
        seen: dict[str, int] = {}
        for entry in task.entries:
            occurrence = seen.get(entry.relpath, 0)
            seen[entry.relpath] = occurrence + 1
            try:
                done = standardize_sample(ctx, plan, entry.index, entry.relpath, occurrence, decider)
                # Rendering belongs to the sample too: an array no renderer takes fails this sample only.
                self._write_sample(layout, done, only_write)
            except Exception as exc:
                if is_storage_failure(exc):
                    raise  # not this sample's fault: the output disk is read-only or full
                why = _sample_failure(exc)
                if isinstance(exc, _INPUT_ERRORS):
                    log.info("rules: sample %s of %s skipped: %s", entry.index, task.name, why)
                else:
                    # A heuristic tripped on this file (a bug to fix, hence the traceback); the sample records
                    # it and the dataset goes on.
                    log.warning(
                        "rules: sample %s of %s failed: %s", entry.index, task.name, why, exc_info=True
                    )
                trace.write("sample_error", sample=entry.index, source=entry.relpath, error=why)
                skipped[entry.index] = why
                continue
            results.append(done.result)
        classes = next((r.classes for r in reversed(results) if r.classes), {})
        modality = _majority([r.modality for r in results]) or "NA"
        meta = build_data_meta(
            plan.dataset_name or task.name,
            results,
            modality=modality,
            task=plan.task,
            classes=classes,
            anatomy=plan.anatomy,
        )
        if only_write is None or None in only_write:
            self._write_meta(layout, meta, None if only_write is None else only_write[None])
        status, reason = ("ok", None) if results else ("failed", "no sample could be standardized")
        if skipped:
            # A dataset with nothing written drops out of the official macro: that is a visible WARNING.
            # Samples skipped beside written ones (undecodable files, expected failures) are an INFO line.
            first = next(iter(skipped.items()))
            log.log(
                logging.WARNING if not results else logging.INFO,
                "rules: %s: %d of %d samples not written (%s task); first: sample %s: %s",
                task.name,
                len(skipped),
                len(task.entries),
                plan.task,
                first[0],
                first[1],
            )
        trace.write("end", status=status, written=len(results), skipped=len(task.entries) - len(results))
        trace.close()
        return self._candidate(task, start, trace_path, status, reason, skipped)

    def _plan(self, ctx: DatasetContext, decider: Decider) -> DatasetPlan:
        masks = [mask_candidates(ctx.files, s, exclude=set(ctx.sources) - {s}) for s in ctx.sources[:3]]
        seg_signals = sum(1 for m in masks if m)
        exact_pairs = sum(1 for m in masks if m and m[0].score >= EXACT_PAIR_SCORE)
        container_mask = False
        first = ctx.sources[0]
        if first.lower().endswith(_CONTAINER_SUFFIXES):
            container_mask = bool(
                mask_key_hypotheses(list(shapes := container_shapes(ctx.root / first)), shapes)
            )
        task_type = ctx.decide_task(decider, seg_signals, container_mask, exact_pairs)
        plan = DatasetPlan(task=task_type, anatomy=ctx.anatomy())
        plan.dataset_name = decider.choose("dataset_name", ctx.name_hypotheses())
        if plan.task == "classification":
            plan.labels = plan_labels(ctx, decider)
        return plan

    def _write_sample(
        self, layout: OutputLayout, done: Any, only_write: dict[int | None, list[str]] | None
    ) -> None:
        result: SampleResult = done.result
        annotation = build_annotation(result)
        path = layout.annotation_path(result.index)
        if only_write is not None:
            fields = only_write.get(result.index)
            if not fields:
                return
            old = _load(path)
            if old is not None:
                annotation = merge_fields(old, annotation, fields)
            if not any(
                f.startswith(("image", IMAGE_PATH, "media_geometry.spatial", "tasks.segmentation"))
                for f in fields
            ):
                atomic_write_json(path, annotation, durable=False)
                return
        medio.write_png(done.image, layout.image_path(result.index))
        if done.mask is not None:
            layout.masks_dir.mkdir(parents=True, exist_ok=True)
            medio.write_png(done.mask, layout.masks_dir / f"{result.index}.png")
        # A candidate's files are regenerated by a rerun, as the PNGs beside them (written without an
        # fsync; core.atomic): durable writes cost two fsyncs per sample file, 1-3 ms each on a test disk.
        atomic_write_json(path, annotation, durable=False)

    def _write_meta(self, layout: OutputLayout, meta: dict[str, Any], fields: list[str] | None) -> None:
        if fields is not None:
            old = _load(layout.data_meta_path)
            if old is not None:
                meta = merge_fields({"data_meta": old}, {"data_meta": meta}, fields)["data_meta"]
        atomic_write_json(layout.data_meta_path, meta, durable=False)

    def _candidate(
        self,
        task: Task,
        start: float,
        trace: Path,
        status: str,
        reason: str | None,
        skipped: dict[int, str] | None = None,
    ) -> Candidate:
        return Candidate(
            output_dir=task.output_dir,
            usage=Usage(wall_s=round(time.perf_counter() - start, 4)),
            trace_path=trace,
            status=status,  # type: ignore[arg-type]
            reason=reason,
            candidate_index=task.candidate_index,
            agent=self.name,
            skipped=dict(skipped or {}),
        )

    # ------------------------------------------------------------------ revision
    def _revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable: tuple[str, ...]
    ) -> Candidate:
        start = time.perf_counter()
        target = task.output_dir
        if Path(candidate.output_dir).resolve() != Path(target).resolve():
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(candidate.output_dir, target)
        replay = _load_replay(candidate.trace_path)
        generic = not (isinstance(feedback, Feedback) and feedback.items)
        if generic and "*" in editable:
            # A self-check with everything editable (S1): re-decide what the agent's own review finds and
            # rewrite the whole candidate from the replayed decisions (unchanged samples come out identical).
            only_write: dict[int | None, list[str]] | None = None
            redecide = self_check_points(candidate.trace_path, Path(candidate.output_dir), task.indices)
        else:
            only_write = fields_to_rewrite(feedback, editable, task.indices)
            redecide = points_for_fields(only_write)
        revised = self._run(
            task.for_candidate(task.candidate_index, task.out_dir, seed=task.seed),
            replay,
            redecide,
            only_write,
        )
        return dataclasses.replace(revised, usage=Usage(wall_s=round(time.perf_counter() - start, 4)))


# What a raw file can make a reader or a table parser raise: the sample's input is at fault.
_INPUT_ERRORS = (medio.MedioError, ValueError, IndexError, KeyError, OSError)


def _sample_failure(exc: BaseException) -> str:
    """The one-line reason a sample failed; anything but an input error is named by its type."""
    if isinstance(exc, _INPUT_ERRORS):
        return _one_line(exc)
    return f"internal error {type(exc).__name__}: {_one_line(exc)}"


def _one_line(exc: BaseException) -> str:
    # A sample's failure is reported on one line (log, trace, decision reason); library messages may span
    # several (pydicom lists every decoder plugin it tried).
    return " / ".join(part.strip() for part in str(exc).splitlines() if part.strip()) or type(exc).__name__


def _load(path: Path) -> dict[str, Any] | None:
    data = read_json_or_none(path)
    return data if isinstance(data, dict) else None


def _load_replay(trace: Path | None) -> dict[tuple[int | None, str], str]:
    return {(e.get("sample"), str(e.get("point"))): str(e.get("chosen")) for e in decision_events(trace)}


def _majority(values: list[str]) -> str | None:
    if not values:
        return None
    return max(dict.fromkeys(values), key=values.count)

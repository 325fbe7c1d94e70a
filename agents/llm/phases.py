"""The phases of a dataset larger than one batch: a plan, batches of samples, the dataset JSON.

Each phase is its own conversation, so what a request carries depends on the batch size, never on the
dataset's sample count:

1. **plan**: the model sees the manifest (a bounded excerpt of it), explores the files and writes down the
   conventions with ``write_plan`` (source rule, label source, slice/frame rule, class table, conventions).
   The framework keeps the plan (``plan.json`` beside the candidate's trace).
2. **batches**: one conversation per ``batch_size`` samples, given the plan and its own samples only; they run
   concurrently (``agent.concurrency``). Each batch's tools may write only its own samples.
3. **meta**: one conversation given the plan and a summary counted from the written annotations writes
   ``data_meta.json``.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.base import ManifestEntry, Task
from agents.llm import prompts
from agents.llm.outcome import short_list
from agents.tools.folder_tools import FOLDER_TOOLS
from agents.tools.required_parts import missing_part
from agents.tools.table_tools import TABLE_TOOLS
from agents.tools.tool_args import validation_problems
from agents.tools.tools import ToolBox, ToolResult
from core.atomic import atomic_write_json, read_json_or_none

__all__ = [
    "PLAN_FILE",
    "PLAN_READ_TOOLS",
    "PLAN_TOOL",
    "WritePlanArgs",
    "annotation_summary",
    "dataset_check",
    "manifest_excerpt",
    "meta_check",
    "plan_handler",
    "plan_text",
    "samples_check",
    "scoped",
    "split_batches",
    "unfinished",
    "written_and_missing",
]

PLAN_TOOL = "write_plan"
#: What the plan conversation may use besides ``write_plan``: the folder and table tools, ``inspect`` and
#: ``view_image``. Nothing that writes a sample (``render``, ``write_*``, field edits) or runs code: every
#: sample is written by its own batch, under the plan.
PLAN_READ_TOOLS: frozenset[str] = frozenset({*FOLDER_TOOLS, *TABLE_TOOLS, "inspect", "view_image"})
#: The kept plan, in the candidate's folder (beside the trace, outside the benchmark output).
PLAN_FILE = "plan.json"
# The plan phase shows this many manifest lines (first ones, then a spread): the file layout shows in a few.
_MANIFEST_EXCERPT = 24
_PLAN_FIELD_CHARS = 4000
_SUMMARY_ITEMS = 40


class WritePlanArgs(BaseModel):
    """Write down the conventions every sample of this dataset follows (call once, after exploring)."""

    model_config = ConfigDict(extra="forbid")

    source_rule: str = Field(
        max_length=_PLAN_FIELD_CHARS, description="Which file (or key, item) is a sample's source image."
    )
    label_source: str = Field(
        max_length=_PLAN_FIELD_CHARS,
        description="Where labels, masks or boxes come from (table and column, folder name, mask file ...).",
    )
    slice_rule: str = Field(
        "",
        max_length=_PLAN_FIELD_CHARS,
        description="Which slice or frame to render, for volumes and videos.",
    )
    class_table: dict[str, str] = Field(
        default_factory=dict, description="Class id -> class name, as every annotation will write it."
    )
    conventions: str = Field(
        "",
        max_length=_PLAN_FIELD_CHARS,
        description="Modality, task type, dimension, ids, metadata and anything else kept the same.",
    )


def plan_handler(out_dir: Path, kept: dict[str, Any]) -> Any:
    """The ``write_plan`` tool: a handler of `WritePlanArgs` that keeps the plan in ``kept`` (the agent reads
    it for the later phases) and in ``out_dir/plan.json``, and finishes the conversation.
    """

    def handle(args: WritePlanArgs) -> ToolResult:
        kept.clear()
        kept.update(args.model_dump())
        atomic_write_json(out_dir / PLAN_FILE, kept, durable=False)
        return ToolResult(json.dumps({"written": PLAN_FILE}), finished=True)

    return handle


def plan_text(plan: dict[str, Any] | None) -> str:
    """The plan as the batch and meta prompts show it."""
    if not plan:
        return "(no plan was written: look at the files of your samples before converting them)"
    return json.dumps(plan, ensure_ascii=False, indent=1)


def manifest_excerpt(entries: Sequence[ManifestEntry]) -> tuple[str, int]:
    """A bounded excerpt of the manifest (the first lines, then an even spread, then the last line): its
    ``index<TAB>path`` lines and how many are shown.
    """
    if len(entries) <= _MANIFEST_EXCERPT:
        chosen = list(entries)
    else:
        head = list(entries[: _MANIFEST_EXCERPT // 2])
        rest = entries[_MANIFEST_EXCERPT // 2 :]
        step = max(1, len(rest) // (_MANIFEST_EXCERPT - len(head)))
        chosen = head + list(rest[step - 1 :: step])[: _MANIFEST_EXCERPT - len(head) - 1] + [entries[-1]]
    return "\n".join(f"{e.index}\t{e.relpath}" for e in chosen), len(chosen)


def split_batches(entries: Sequence[ManifestEntry], size: int) -> list[tuple[ManifestEntry, ...]]:
    """Consecutive batches of ``size`` samples (the last may be smaller), in manifest order."""
    return [tuple(entries[k : k + size]) for k in range(0, len(entries), max(1, size))]


def samples_check(output_dir: Path, indices: Sequence[int]) -> Any:
    """The `FinishCheck` of a batch: its samples' annotations exist and pass the output schema."""
    from validator.schema import Annotation

    def check(_toolbox: ToolBox) -> list[str]:
        missing = [
            i for i in indices if not (output_dir / "standardized_annotations" / f"{i}.json").is_file()
        ]
        problems = [f"no annotation for samples {missing}"] if missing else []
        for i in indices:
            if i in missing:
                continue
            gap = missing_part(output_dir, i)
            if gap is not None:  # an annotation without its mask/boxes/image is not a written sample
                problems.append(f"sample {i}: {gap}")
                continue
            document = read_json_or_none(output_dir / "standardized_annotations" / f"{i}.json")
            try:
                Annotation.model_validate(document)
            except ValidationError as exc:
                problems.append(f"sample {i}: schema: {validation_problems(exc)[0]}")
        return problems

    return check


def meta_check(output_dir: Path) -> Any:
    """The `FinishCheck` of the meta phase: ``data_meta.json`` exists and passes the schema."""
    from validator.schema import DataMeta

    def check(_toolbox: ToolBox) -> list[str]:
        document = read_json_or_none(output_dir / "data_meta.json")
        if document is None:
            return ["data_meta.json is not written"]
        try:
            DataMeta.model_validate(document)
        except ValidationError as exc:
            return [f"data_meta.json: schema: {validation_problems(exc)[0]}"]
        return []

    return check


def dataset_check(output_dir: Path, indices: Sequence[int]) -> Any:
    """The finish check of a whole-dataset conversation: `samples_check` and `meta_check` together."""
    samples, meta = samples_check(output_dir, indices), meta_check(output_dir)
    return lambda box: samples(box) + meta(box)


def annotation_summary(output_dir: Path, indices: Sequence[int]) -> str:
    """What the written annotations say, counted, one line per field: task types, modalities, dimensions,
    labels and classes.

    Bounded whatever the sample count (the most frequent values only), so the meta phase's prompt does not
    grow with the dataset.
    """
    counts: dict[str, Counter[str]] = {
        k: Counter() for k in ("task_type", "modality", "dimension", "label_name", "classes")
    }
    for i in indices:
        doc = read_json_or_none(output_dir / "standardized_annotations" / f"{i}.json")
        if not isinstance(doc, dict):
            continue
        media = (doc.get("media_geometry") or {}).get("media") or {}
        sample = (doc.get("context") or {}).get("sample") or {}
        counts["task_type"][str(media.get("task_type"))] += 1
        counts["dimension"][str(media.get("dimension"))] += 1
        counts["modality"][str(sample.get("modality_primary"))] += 1
        tasks = doc.get("tasks") or {}
        cls = tasks.get("classification") or {}
        if isinstance(cls, dict) and cls.get("label_name") is not None:
            counts["label_name"][str(cls.get("label_name"))] += 1
        for branch in ("classification", "segmentation", "detection"):
            table = (tasks.get(branch) or {}).get("classes") if isinstance(tasks.get(branch), dict) else None
            if isinstance(table, dict):
                counts["classes"][json.dumps(table, sort_keys=True)] += 1
    lines = []
    for name, counter in counts.items():
        if counter:
            shown = ", ".join(f"{value}: {n}" for value, n in counter.most_common(_SUMMARY_ITEMS))
            more = f" (+{len(counter) - _SUMMARY_ITEMS} more values)" if len(counter) > _SUMMARY_ITEMS else ""
            lines.append(f"- {name}: {shown}{more}")
    return "\n".join(lines) or "- (no annotation could be read)"


def scoped(task: Task, entries: Sequence[ManifestEntry]) -> Task:
    """The task restricted to some samples (a batch's tools may write only those)."""
    return dataclasses.replace(task, entries=tuple(entries))


def read_plan(path: Path) -> dict[str, Any] | None:
    """A candidate's stored plan (``plan.json``), or None when it has none or it does not parse."""
    plan = read_json_or_none(path)
    return plan if isinstance(plan, dict) else None


def written_and_missing(indices: Sequence[int], gaps: Mapping[int, str]) -> tuple[list[int], list[int]]:
    """The indices written and those not (the ``gaps`` of `unfinished`), in manifest order."""
    return [i for i in indices if i not in gaps], [i for i in indices if i in gaps]


def unfinished(output_dir: Path, indices: Sequence[int]) -> dict[int, str]:
    """The samples not written, each with why: no annotation, or a required part missing beside one.

    A sample whose annotation exists but whose mask, boxes or image do not (a mask render that failed) is
    not written: the candidate lists it with the others as missing (`agents.tools.required_parts`).

    Args:
        output_dir: The candidate's ``agent1_data_organization``.
        indices: The manifest indices.

    Returns:
        Per unwritten index, one line; written samples are absent.
    """
    gaps = {i: missing_part(output_dir, i) for i in indices}
    return {i: why for i, why in gaps.items() if why is not None}


def meta_prompt(task: Task, plan: dict[str, Any] | None) -> str:
    """The task prompt of the ``meta`` phase: the plan and a summary counted from the written annotations."""
    written, missing = written_and_missing(task.indices, unfinished(task.output_dir, task.indices))
    return prompts.META_PROMPT.format(
        name=task.name,
        candidate_index=task.candidate_index,
        plan=plan_text(plan),
        written=len(written),
        total=len(task.entries),
        missing=f" Missing: {short_list(missing)}." if missing else "",
        summary=annotation_summary(task.output_dir, task.indices),
    )

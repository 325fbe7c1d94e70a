"""The coding-agent mode (``agent.mode=script``): explore, write one conversion script, run it, read the
validator's messages, fix, finish.

The paper's agents work in a coding environment: they look at the files, then write and run a script that
converts every sample. This mode gives the model exactly that: the read-only tools to explore
(`agents.tools.folder_tools`, ``table_head``, ``inspect``, ``view_image``), ``run_python`` to run its
script (`agents.tools.code_tool`: the same sandbox and limits as the opt-in code tool), the review tools
to look at and patch what the script wrote, and ``finish``. There is no per-sample ``render`` or
``write_annotation``: the script writes every output, so the number of model calls does not grow with the
number of samples.

Every ``run_python`` result carries a ``validation`` block: the ground-truth-free validator's messages on
the output folder as it is after the script (`validator.validate`, the run's default ``evidence`` profile;
the validator reads the raw data and the manifest, never the ground truth), grouped by message so that one
mistake repeated over 300 samples is one line with its sample count, and bounded. A script that crashes or
is stopped by a limit is a failed tool call (``script_failed``), so `max_failed_turns` failed turns in a row
end the candidate, and at most `ScriptOptions.max_runs` scripts run per candidate.
"""

from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.base import Task
from agents.llm.conversation import (
    ConversationLimits,
    ConversationSetup,
    ConversationState,
    converse,
    opening_messages,
)
from agents.tools.code_tool import CODE_TOOL, CodeLimits, CodeRunner, RunPythonArgs
from agents.tools.folder_tools import FOLDER_TOOLS
from agents.tools.review_tools import REVIEW_TOOLS
from agents.tools.sandbox import Sandbox
from agents.tools.table_tools import TABLE_TOOLS
from agents.tools.tools import ToolBox, ToolResult, tool_definitions
from benchmark.source_stem import add_source_stems_in_folder
from core.options import positive_options

__all__ = [
    "SCRIPT_MODE_TOOLS",
    "SCRIPT_SYSTEM_PROMPT",
    "ProseCalls",
    "ScriptOptions",
    "ScriptTool",
    "script_tool_definitions",
    "script_toolbox",
    "validation_feedback",
]

log = logging.getLogger(__name__)

SCRIPT_MODE_TOOLS = (*FOLDER_TOOLS, *TABLE_TOOLS, "inspect", "view_image", *REVIEW_TOOLS, "finish")
"""The standard tools offered beside ``run_python`` in script mode (no per-sample render or write)."""

SCRIPT_SYSTEM_PROMPT = """\
You standardize a raw medical imaging dataset into the MDS-Bench output format the way a coding agent \
does: explore the files with the read-only tools, then write ONE Python script that converts every sample \
of the manifest, and run it with run_python.

Explore: tree summarises the whole folder (files per extension, kinds of folders, every text and table \
file); list_dir, find and grep locate files; read_text and table_head read label tables and notes; inspect \
summarises a raw file (format, shape, spacing, modality, container keys, columns); view_image shows an image.

Convert: run_python runs your script with the working directory holding data/ (the dataset's raw files, \
read-only; manifest paths start with data/) and output/ (write output/images/<index>.png, \
output/masks/<index>.png for segmentation, output/standardized_annotations/<index>.json and \
output/data_meta.json). Use medio: medio.inspect(path) -> dict; medio.read(path, key=None, index=None, \
volume=None, frame=None) -> image with .array and .meta (format, shape, axes, spacing, modality, n_frames); \
medio.render(image, slice_index=None, axis=0, frame=None, window=None, label=False, mask=None) -> \
.pixels (uint8) and .info; medio.write_png(pixels, path). label=True keeps class ids in a mask; \
mask=<mask array> picks the slice where the mask has the most foreground. numpy, pandas and PIL are \
importable; there is no network and no subprocess, and CPU time, wall time and memory are limited.

Check and fix: every run_python result has a "validation" block with the validator's messages on what is \
in output/ now (grouped, with the sample indices they concern) and the samples still missing. Fix the \
script and run it again, or change single fields with edit_fields. Call finish when every sample is \
written and data_meta.json agrees with the annotations."""


@dataclass(frozen=True)
class ScriptOptions:
    """Bounds and feedback of the script mode (``agent.script.*``).

    Attributes:
        max_runs: ``run_python`` calls per candidate; later calls are refused (a tool error).
        feedback_groups: Distinct validator messages shown per run (the worst first).
        feedback_indices: Sample indices listed per message (the count is always given).
        profile: The validator profile whose messages are shown.
    """

    max_runs: int = 8
    feedback_groups: int = 15
    feedback_indices: int = 12
    profile: str = "evidence"

    @classmethod
    def of(cls, value: ScriptOptions | Mapping[str, Any] | None) -> ScriptOptions:
        """The options from a config mapping, or passed through (`core.options.positive_options`)."""
        return positive_options(
            cls, value, unknown="unknown agent.script option(s)", bounds="agent.script bounds"
        )


def validation_feedback(task: Task, output_dir: Path, options: ScriptOptions) -> dict[str, Any]:
    """The validator's messages on a candidate's ``output_dir`` (read with ``task``'s root and manifest, never
    its ground truth), grouped by message and bounded by ``options`` (groups, indices, profile).

    Returns:
        ``written`` / ``expected`` counts, ``missing`` (indices, at most ``feedback_indices`` of them, and
        ``missing_count``), ``mean_score`` over the manifest, ``problems`` (one item per distinct message:
        ``check``, ``message``, ``samples`` count, ``indices``), ``data_meta`` messages, and
        ``groups_not_shown`` when some were cut.
    """
    from validator.validate import validate

    folder = output_dir / "standardized_annotations"
    written = sorted(i for i in task.indices if (folder / f"{i}.json").is_file())
    missing = sorted(set(task.indices) - set(written))
    report = validate(output_dir, task.root, profile=options.profile, use_cache=False)
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    worst: dict[tuple[str, str], float] = {}
    for index in written:
        sample = report.samples.get(index)
        if sample is None:
            continue
        for outcome in sample.failed():
            key = (outcome.name, outcome.result.message or f"score {outcome.score:.2f}")
            groups[key].append(index)
            worst[key] = min(worst.get(key, 1.0), outcome.score)
    # The messages that concern the most samples first, then the lowest scores: one systematic mistake of the
    # script matters more than an odd sample.
    ranked = sorted(groups, key=lambda k: (-len(groups[k]), worst[k], k))
    shown = ranked[: options.feedback_groups]
    n = options.feedback_indices
    feedback: dict[str, Any] = {
        "written": len(written),
        "expected": len(task.indices),
        "missing_count": len(missing),
        "missing": missing[:n],
        "mean_score": round(report.mean_total, 4),
        "problems": [
            {
                "check": check,
                "message": message[:300],
                "samples": len(groups[(check, message)]),
                "indices": groups[(check, message)][:n],
            }
            for check, message in shown
        ],
        "data_meta": [
            f"{o.name}: {o.result.message[:300]}"
            for o in report.data_meta.failed()[: options.feedback_groups]
        ],
    }
    if len(ranked) > len(shown):
        feedback["groups_not_shown"] = len(ranked) - len(shown)
    return feedback


class ScriptTool:
    """``run_python`` of the script mode: the code tool (``runner``, `agents.tools.code_tool`'s sandboxed
    subprocess), bounded in runs, then the validator's messages on ``output_dir`` (`validation_feedback`).
    """

    def __init__(self, runner: CodeRunner, task: Task, output_dir: Path, options: ScriptOptions) -> None:
        self.runner = runner
        self.task = task
        self.output_dir = output_dir
        self.options = options
        self.runs = 0

    def __call__(self, args: RunPythonArgs) -> ToolResult:
        """Run one script, then validate the output folder; a failed or refused script is a tool error.

        Args:
            args: The script and an optional shorter wall-time limit.

        Returns:
            The code tool's JSON plus ``validation``; ``error`` is ``script_failed`` when the script exited
            non-zero or was stopped by a limit or the guard, ``script_limit`` past ``max_runs``.
        """
        if self.runs >= self.options.max_runs:
            return ToolResult(
                f"run_python refused: {self.runs} scripts already ran for this candidate (agent.script."
                "max_runs); fix single fields with edit_fields, or call finish.",
                "script_limit",
            )
        self.runs += 1
        result = json.loads(self.runner(args).text)
        failed = result["exit_code"] != 0 or result["stopped_by"] is not None
        # The script writes the annotations itself: the stem the official scorer needs is recorded here, as
        # write_annotation does in the tool mode (docs/scoring.md), before the validator reads them.
        recorded = add_source_stems_in_folder(self.output_dir, self.task.indices)
        if recorded:
            shown = sorted(recorded)[: self.options.feedback_indices]
            result["recorded"] = {
                "samples": len(recorded),
                "indices": shown,
                "first": recorded[shown[0]].note(),
            }
        try:
            result["validation"] = validation_feedback(self.task, self.output_dir, self.options)
        except Exception as exc:  # the feedback is a help; the script's own result must still reach the model
            log.warning("script-mode validation failed: %s", exc, exc_info=True)
            result["validation"] = {"error": f"the validator could not run: {type(exc).__name__}: {exc}"}
        result["run"] = f"{self.runs} of at most {self.options.max_runs}"
        return ToolResult(json.dumps(result, ensure_ascii=False), "script_failed" if failed else None)


def script_tool_definitions() -> list[dict[str, Any]]:
    """The tool definitions sent in script mode: `SCRIPT_MODE_TOOLS` and ``run_python``."""
    return tool_definitions({CODE_TOOL: RunPythonArgs}, only=SCRIPT_MODE_TOOLS)


def script_toolbox(
    task: Task, sandbox: Sandbox, vision: bool, code_limits: CodeLimits, options: ScriptOptions
) -> ToolBox:
    """The toolbox of one script-mode candidate: the exploring and review tools, ``run_python`` (bounded by
    ``code_limits`` and ``options``), ``finish``; any other tool (``render``, ``write_annotation`` ...) is
    unknown.
    """
    runner = CodeRunner(task.root, sandbox.output_dir, task.out_dir / "workspace", code_limits)
    tool = ScriptTool(runner, task, sandbox.output_dir, options)
    return ToolBox(task, sandbox, vision, {CODE_TOOL: (RunPythonArgs, tool)}, only=SCRIPT_MODE_TOOLS)


# A fenced block tagged python/py (or untagged): what a model that cannot call tools writes its script in.
_FENCE = re.compile(r"```[ \t]*(python3?|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


class ProseCalls:
    """The calls a prose reply means in script mode: its fenced Python script is ``run_python``.

    Small local models often answer "Here is the script:" and a fenced block instead of calling
    ``run_python``. The block (the longest one tagged ``python``, else the longest untagged one) is run
    through the same tool, sandbox and validator feedback as a real call; once one ran, a prose reply
    without a block is taken as ``finish`` (whose check still names what is missing). A reply with no block
    before any ran stays a text reply, so a model that never writes code ends on its text replies and the
    candidate is redone guided (`agents.llm.modes.cannot_call_tools`).
    """

    def __init__(self) -> None:
        self.ran = 0

    def __call__(self, content: Any) -> list[dict[str, Any]]:
        """The tool calls of one reply without any (empty: none meant)."""
        blocks = [(tag, code) for tag, code in _FENCE.findall(content if isinstance(content, str) else "")]
        tagged = [code for tag, code in blocks if tag] or [code for _tag, code in blocks]
        code = max(tagged, key=len).strip() if tagged else ""
        if code:
            self.ran += 1
            return [_call(CODE_TOOL, {"code": code}, f"prose_script_{self.ran}")]
        if self.ran:
            return [_call("finish", {"summary": "a prose reply after the script"}, f"prose_end_{self.ran}")]
        return []

    @property
    def note(self) -> str | None:
        """What the candidate's reason says of it, or None when no block ran."""
        if not self.ran:
            return None
        return f"script mode ran {self.ran} fenced python script(s) from prose replies as run_python"


def _call(name: str, arguments: Mapping[str, Any], call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


async def run_script(
    setup: ConversationSetup, toolbox: ToolBox, opening: Sequence[str], limits: ConversationLimits
) -> ConversationState:
    """One script-mode candidate: the model explores, writes one conversion script, runs it over every sample
    with ``run_python``, reads the validator's messages and fixes, in one conversation (opened by the
    instruction, the task prompt and a revision's prompt).
    """
    from agents.llm.phases import dataset_check

    messages = opening_messages(SCRIPT_SYSTEM_PROMPT, opening)
    check = dataset_check(toolbox.sandbox.output_dir, toolbox.task.indices)
    prose = ProseCalls()
    state = await converse(setup, messages, toolbox, limits, "script", check, prose)
    state.note = prose.note
    return state

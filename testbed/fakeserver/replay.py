"""A fake-server script that replays the `rules` baseline's decisions as tool calls.

`replay_script(dataset_root)` runs the `RulesAgent` at temperature 0 into a scratch folder, then turns what it
did into a scripted conversation: per manifest sample ``inspect`` the source, ``render`` the image (and the
mask) with the rules agent's read options, ``view_image`` the result and ``write_annotation`` with the rules
agent's JSON; then ``write_data_meta`` and ``finish``. Served by `FakeServer`, the script lets the LiteLLM
agent standardize a whole dataset through the real LiteLLM path offline, and its outputs can be compared with
the rules agent's, file by file. That is at temperature 0; a request at a temperature above 0 gets its
``write_annotation`` calls sampled at the request's ``seed`` (`testbed.fakeserver.sampling`), so seeds and
candidates differ as a model's samples do.

How the rules agent's read options map onto the ``render`` tool (``agents/tools/tools.py:RenderArgs``):

| rules agent (trace decision / annotation field)            | ``render`` argument |
|------------------------------------------------------------|---------------------|
| ``read_target`` (a file, or a DICOM series folder)         | ``source``          |
| ``label_source_image`` (image beside a listed label volume)| ``source``          |
| ``extra.source_key`` / ``image_key``                       | ``key``             |
| ``extra.record_index`` (record of a stacked container)     | ``item``            |
| ``three_d.slice_index``                                    | ``slice_index``     |
| ``video.frame_index``                                      | ``frame``           |
| ``extra.mask_file`` or ``mask_key`` (mask)                 | ``source``/``key`` with ``kind="mask"`` |

Two things the rules agent does to a mask have no ``render`` argument: it keeps the first channel of a colour
mask, and it maps a binary mask stored as 0/255 to 0/1. With ``check=True`` every sample's render calls are
run once through the real tools and compared with the rules agent's PNGs; the samples whose pixels differ are
listed in `ReplayScript.mismatches` with the reason, so callers know what the LLM path cannot reproduce.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import tempfile
from collections.abc import Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from core.cli_errors import run_coroutine
from testbed.fakeserver.sampling import AnnotationSampler
from testbed.fakeserver.script import Reply, Step, TurnScript, _turn_of, assistant_turn, tool_call

__all__ = ["ReplayScript", "replay_script"]

log = logging.getLogger(__name__)

_MANIFEST_LINE = re.compile(r"^(\d+)\t", re.MULTILINE)

_T = TypeVar("_T")


class ReplayScript(TurnScript):
    """A turn script replaying the rules agent on one dataset, with what the replay is compared against.

    Attributes:
        steps: One scripted assistant turn per model call.
        dataset: The dataset's name.
        reference_dir: The rules agent's ``agent1_data_organization`` folder (the expected outputs).
        render_args: The ``render`` arguments used per sample (``{"image": {...}, "mask": {...} | None}``).
        skipped: Manifest indices the rules agent did not write (no calls are scripted for them).
        mismatches: Indices whose rendered PNGs differ from the rules agent's, with the reason
            (filled only when the script was built with ``check=True``).
        sampler: Samples the annotations of requests at a temperature above 0 (None: every request is
            answered by the exact replay).
    """

    def __init__(
        self,
        steps: list[Reply],
        *,
        dataset: str,
        reference_dir: Path,
        render_args: dict[int, dict[str, Any]],
        skipped: list[int],
        mismatches: dict[int, str],
        sample_steps: dict[int, list[Reply]] | None = None,
        plan_steps: list[Reply] | None = None,
        meta_steps: list[Reply] | None = None,
        sampler: AnnotationSampler | None = None,
    ) -> None:
        super().__init__(steps, after_end=Reply(content="The dataset is done."))
        self.sampler = sampler
        self.dataset = dataset
        self.reference_dir = reference_dir
        self.render_args = render_args
        self.skipped = skipped
        self.mismatches = mismatches
        #: Per sample, its turns; the phase scripts are cut from these.
        self.sample_steps = sample_steps or {}
        self.plan_steps = plan_steps or []
        self.meta_steps = meta_steps or []
        self._finish = steps[-1] if steps else Reply(content="done")

    def phase_steps(self, request: Mapping[str, Any]) -> list[Reply]:
        """The turns of the conversation ``request`` belongs to, from the phase its task prompt names.

        Args:
            request: A chat-completion request body.

        Returns:
            All turns for a whole-dataset conversation; else the phase's turns.
        """
        prompt = next(
            (
                m["content"]
                for m in request.get("messages", [])
                if isinstance(m.get("content"), str) and m["content"].startswith("Dataset name:")
            ),
            "",
        )
        phase = next(
            (line[len("Phase:") :].strip() for line in prompt.splitlines() if line.startswith("Phase:")), ""
        )
        if phase == "plan":
            return self.plan_steps
        if phase == "meta":
            return self.meta_steps
        if phase.startswith("batch"):
            listed = prompt.split("\nSamples of this batch", 1)[-1].split("\nOutput schema", 1)[0]
            indices = [int(m.group(1)) for m in _MANIFEST_LINE.finditer(listed)]
            return [step for i in indices for step in self.sample_steps.get(i, [])] + [self._finish]
        return [s for s in self.steps if isinstance(s, Reply)]

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        """Answer turn k of a request's conversation with turn k of its phase, sampled above temperature 0."""
        steps = self.phase_steps(request)
        turn = _turn_of(request)
        step = steps[turn] if turn < len(steps) else self.after_end
        return step if self.sampler is None else self.sampler.reply(step, request)

    def to_json(self) -> list[dict[str, Any]]:
        """Return the turns in the ``--script FILE`` format of ``medstrat fakeserver``.

        Returns:
            One ``{"content", "tool_calls": [{"name", "arguments", "id"}]}`` object per turn.
        """
        turns = []
        for step in self.steps:
            assert isinstance(step, Reply)  # built here from Replies only
            calls = [
                {
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "arguments": json.loads(c["function"]["arguments"]),
                }
                for c in step.tool_calls
            ]
            turns.append({"content": step.content, "tool_calls": calls})
        return turns


def _run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    # asyncio.run cannot nest inside a running loop (an async test, a notebook): use a helper thread then.
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_coroutine(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run_coroutine, coro).result()


def _decisions(trace: Path) -> dict[tuple[int | None, str], str]:
    """The rules agent's chosen hypothesis per ``(sample, decision point)``, from its JSONL trace."""
    chosen: dict[tuple[int | None, str], str] = {}
    for line in trace.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("event") == "decision":
            chosen[(event.get("sample"), str(event["point"]))] = str(event["chosen"])
    return chosen


def _spatial_dims(path: Path, key: str | None) -> int:
    """Spatial rank of a raw file (colour and time axes excluded), as the rules agent measures it."""
    import medio

    image = medio.read(path, key=key)
    axes = image.meta.axes or ""
    rank = image.array.ndim - axes.endswith("C") - axes.startswith("T")
    return int(rank)


def _render_args(
    root: Path, index: int, annotation: Mapping[str, Any], decided: Mapping[tuple[int | None, str], str]
) -> dict[str, Any]:
    """The ``render`` arguments (image, and mask for segmentation) reproducing the rules agent's sample."""
    extra = annotation["context"]["sample"]["extra"]
    spatial = annotation["media_geometry"]["spatial"]
    source = decided.get((index, "label_source_image")) or decided.get((index, "read_target"))
    image: dict[str, Any] = {"index": index, "source": source or extra["source_file"]}
    if extra.get("source_key") is not None:
        image["key"] = extra["source_key"]
    if extra.get("record_index") is not None:
        image["item"] = int(extra["record_index"])
    slice_index = spatial.get("three_d", {}).get("slice_index")
    if spatial.get("three_d"):
        image["slice_index"] = int(slice_index)
    if spatial.get("video"):
        image["frame"] = int(spatial["video"]["frame_index"])
    mask: dict[str, Any] | None = None
    if annotation["media_geometry"]["media"]["task_type"] == "segmentation":
        mask_key = decided.get((index, "mask_key"))
        mask_source = str(image["source"]) if mask_key is not None else str(extra["mask_file"])
        mask = {"index": index, "source": mask_source, "kind": "mask"}
        if mask_key is not None:
            mask["key"] = mask_key
        # The rules agent slices a mask only when the mask itself is a volume (a 2D mask may annotate the
        # chosen plane of a volume), and never passes a frame to it.
        if slice_index is not None and _spatial_dims(root / mask_source, mask_key) >= 3:
            mask["slice_index"] = int(slice_index)
    return {"image": image, "mask": mask}


def _check_sample(
    toolbox: Any, scratch: Path, reference: Path, index: int, args: Mapping[str, Any]
) -> str | None:
    """Run the render calls through the real tools; say why the PNGs differ from the rules agent's, if so."""
    import numpy as np
    from PIL import Image

    problems = []
    for kind, folder in (("image", "images"), ("mask", "masks")):
        call = args[kind]
        if call is None:
            continue
        result = toolbox.run("render", json.dumps(call))
        if result.error is not None:
            problems.append(f"{kind}: render failed: {result.text}")
            continue
        with (
            Image.open(scratch / folder / f"{index}.png") as a,
            Image.open(reference / folder / f"{index}.png") as b,
        ):
            got, want = np.asarray(a), np.asarray(b)
        if got.shape != want.shape:
            problems.append(f"{kind}: shape {list(got.shape)} instead of {list(want.shape)}")
        elif not np.array_equal(got, want):
            values = sorted(int(v) for v in np.unique(got))[:8]
            expected = sorted(int(v) for v in np.unique(want))[:8]
            diff = int(np.abs(got.astype(np.int32) - want.astype(np.int32)).max())
            problems.append(f"{kind}: pixels differ (max |diff| {diff}; values {values} vs {expected})")
    return "; ".join(problems) or None


def replay_script(
    dataset_root: str | Path,
    *,
    work_dir: str | Path | None = None,
    usage: tuple[int, int] | None = None,
    check: bool = True,
) -> ReplayScript:
    """Build a fake-server script that makes the LiteLLM agent redo what the rules agent does on a dataset.

    Args:
        dataset_root: The dataset folder (holding ``data/`` and ``VLM/random.txt``).
        work_dir: Where the rules agent writes its reference candidate
            (``<work_dir>/agent1_data_organization`` and its trace); a fresh temporary folder when None (kept:
            it holds the reference outputs).
        usage: Fixed ``(prompt_tokens, completion_tokens)`` reported for every turn; None lets the server
            estimate them from the request size.
        check: Run every sample's render calls once through the real tools and record in
            ``mismatches`` the samples whose PNGs differ from the rules agent's.

    Returns:
        The script: per written sample four turns (``inspect``; ``render`` image [+ mask]; ``view_image``;
        ``write_annotation``), then ``write_data_meta`` and ``finish``.

    Raises:
        benchmark.errors.ManifestError: The folder is not a dataset (no readable ``VLM/random.txt``).
        RuntimeError: The rules agent could not standardize any sample.
    """
    from agents.base import Task
    from agents.rules import RulesAgent
    from benchmark.discover import Dataset

    dataset = Dataset.from_root(dataset_root)
    out = Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix="rules-replay-"))
    task = Task.from_dataset(dataset, out, temperature=0.0)
    candidate = _run_sync(RulesAgent().generate(task))
    if candidate.status != "ok" or candidate.trace_path is None:
        raise RuntimeError(f"{dataset.root}: the rules agent wrote nothing to replay ({candidate.reason})")
    reference = candidate.output_dir
    decided = _decisions(candidate.trace_path)
    toolbox = scratch = None
    if check:
        from agents.tools.sandbox import Sandbox
        from agents.tools.tools import ToolBox

        scratch = out / "replay_check"
        toolbox = ToolBox(task, Sandbox(task.root, scratch), vision=False)
    steps: list[Reply] = []
    sample_steps: dict[int, list[Reply]] = {}
    render_args: dict[int, dict[str, Any]] = {}
    skipped: list[int] = []
    mismatches: dict[int, str] = {}
    for entry in task.entries:
        ann_path = reference / "standardized_annotations" / f"{entry.index}.json"
        if not ann_path.is_file():
            skipped.append(entry.index)
            continue
        annotation = json.loads(ann_path.read_text(encoding="utf-8"))
        args = _render_args(task.root, entry.index, annotation, decided)
        render_args[entry.index] = args
        if toolbox is not None and scratch is not None:
            problem = _check_sample(toolbox, scratch, reference, entry.index, args)
            if problem is not None:
                log.info("replay of %s sample %d differs: %s", dataset.name, entry.index, problem)
                mismatches[entry.index] = problem
        i = entry.index
        renders = [tool_call("render", args["image"], f"s{i}_render_image")]
        if args["mask"] is not None:
            renders.append(tool_call("render", args["mask"], f"s{i}_render_mask"))
        sample_steps[i] = [
            assistant_turn(tool_call("inspect", {"path": args["image"]["source"]}, f"s{i}_inspect")),
            assistant_turn(*renders, content=f"Rendering sample {i}."),
            assistant_turn(tool_call("view_image", {"path": f"images/{i}.png"}, f"s{i}_view")),
            assistant_turn(
                tool_call("write_annotation", {"index": i, "annotation": annotation}, f"s{i}_write")
            ),
        ]
        steps += sample_steps[i]
    data_meta = json.loads((reference / "data_meta.json").read_text(encoding="utf-8"))
    finish = assistant_turn(tool_call("finish", {"summary": "replayed the rules baseline"}, "finish"))
    meta_steps = [
        assistant_turn(tool_call("write_data_meta", {"data_meta": data_meta}, "write_meta")),
        finish,
    ]
    steps += meta_steps
    plan_steps = [
        assistant_turn(tool_call("list_dir", {"path": "data"}, "plan_list")),
        assistant_turn(tool_call("write_plan", _plan_of(render_args, data_meta), "plan_write")),
    ]

    def fixed(replies: list[Reply]) -> list[Reply]:
        if usage is None:
            return replies
        return [Reply(content=r.content, tool_calls=r.tool_calls, usage=usage) for r in replies]

    return ReplayScript(
        fixed(steps),
        dataset=dataset.name,
        reference_dir=reference,
        render_args=render_args,
        skipped=skipped,
        mismatches=mismatches,
        sample_steps={i: fixed(r) for i, r in sample_steps.items()},
        plan_steps=fixed(plan_steps),
        meta_steps=fixed(meta_steps),
        sampler=AnnotationSampler(reference, task.root, dataset.name),
    )


def _plan_of(render_args: Mapping[int, Mapping[str, Any]], data_meta: Mapping[str, Any]) -> dict[str, Any]:
    """The rules agent's conventions as a ``write_plan`` call (what a model would have decided)."""
    first: Mapping[str, Any] = next(iter(render_args.values()), {"image": {}, "mask": None})
    image = {k: v for k, v in dict(first["image"] or {}).items() if k != "index"}
    return {
        "source_rule": f"as the rules baseline decides per sample; e.g. render {json.dumps(image)}",
        "label_source": "as the rules baseline decides per sample"
        + (", with a mask" if first["mask"] else ""),
        "slice_rule": "the rules baseline's slice or frame per sample",
        "class_table": {},
        "conventions": f"data_meta: {json.dumps(dict(data_meta), sort_keys=True)[:1500]}",
    }

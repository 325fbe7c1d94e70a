"""A sample whose mask (or boxes, or image) is not written is not a written sample, in every mode."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from agent_scripts import USAGE, annotation, make_agent, make_task, render_calls, standard_steps

from agents.tools.required_parts import missing_part
from testbed.fakeserver import FakeServer, Reply, TurnScript, tool_call
from testbed.fakeserver.schema_answers import SchemaAnswers
from testbed.fakeserver.script import Step


class _SegmentationPlan(SchemaAnswers):
    """Schema answers whose plan says 3D segmentation with three classes (the tiny dataset's truth)."""

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        step = super().__call__(request, serial)
        calls = step.tool_calls if isinstance(step, Reply) else ()
        asked = calls[0]["function"]["name"] if calls else None
        if isinstance(step, Reply) and asked == "write_plan":
            plan = json.loads(step.tool_calls[0]["function"]["arguments"])
            plan.update(task_type="segmentation", dimension="3D", classes=["background", "tumor", "core"])
            return Reply(tool_calls=(tool_call("write_plan", plan, call_id=f"call_{serial}"),))
        if asked == "choose_mask":
            # The mask beside the sample's image (the first choice would be case0's for every sample).
            text = json.dumps(request["messages"])
            case = "case1" if "data/case1/image.nii.gz" in text else "case0"
            chosen = {"mask_file": f"data/{case}/mask.nii.gz"}
            return Reply(tool_calls=(tool_call("choose_mask", chosen, call_id=f"call_{serial}"),))
        return step


def _break_mask(dataset: Path, index: int) -> None:
    """Replace one sample's mask by a label map no renderer accepts (non-integer ids: InvalidLabelMap)."""
    import nibabel as nib

    broken = np.full((20, 16, 8), 0.5, dtype=np.float32)
    image = nib.Nifti1Image(broken, affine=np.diag([0.8, 0.8, 2.0, 1.0]))  # type: ignore[no-untyped-call]
    nib.save(image, str(dataset / "data" / f"case{index}" / "mask.nii.gz"))


def test_a_guided_segmentation_sample_whose_mask_failed_makes_the_candidate_incomplete(
    seg_dataset: Path, tmp_path: Path, fake_server: Callable[..., FakeServer]
) -> None:
    _break_mask(seg_dataset, 1)
    server = fake_server(_SegmentationPlan("tool_choice"))
    agent = make_agent(server, mode="guided", vision=False)
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))

    # The annotation is on disk (its other fields may be right), but the sample is not counted as written.
    assert (candidate.output_dir / "standardized_annotations" / "1.json").is_file()
    assert not (candidate.output_dir / "masks" / "1.png").exists()
    assert candidate.status == "incomplete", candidate.reason
    assert candidate.missing == (1,)
    assert "InvalidLabelMap" in candidate.skipped[1] or "could not be rendered" in candidate.skipped[1]
    assert "required part" in (candidate.reason or "")
    assert candidate.to_dict()["skipped"] == {"1": candidate.skipped[1]}


def test_a_tools_mode_annotation_naming_a_mask_never_rendered_is_not_written(
    seg_dataset: Path, tmp_path: Path, fake_server: Callable[..., FakeServer]
) -> None:
    steps = standard_steps()
    # Sample 1: the image is rendered, the mask render is left out, the annotation still names masks/1.png.
    steps[5] = Reply(
        tool_calls=(
            render_calls(1)[0],
            tool_call("write_annotation", {"index": 1, "annotation": annotation(1)}, "c_ann1"),
        ),
        usage=USAGE,
    )
    server = fake_server(TurnScript(steps))
    agent = make_agent(server)
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))

    # The finish check told the model what is missing; the scripted model did nothing about it.
    told = json.dumps(server.chat_requests[-1]["messages"])
    assert "sample 1: the segmentation mask masks/1.png is not written" in told
    assert candidate.status != "ok"
    assert "1 of 2 samples missing: [1]" in (candidate.reason or "")
    assert candidate.skipped == {1: "the segmentation mask masks/1.png is not written"}


def test_missing_part_names_the_image_the_mask_and_the_boxes(tmp_path: Path) -> None:
    out = tmp_path / "agent1_data_organization"
    (out / "standardized_annotations").mkdir(parents=True)
    (out / "images").mkdir()

    def write(i: int, tasks: dict[str, object], image: bool = True) -> None:
        doc = {"record": {"image_path": f"images/{i}.png"}, "tasks": tasks}
        (out / "standardized_annotations" / f"{i}.json").write_text(json.dumps(doc))
        if image:
            (out / "images" / f"{i}.png").write_bytes(b"png")

    write(0, {"classification": {"label": 0}})
    write(1, {"classification": {"label": 0}}, image=False)
    write(2, {"segmentation": {"classes": {"0": "background"}}})
    write(3, {"detection": {"class_names": {"1": "a"}, "boxes2d": []}})
    write(4, {"detection": {"class_names": {"1": "a"}}})
    write(5, {"segmentation": {"coco_2d": {"mask_path": "masks/5.png"}}})
    (out / "masks").mkdir()
    (out / "masks" / "5.png").write_bytes(b"png")

    assert missing_part(out, 0) is None
    assert missing_part(out, 1) == "the image images/1.png is not written"
    assert missing_part(out, 2) == "the segmentation names no mask (masks/2.png is not written)"
    assert missing_part(out, 3) is None  # an image with no object is an answer
    assert missing_part(out, 4) == "the detection names no boxes"
    assert missing_part(out, 5) is None
    assert missing_part(out, 6) == "no annotation"

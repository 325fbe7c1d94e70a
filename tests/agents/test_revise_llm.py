"""S1 and S2 with a scripted model through the real LiteLLM path: the model reads its own output, a flagged
slice is fixed without tearing the sample, and edits outside the whitelist are refused and recorded."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from agent_scripts import DATA_META, annotation, make_agent, make_task
from PIL import Image

import medio
from agents.base import Limits, ManifestEntry, Task
from agents.instructions import BUNDLED
from strategies import ProfileValidator, strategies
from strategies.mechanics import read_annotation
from testbed.fakeserver import FakeServer, Reply, Step, TurnScript, assistant_turn, tool_call


class PhaseScript:
    """Answer a generate conversation with one list of turns and a revise conversation with another."""

    def __init__(self, generate: list[Any], revise: list[Any]) -> None:
        self.generate, self.revise = TurnScript(generate), TurnScript(revise)

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        revising = any(
            m.get("role") == "user" and "Feedback:" in str(m.get("content"))
            for m in request.get("messages", [])
        )
        return (self.revise if revising else self.generate)(request, serial)


def _run(name: str, task: Task, server: FakeServer, profile: str = "evidence", **options: Any):
    agent = make_agent(server)
    return asyncio.run(strategies.get(name)(**options)(task, agent, ProfileValidator(profile)))


# The benchmark's slice rule (largest-foreground slice) is a convention, checked by this profile only.
CONVENTIONS = "evidence_conventions"


# -- S2 on a 3D segmentation dataset whose sample 0 was rendered on the wrong slice -----------------------


def _render(index: int, slice_index: int, *, image: bool = True, mask: bool = True) -> list[dict[str, Any]]:
    source, labels = f"data/case{index}/image.nii.gz", f"data/case{index}/mask.nii.gz"
    calls = []
    if image:
        calls.append(tool_call("render", {"index": index, "source": source, "slice_index": slice_index}))
    if mask:
        args = {"index": index, "source": labels, "kind": "mask", "slice_index": slice_index}
        calls.append(tool_call("render", args))
    return calls


def _wrong_slice_generation() -> list[Reply]:
    """Sample 0 on slice 6 (empty mask; the validator's plane check flags it), sample 1 right."""
    wrong = annotation(0)
    wrong["media_geometry"]["spatial"]["three_d"]["slice_index"] = 6
    return [
        assistant_turn(*_render(0, 6), *_render(1, 4)),
        assistant_turn(
            tool_call("write_annotation", {"index": 0, "annotation": wrong}),
            tool_call("write_annotation", {"index": 1, "annotation": annotation(1)}),
        ),
        assistant_turn(tool_call("write_data_meta", {"data_meta": DATA_META})),
        assistant_turn(tool_call("finish", {"summary": "done"})),
    ]


def _expected(root: Path, index: int, slice_index: int) -> tuple[np.ndarray, np.ndarray]:
    image = medio.render(medio.read(root / f"data/case{index}/image.nii.gz"), slice_index=slice_index)
    mask = medio.render(
        medio.read(root / f"data/case{index}/mask.nii.gz"), slice_index=slice_index, label=True
    )
    return image.pixels, mask.pixels


def _pixels(path: Path) -> np.ndarray:
    with Image.open(path) as img:
        return np.asarray(img)


def _slice_fix(*, image: bool = True) -> list[Reply]:
    edit = {
        "path": "standardized_annotations/0.json",
        "set": {"media_geometry.spatial.three_d.slice_index": 3},
    }
    return [
        assistant_turn(tool_call("read_output", {"path": "standardized_annotations/0.json"})),
        assistant_turn(*_render(0, 3, image=image), tool_call("edit_fields", edit)),
        assistant_turn(tool_call("finish", {"summary": "slice fixed"})),
    ]


def test_s2_fixes_a_flagged_slice_moving_image_mask_and_json_together(
    seg_dataset: Path, tmp_path: Path, fake_server
) -> None:
    server = fake_server(PhaseScript(_wrong_slice_generation(), _slice_fix()))
    task = make_task(seg_dataset, tmp_path / "selected")
    result = _run("s2", task, server, CONVENTIONS)

    base = result.candidates[0].output_dir
    out = task.output_dir
    right_image, right_mask = _expected(seg_dataset, 0, 3)
    wrong_image, _ = _expected(seg_dataset, 0, 6)
    assert np.array_equal(_pixels(base / "images/0.png"), wrong_image)  # the generation was wrong
    assert np.array_equal(_pixels(out / "images/0.png"), right_image)  # the image moved to slice 3 ...
    assert np.array_equal(_pixels(out / "masks/0.png"), right_mask)  # ... with its mask ...
    assert set(np.unique(_pixels(out / "masks/0.png"))) == {0, 1, 2}
    ann = read_annotation(out, 0)
    assert ann is not None
    assert ann["media_geometry"]["spatial"]["three_d"]["slice_index"] == 3  # ... and its JSON
    assert not any("rejected" in n or "reverted" in n for n in result.notes), result.notes
    # The revise prompt carried the flagged item with the field's current value.
    revise_prompt = next(
        m["content"]
        for r in server.chat_requests
        for m in r["messages"]
        if m["role"] == "user" and "Feedback:" in str(m["content"])
    )
    assert "sample 0 · media_geometry.spatial.three_d.slice_index" in revise_prompt
    assert "current value: 6" in revise_prompt
    assert BUNDLED["s2"] in revise_prompt


def test_s2_rejects_a_slice_fix_that_leaves_the_image_behind(
    seg_dataset: Path, tmp_path: Path, fake_server
) -> None:
    # The old tear: JSON and mask move to slice 3, the image stays on slice 6. The framework refuses it whole.
    server = fake_server(PhaseScript(_wrong_slice_generation(), _slice_fix(image=False)))
    task = make_task(seg_dataset, tmp_path / "selected")
    result = _run("s2", task, server, CONVENTIONS)

    base, out = result.candidates[0].output_dir, task.output_dir
    revised = result.candidates[1].output_dir
    assert read_annotation(revised, 0)["media_geometry"]["spatial"]["three_d"]["slice_index"] == 3  # type: ignore[index]
    assert any("sample 0: rejected a partial move" in n for n in result.notes), result.notes
    for name in ("images/0.png", "masks/0.png", "standardized_annotations/0.json"):
        assert (out / name).read_bytes() == (base / name).read_bytes(), name


def test_s2_refuses_edits_outside_the_flagged_whitelisted_fields_and_records_them(
    seg_dataset: Path, tmp_path: Path, fake_server
) -> None:
    rewritten = annotation(0)  # the whole object: the slice fix plus a field no check flagged
    rewritten["media_geometry"]["spatial"]["three_d"]["slice_index"] = 3
    rewritten["context"]["sample"]["anatomical_structure"] = ["Brain"]
    sneaky = [
        assistant_turn(
            *_render(0, 3),
            tool_call("write_annotation", {"index": 0, "annotation": rewritten}),
            # edit_fields refuses a field outside the revision's editable ones at once ...
            tool_call(
                "edit_fields",
                {
                    "path": "standardized_annotations/0.json",
                    "set": {"context.sample.anatomical_structure": []},
                },
            ),
            # ... but modality is whitelisted in general: only the framework knows nothing flagged sample 1.
            tool_call(
                "edit_fields",
                {"path": "standardized_annotations/1.json", "set": {"context.sample.modality_primary": "MR"}},
            ),
        ),
        assistant_turn(tool_call("finish", {"summary": "done"})),
    ]
    server = fake_server(PhaseScript(_wrong_slice_generation(), sneaky))
    task = make_task(seg_dataset, tmp_path / "selected")
    result = _run("s2", task, server, CONVENTIONS)

    out, base = task.output_dir, result.candidates[0].output_dir
    ann0, ann1 = read_annotation(out, 0), read_annotation(out, 1)
    assert ann0 is not None and ann1 is not None
    assert ann0["media_geometry"]["spatial"]["three_d"]["slice_index"] == 3
    assert ann0["context"]["sample"]["anatomical_structure"] == ["Kidney (Abdomen)"]
    assert ann1 == read_annotation(base, 1)
    assert "sample 0: reverted context.sample.anatomical_structure: not in the whitelist" in result.notes
    assert "sample 1: reverted context.sample.modality_primary: not in the whitelist" in result.notes
    # The edit refused at once is a tool error in the revise trace; the reverts are in the result's reason.
    trace = [
        json.loads(line) for line in (result.candidates[1].trace_path or Path()).read_text().splitlines()
    ]
    refused = [e for e in trace if e.get("event") == "tool" and e.get("error") == "sandbox"]
    assert len(refused) == 1
    assert "not editable in this revision: context.sample.anatomical_structure" in refused[0]["result"]
    assert "2 revert(s)" in result.decisions[0].reason


# -- S1 on a classification dataset whose sample 1 got the wrong label -----------------------------------


@pytest.fixture
def cls_root(tmp_path: Path) -> Path:
    """Two PNGs in class-named folders (benign/, malignant/)."""
    root = tmp_path / "tiny_cls"
    rng = np.random.default_rng(1)
    for name in ("benign/img0.png", "malignant/img1.png"):
        (root / "data" / name).parent.mkdir(parents=True)
        Image.fromarray(rng.integers(0, 255, size=(12, 10)).astype(np.uint8)).save(root / "data" / name)
    (root / "VLM").mkdir(parents=True)
    (root / "VLM" / "random.txt").write_text(
        "0 /x/tiny_cls/data/benign/img0.png\n1 /x/tiny_cls/data/malignant/img1.png\n", encoding="utf-8"
    )
    return root


CLASSES = {"0": "benign", "1": "malignant"}


def _cls_annotation(index: int, source: str, label: int) -> dict[str, Any]:
    ann = copy.deepcopy(annotation(index))
    ann["record"]["dataset_name"] = "tiny_cls"
    extra = {"source_file": source, "original_filename": source.rsplit("/", 1)[-1], "map_type": "label"}
    ann["context"]["sample"]["extra"] = extra | {"label_text": CLASSES[str(label)]}
    ann["media_geometry"]["media"] = {"task_type": "classification", "dimension": "2D"}
    ann["media_geometry"]["spatial"] = {"common": {"pixel_size_px": [10, 12]}, "three_d": {}, "video": {}}
    ann["tasks"] = {
        "classification": {
            "schema_variant": "multiclass",
            "class_names": CLASSES,
            "label": label,
            "label_name": CLASSES[str(label)],
        },
        "segmentation": {},
        "detection": {},
    }
    return ann


SOURCES = {0: "data/benign/img0.png", 1: "data/malignant/img1.png"}


def _cls_generation() -> list[Reply]:
    writes = [
        tool_call("render", {"index": i, "source": s}) for i, s in SOURCES.items()
    ] + [  # the label of sample 1 is wrong: its folder says malignant
        tool_call("write_annotation", {"index": i, "annotation": _cls_annotation(i, s, 0)})
        for i, s in SOURCES.items()
    ]
    meta = DATA_META | {"dataset_name": "tiny_cls", "task_type": ["classification"]}
    return [
        assistant_turn(*writes),
        assistant_turn(tool_call("write_data_meta", {"data_meta": meta})),
        assistant_turn(tool_call("finish", {})),
    ]


def _review_from_what_was_read(request: Mapping[str, Any]) -> Reply:
    """Turn 2 of the scripted review: decide from the read_output results in the request itself."""
    edits = []
    for message in request["messages"]:
        if message.get("role") != "tool" or '"record"' not in str(message.get("content")):
            continue
        ann = json.loads(message["content"])
        folder = ann["context"]["sample"]["extra"]["source_file"].split("/")[1]
        task = ann["tasks"]["classification"]
        if task["label_name"] != folder:
            label = next(int(k) for k, v in task["class_names"].items() if v == folder)
            index = next(
                i for i, s in SOURCES.items() if s == ann["context"]["sample"]["extra"]["source_file"]
            )
            changes = {
                "tasks.classification.label": label,
                "tasks.classification.label_name": folder,
                "context.sample.extra.label_text": folder,
            }
            path = f"standardized_annotations/{index}.json"
            edits.append(tool_call("edit_fields", {"path": path, "set": changes}))
    return assistant_turn(*edits, tool_call("finish", {"summary": f"{len(edits)} fix(es)"}))


def _review() -> list[Any]:
    return [
        assistant_turn(tool_call("list_output", {"path": "standardized_annotations"})),
        assistant_turn(
            *(tool_call("read_output", {"path": f"standardized_annotations/{i}.json"}) for i in SOURCES)
        ),
        _review_from_what_was_read,
    ]


def test_s1_reads_its_output_and_corrects_a_wrong_label(cls_root: Path, tmp_path: Path, fake_server) -> None:
    server = fake_server(PhaseScript(_cls_generation(), _review()))
    entries = tuple(ManifestEntry(i, s) for i, s in SOURCES.items())
    task = Task(
        root=cls_root,
        name="tiny_cls",
        entries=entries,
        out_dir=tmp_path / "selected",
        limits=Limits(max_turns=20, max_tool_calls=60, max_tokens=1_000_000),
    )
    result = _run("s1", task, server, rounds=3)

    assert read_annotation(result.candidates[0].output_dir, 1)["tasks"]["classification"]["label"] == 0  # type: ignore[index]
    fixed = read_annotation(task.output_dir, 1)
    assert fixed is not None and fixed["tasks"]["classification"]["label"] == 1
    assert fixed["tasks"]["classification"]["label_name"] == "malignant"
    assert read_annotation(task.output_dir, 0)["tasks"]["classification"]["label"] == 0  # type: ignore[index]
    # Round 1 fixed the label; round 2 read the corrected output, changed nothing, and ended the refinement.
    assert len(result.candidates) == 3
    assert any("round 2 changed nothing" in n for n in result.notes), result.notes
    # The review instruction is the S1 text, and the model saw what it had written (label 0 for sample 1).
    revise_requests = [
        r for r in server.chat_requests if any("Feedback:" in str(m.get("content")) for m in r["messages"])
    ]
    assert any(BUNDLED["s1"] in str(m.get("content")) for m in revise_requests[0]["messages"])
    read_back = [m["content"] for r in revise_requests for m in r["messages"] if m["role"] == "tool"]
    assert any('"label": 0' in c and "malignant/img1.png" in c for c in read_back)

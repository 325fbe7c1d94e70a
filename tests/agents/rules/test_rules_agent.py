"""The rules agent end to end on small hand-made datasets: outputs, errors, trace, usage, revise, GT
isolation."""

from __future__ import annotations

import asyncio
import builtins
import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from agents.base import Agent, Feedback, ManifestEntry, Task
from agents.rules import RulesAgent

LABELS = ["normal", "pneumonia", "normal", "pneumonia"]


def _dataset(root: Path, *, corrupt: int | None = None) -> Task:
    """Four chest PNGs labelled through a CSV, a README, and a ground-truth file no agent may read."""
    images = root / "data" / "images"
    images.mkdir(parents=True)
    rows = ["image_id,patient,finding,age"]
    lines = []
    for i, label in enumerate(LABELS):
        name = f"cxr_{100 + i}.png"
        pixels = (np.arange(48 * 40).reshape(48, 40) % 251).astype(np.uint8)
        Image.fromarray(pixels).save(images / name)
        if i == corrupt:
            (images / name).write_bytes(b"not a png")
        rows.append(f"cxr_{100 + i},P{i},{label},{30 + i}")
        lines.append(f"{i} /authors/root/chest-xray-demo/data/images/{name}")
    (root / "data" / "labels.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (root / "data" / "README.md").write_text("Chest X-ray radiographs.\n", encoding="utf-8")
    vlm = root / "VLM"
    vlm.mkdir()
    (vlm / "random.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (vlm / "ground_truth_demo.json").write_text("{}", encoding="utf-8")
    (vlm / "gt_geometry").mkdir()
    entries = tuple(ManifestEntry(i, f"data/images/cxr_{100 + i}.png") for i in range(len(LABELS)))
    return Task(root=root, name=root.name, entries=entries, out_dir=vlm / "rules")


def forbid_ground_truth(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, make every open of VLM/ground_truth* or VLM/gt_geometry fail; returns the attempts."""
    attempts: list[str] = []

    def guard(path: Any) -> None:
        text = os.fspath(path) if isinstance(path, str | bytes | os.PathLike) else ""
        text = text.decode() if isinstance(text, bytes) else text
        if "ground_truth" in text or "gt_geometry" in text:
            attempts.append(text)
            raise PermissionError(f"ground truth is off limits: {text}")

    real_open, real_io_open, real_os_open = builtins.open, io.open, os.open

    def fake_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        guard(file)
        return real_open(file, *args, **kwargs)

    def fake_io_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        guard(file)
        return real_io_open(file, *args, **kwargs)

    def fake_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        guard(path)
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_io_open)
    monkeypatch.setattr(os, "open", fake_os_open)
    return attempts


def test_rules_agent_satisfies_the_agent_protocol() -> None:
    assert isinstance(RulesAgent(), Agent)


def test_generate_writes_every_sample_with_labels_from_the_joined_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = _dataset(tmp_path / "chest-xray-demo")
    attempts = forbid_ground_truth(monkeypatch)
    candidate = asyncio.run(RulesAgent().generate(task))
    assert candidate.ok and candidate.agent == "rules"
    out = candidate.output_dir
    for i, label in enumerate(LABELS):
        ann = json.loads((out / "standardized_annotations" / f"{i}.json").read_text())
        assert (out / "images" / f"{i}.png").is_file()
        cls = ann["tasks"]["classification"]
        assert cls["label_name"] == label and cls["class_names"] == {"0": "normal", "1": "pneumonia"}
        assert ann["context"]["sample"]["extra"]["source_file"] == f"data/images/cxr_{100 + i}.png"
        assert ann["context"]["sample"]["sex"] == "unknown" and ann["record"]["schema_version"] == "1.0.1"
        assert ann["context"]["sample"]["modality_primary"] == "X-ray"
    meta = json.loads((out / "data_meta.json").read_text())
    assert meta["data_volume"]["total"] == 4 and meta["task_type"] == ["classification"]
    assert attempts == []


def test_usage_is_zero_tokens_and_calls_with_real_wall_time(tmp_path: Path) -> None:
    candidate = asyncio.run(RulesAgent().generate(_dataset(tmp_path / "chest-xray-demo")))
    usage = candidate.usage
    assert usage.total_tokens == 0 and usage.cost_usd == 0.0 and usage.calls == 0
    assert usage.wall_s > 0


def test_an_unreadable_sample_is_recorded_and_skipped_while_the_rest_is_written(tmp_path: Path) -> None:
    candidate = asyncio.run(RulesAgent().generate(_dataset(tmp_path / "chest-xray-demo", corrupt=1)))
    assert candidate.ok
    written = sorted(p.stem for p in (candidate.output_dir / "standardized_annotations").glob("*.json"))
    assert written == ["0", "2", "3"]
    events = [json.loads(line) for line in candidate.trace_path.read_text().splitlines()]
    errors = [e for e in events if e["event"] == "sample_error"]
    assert [e["sample"] for e in errors] == [1] and "cxr_101.png" in errors[0]["error"]
    assert json.loads((candidate.output_dir / "data_meta.json").read_text())["data_volume"]["total"] == 3


def test_the_trace_records_every_decision_point(tmp_path: Path) -> None:
    candidate = asyncio.run(RulesAgent().generate(_dataset(tmp_path / "chest-xray-demo")))
    events = [json.loads(line) for line in candidate.trace_path.read_text().splitlines()]
    points = {e["point"] for e in events if e["event"] == "decision"}
    assert {"task_type", "label_source", "modality", "subject_id"} <= points
    assert events[0]["event"] == "start" and events[-1]["event"] == "end"


def test_temperature_zero_is_deterministic_across_seeds(tmp_path: Path) -> None:
    task = _dataset(tmp_path / "chest-xray-demo")
    a = asyncio.run(RulesAgent().generate(task.for_candidate(0, tmp_path / "a", seed=1)))
    b = asyncio.run(RulesAgent().generate(task.for_candidate(1, tmp_path / "b", seed=2)))
    for i in range(len(LABELS)):
        rel = Path("standardized_annotations") / f"{i}.json"
        assert (a.output_dir / rel).read_text() == (b.output_dir / rel).read_text()


def test_revise_rewrites_only_the_named_field_of_the_named_sample(tmp_path: Path) -> None:
    task = _dataset(tmp_path / "chest-xray-demo")
    first = asyncio.run(RulesAgent().generate(task))
    path = first.output_dir / "standardized_annotations" / "2.json"
    broken = json.loads(path.read_text())
    broken["context"]["sample"]["modality_primary"] = "Dermoscopy"
    broken["context"]["sample"]["site_id"] = "kept"
    broken["tasks"]["classification"]["label_name"] = "wrong"
    path.write_text(json.dumps(broken))
    feedback = Feedback("fix the modality", items=((2, "context.sample.modality_primary", "disagrees"),))
    revised_task = task.for_candidate(0, tmp_path / "revised", seed=0)
    revised = asyncio.run(
        RulesAgent().revise(revised_task, first, feedback, ["context.sample.modality_primary"])
    )
    after = json.loads((revised.output_dir / "standardized_annotations" / "2.json").read_text())
    assert after["context"]["sample"]["modality_primary"] == "X-ray"
    assert after["context"]["sample"]["site_id"] == "kept"  # not named: untouched
    assert after["tasks"]["classification"]["label_name"] == "wrong"  # not editable: untouched
    assert revised.usage.calls == 0


def _s1(task: Task) -> Any:
    from strategies import ProfileValidator, strategies

    return asyncio.run(strategies.get("s1")(rounds=2)(task, RulesAgent(), ProfileValidator("evidence")))


def _annotations(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((folder / "standardized_annotations").glob("*.json"))}


def test_s1_self_check_reverts_what_the_agent_sampled_below_its_own_best_and_says_when_nothing_changes(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    base = _dataset(tmp_path / "chest-xray-demo")
    best = asyncio.run(RulesAgent().generate(base.for_candidate(0, tmp_path / "t0")))
    # Temperature 0: every decision is already the agent's top-ranked one, so its review changes nothing.
    cold = _s1(replace(base, out_dir=tmp_path / "cold"))
    assert any("round 1 changed nothing" in n and "rules" in n for n in cold.notes), cold.notes
    assert _annotations(cold.output_dir) == _annotations(best.output_dir)
    # A hot candidate that sampled below the top: its review re-decides exactly those choices.
    hot = None
    for seed in range(20):
        task = replace(base, out_dir=tmp_path / f"hot{seed}", temperature=3.0, seed=seed)
        result = _s1(task)
        generated = result.candidates[0]
        if _annotations(generated.output_dir) != _annotations(best.output_dir):
            hot = result
            break
    assert hot is not None, "no seed sampled a lower-ranked hypothesis"
    trace = [json.loads(line) for line in (hot.candidates[0].trace_path or Path()).read_text().splitlines()]
    assert any(e.get("event") == "decision" and e.get("rank", 0) > 0 for e in trace)
    assert _annotations(hot.output_dir) == _annotations(best.output_dir)
    assert any("round 2 changed nothing" in n for n in hot.notes), hot.notes


def test_a_skipped_sample_keeps_its_one_line_reason_on_the_candidate_and_in_the_decision(
    tmp_path: Path,
) -> None:
    from strategies.context import candidate_from_marker
    from strategies.mechanics import single_result

    task = _dataset(tmp_path / "chest-xray-demo", corrupt=2)
    candidate = asyncio.run(RulesAgent().generate(task))
    assert list(candidate.skipped) == [2]
    why = candidate.skipped[2]
    assert "cxr_102.png" in why and "\n" not in why
    decisions = single_result("s0", task, [candidate], 0, None, "s0: the only candidate").decisions
    assert decisions[2].candidate is None and decisions[2].reason == f"no output for this sample: {why}"
    assert decisions[0].reason == "s0: the only candidate"
    # The reason survives a resume, which rebuilds candidates from their done-marker.
    marker = tmp_path / "marker"
    (marker / "agent1_data_organization").mkdir(parents=True)
    (marker / "candidate.json").write_text(json.dumps(candidate.to_dict()))
    rebuilt = candidate_from_marker(marker)
    assert rebuilt is not None and rebuilt.skipped == {2: why}


def test_an_undecodable_dicom_sample_fails_in_one_line_and_the_others_are_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging
    import shutil

    from pydicom.data import get_testdata_file

    names = ["CT_small.dcm", "JPGExtended.dcm", "MR_small.dcm"]  # 12-bit JPEG Extended: no decoder here
    root = tmp_path / "ct-mixed"
    (root / "data").mkdir(parents=True)
    lines = []
    for i, name in enumerate(names):
        source = get_testdata_file(name, download=False)
        if source is None:
            pytest.skip(f"pydicom does not ship {name}")
        shutil.copy(str(source), root / "data" / f"img{i}.dcm")
        lines.append(f"{i} data/img{i}.dcm")
    (root / "VLM").mkdir()
    (root / "VLM" / "random.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    entries = tuple(ManifestEntry(i, f"data/img{i}.dcm") for i in range(len(names)))
    task = Task(root=root, name=root.name, entries=entries, out_dir=root / "VLM" / "rules")
    with caplog.at_level(logging.DEBUG):
        candidate = asyncio.run(RulesAgent().generate(task))
    # pydicom logs each failed decoder plugin with a traceback; nothing of that may reach the log as an error.
    assert not [r for r in caplog.records if r.exc_info and r.levelno >= logging.INFO]
    assert candidate.ok and list(candidate.skipped) == [1]
    assert "JPEG Extended" in candidate.skipped[1] and "\n" not in candidate.skipped[1]
    out = candidate.output_dir
    assert sorted(p.name for p in (out / "images").iterdir()) == ["0.png", "2.png"]
    assert sorted(p.stem for p in (out / "standardized_annotations").glob("*.json")) == ["0", "2"]

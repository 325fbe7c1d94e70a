"""Issue 43, item 3: no correct output lost to the official scorer's fixed extension list.

Every writer (the rules agent and its revision, the LiteLLM tool mode with ``write_annotation`` and
``edit_fields``, the guided mode, the script mode, S2's autofix) records ``extra.source_stem`` for a source
whose extension the scorer keeps in its stem, so outputs that name the right file exactly as the standard
asks pass the official source gate; sources whose extension the scorer strips are left untouched. The
LiteLLM writers run through the real LiteLLM path (the fake server on loopback)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import stem_quirk as sq
from agent_scripts import make_agent

from agents.base import Limits, ManifestEntry, Task
from agents.rules.revise import merge_fields
from agents.rules.writer import SampleResult, build_annotation
from benchmark.fields import SOURCE_FILE
from testbed.fakeserver import FakeServer, TurnScript, assistant_turn, tool_call

ALL = sorted(sq.SOURCES)


def _task(root: Path, out: Path) -> Task:
    entries = tuple(ManifestEntry(i, rel) for i, rel in sq.SOURCES.items())
    limits = Limits(max_turns=30, max_tool_calls=60, max_tokens=10**7)
    return Task(root=root, name=sq.NAME, entries=entries, out_dir=out, limits=limits)


def _written(out: Path) -> dict[int, dict[str, Any]]:
    folder = out / "standardized_annotations"
    return {int(p.stem): json.loads(p.read_text(encoding="utf-8")) for p in folder.glob("*.json")}


def _stems(annotations: dict[int, dict[str, Any]]) -> dict[int, Any]:
    return {i: a["context"]["sample"]["extra"].get("source_stem") for i, a in sorted(annotations.items())}


def _tool_results(server: FakeServer) -> dict[str, str]:
    out: dict[str, str] = {}
    for request in server.chat_requests:
        for message in request["messages"]:
            if message.get("role") == "tool":
                out[message["tool_call_id"]] = message["content"]
    return out


def _expected_stems(**overrides: str) -> dict[int, str | None]:
    stems: dict[int, str | None] = {i: sq.STEMS[i] if i in sq.UNSTRIPPED else None for i in ALL}
    stems.update({int(k.removeprefix("i")): v for k, v in overrides.items()})
    return stems


def test_outputs_exactly_as_the_standard_asks_fail_the_official_gate_without_a_stem(tmp_path: Path) -> None:
    # The quirk itself, measured on our official scorer: only the control (.png) passes.
    score = sq.official(sq.write_folder(tmp_path / "out", {i: sq.annotation(i) for i in ALL}))
    assert sq.source_scores(score) == {i: 0.0 if i in sq.UNSTRIPPED else 1.0 for i in ALL}
    assert score.metrics["E2E"] == pytest.approx(1 / 6)


def _rules_result(index: int) -> SampleResult:
    return SampleResult(
        index=index,
        dataset_name=sq.NAME,
        source_file=sq.SOURCES[index],
        subject_id="NA",
        modality="CT",
        anatomy=["NA"],
        task="classification",
        dimension="2D",
        image_size=(8, 8),
        classes={"0": "normal", "1": "lesion"},
        label=1,
    )


def test_the_rules_writer_records_the_stem_and_the_official_scorer_matches(tmp_path: Path) -> None:
    annotations = {i: build_annotation(_rules_result(i)) for i in ALL}
    assert _stems(annotations) == _expected_stems()
    score = sq.official(sq.write_folder(tmp_path / "out", annotations))
    assert sq.source_scores(score) == dict.fromkeys(ALL, 1.0)
    assert score.metrics["E2E"] == pytest.approx(1.0)


def test_a_rules_revision_of_the_source_brings_its_stem() -> None:
    old, new = build_annotation(_rules_result(0)), build_annotation(_rules_result(1))
    merged = merge_fields(old, new, [SOURCE_FILE])
    extra = merged["context"]["sample"]["extra"]
    assert extra["source_file"] == sq.SOURCES[1] and extra["source_stem"] == "case_2"
    # ... and a revision to a source the scorer strips drops the stem of the old one.
    merged = merge_fields(old, build_annotation(_rules_result(5)), [SOURCE_FILE])
    assert "source_stem" not in merged["context"]["sample"]["extra"]


def _tool_mode_turns() -> list[Any]:
    writes = [
        tool_call("write_annotation", {"index": i, "annotation": sq.annotation(i)}, f"w{i}")
        for i in (0, 2, 5)
    ]
    # Index 1 first names index 0's file, then the model corrects the source with edit_fields.
    wrong_file = sq.annotation(1)
    wrong_file["context"]["sample"]["extra"] = copy.deepcopy(sq.annotation(0)["context"]["sample"]["extra"])
    edit = {
        "path": "standardized_annotations/1.json",
        "set": {
            "context.sample.extra.source_file": sq.SOURCES[1],
            "context.sample.extra.original_filename": "case_2.dcm.gz",
        },
    }
    own_wrong = sq.annotation(3, source_stem="slide")  # names neither the file nor a folder on its path
    own_right = sq.annotation(4, source_stem="CT_5")  # the model's own stem, in its own case: kept
    return [
        assistant_turn(*writes),
        assistant_turn(tool_call("write_annotation", {"index": 1, "annotation": wrong_file}, "w1")),
        assistant_turn(tool_call("edit_fields", edit, "e1")),
        assistant_turn(
            tool_call("write_annotation", {"index": 3, "annotation": own_wrong}, "w3"),
            tool_call("write_annotation", {"index": 4, "annotation": own_right}, "w4"),
        ),
        assistant_turn(tool_call("write_data_meta", {"data_meta": sq.DATA_META}, "meta")),
        assistant_turn(tool_call("finish", {"summary": "done"}, "fin")),
    ]


def test_the_tool_mode_records_the_stem_through_litellm(
    tmp_path: Path, fake_server: Callable[..., FakeServer]
) -> None:
    root = sq.make_dataset(tmp_path / sq.NAME)
    server = fake_server(TurnScript(_tool_mode_turns()))
    candidate = asyncio.run(make_agent(server).generate(_task(root, tmp_path / "c0")))
    # The scripted model renders no image: its annotations are not written samples (required_parts).
    assert candidate.skipped[0] == "the image images/0.png is not written"

    written = _written(candidate.output_dir)
    assert _stems(written) == _expected_stems(i4="CT_5")
    assert written[5] == sq.annotation(5)  # the control is written byte for byte as sent
    results = _tool_results(server)
    assert json.loads(results["w0"])["recorded"] == [
        "extra.source_stem set to 'P001': source_file 'data/scans/P001.dat' ends in '.dat', an extension the "
        "official scorer does not strip, so it cannot match the sample by its file name"
    ]
    assert "recorded" not in json.loads(results["w5"]) and "recorded" not in json.loads(results["w4"])
    assert "'slide' names neither that file" in json.loads(results["w3"])["recorded"][0]
    assert "'case_2'" in json.loads(results["e1"])["recorded"][0]

    sq.write_images(candidate.output_dir)  # the scripted model rendered nothing
    score = sq.official(candidate.output_dir)
    assert sq.source_scores(score) == dict.fromkeys(ALL, 1.0)
    assert score.metrics["E2E"] == pytest.approx(1.0)


def _script(annotations: dict[int, dict[str, Any]]) -> str:
    return f"""\
import json, os
os.makedirs("output/standardized_annotations", exist_ok=True)
for index, doc in json.loads({json.dumps({str(i): a for i, a in annotations.items()})!r}).items():
    with open(f"output/standardized_annotations/{{index}}.json", "w") as handle:
        json.dump(doc, handle)
with open("output/data_meta.json", "w") as handle:
    json.dump(json.loads({json.dumps(sq.DATA_META)!r}), handle)
from PIL import Image
os.makedirs("output/images", exist_ok=True)
for index in {sorted(annotations)!r}:
    Image.new("L", (8, 8)).save(f"output/images/{{index}}.png")
"""


def test_the_script_mode_records_the_stem_in_what_the_script_wrote(
    tmp_path: Path, fake_server: Callable[..., FakeServer]
) -> None:
    root = sq.make_dataset(tmp_path / sq.NAME)
    code = _script({i: sq.annotation(i) for i in ALL})
    turns = [
        assistant_turn(tool_call("run_python", {"code": code}, "convert")),
        assistant_turn(tool_call("finish", {}, "fin")),
    ]
    server = fake_server(TurnScript(turns))
    candidate = asyncio.run(make_agent(server, mode="script").generate(_task(root, tmp_path / "c0")))
    assert candidate.status == "ok", candidate.reason

    written = _written(candidate.output_dir)
    assert _stems(written) == _expected_stems()
    run = json.loads(_tool_results(server)["convert"])
    assert run["recorded"]["samples"] == len(sq.UNSTRIPPED)
    assert run["recorded"]["first"].startswith("extra.source_stem set to 'P001'")
    # The validator's feedback read the fixed files: no sample is told to add a stem.
    assert not [p for p in run["validation"]["problems"] if p["check"] == "source_stem_matchable"]
    sq.write_images(candidate.output_dir)
    assert sq.source_scores(sq.official(candidate.output_dir)) == dict.fromkeys(ALL, 1.0)


def _nrrd_dataset(root: Path) -> tuple[Path, dict[int, str]]:
    import SimpleITK as sitk

    sources = {0: "data/vols/ct_0.nrrd", 1: "data/vols/ct_1.nrrd"}
    rng = np.random.default_rng(1)
    for rel in sources.values():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        sitk.WriteImage(
            sitk.GetImageFromArray(rng.integers(0, 900, (4, 12, 10)).astype(np.int16)), root / rel
        )
    (root / "VLM").mkdir(parents=True)
    (root / "VLM" / "random.txt").write_text(
        "".join(f"{i} /authors/tiny_nrrd/{rel}\n" for i, rel in sources.items()), encoding="utf-8"
    )
    return root, sources


def test_the_guided_mode_records_the_stem_through_litellm(
    tmp_path: Path, fake_server: Callable[..., FakeServer]
) -> None:
    from benchmark.score.profiles import resolve
    from benchmark.score.source import derive_source_stem, source_score
    from testbed.fakeserver.schema_answers import SchemaAnswers

    root, sources = _nrrd_dataset(tmp_path / "tiny_nrrd")
    entries = tuple(ManifestEntry(i, rel) for i, rel in sources.items())
    task = Task(root=root, name="tiny_nrrd", entries=entries, out_dir=tmp_path / "c0")
    server = fake_server(SchemaAnswers("tool_choice"))
    candidate = asyncio.run(make_agent(server, mode="guided", vision=False).generate(task))
    assert candidate.status == "ok", candidate.reason

    written = _written(candidate.output_dir)
    assert _stems(written) == {0: "ct_0", 1: "ct_1"}
    official = resolve("official")
    for i, annotation in written.items():  # the GT stem of the real benchmark: the bare file stem
        assert source_score(annotation, derive_source_stem(annotation), {f"ct_{i}"}, official) == 1.0


def test_autofix_records_the_stem_and_logs_it(tmp_path: Path) -> None:
    from strategies._autofix import auto_fix

    out = sq.write_folder(tmp_path / "out", {i: sq.annotation(i) for i in ALL})
    log = auto_fix(out, ALL)
    stem_lines = [line for line in log if "source_stem" in line]
    assert [line.split(":")[0] for line in stem_lines] == [f"sample {i}" for i in sq.UNSTRIPPED]
    assert stem_lines[0].startswith("sample 0: extra.source_stem set to 'P001': source_file")
    assert _stems(_written(out)) == _expected_stems()
    assert auto_fix(out, ALL) == []  # nothing left to fix
    assert sq.source_scores(sq.official(out)) == dict.fromkeys(ALL, 1.0)

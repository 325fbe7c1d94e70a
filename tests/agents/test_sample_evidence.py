"""The evidence that decides a sample's answer is in front of the model in every mode (guided, tools,
script): its label-table row as the validator matches it, its path, a Word README as text; and the plan's ask
names no example modality."""

from __future__ import annotations

import asyncio
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from agent_scripts import make_agent

from agents.base import Limits, ManifestEntry, Task
from agents.llm.guided import PLAN_ASK
from agents.llm.sample_evidence import path_parts, table_rows
from testbed.fakeserver.schema_answers import SchemaAnswers


def write_png(path: Path, array: np.ndarray) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path)


_ROWS = {"ISIC_0001": ("bkl", "benign keratosis"), "ISIC_0002": ("mel", "melanoma")}


def _docx(path: Path, paragraphs: list[str]) -> None:
    body = "".join(f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" for text in paragraphs)
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?><w:document '
        'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        f"<w:body>{body}</w:body></w:document>"
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", xml)


@pytest.fixture
def skin_dataset(tmp_path: Path) -> Path:
    """Two dermoscopy-like JPEG-named PNGs, a metadata table keyed by image id, a Word README."""
    root = tmp_path / "tiny_skin"
    rng = np.random.default_rng(1)
    for name in _ROWS:
        write_png(
            root / "data" / "images" / f"{name}.png", rng.integers(0, 255, (24, 32, 3)).astype(np.uint8)
        )
    lines = ["image_id,patient_id,dx,diagnosis"]
    lines += [f"{name},P{k},{dx},{long}" for k, (name, (dx, long)) in enumerate(_ROWS.items())]
    lines += [f"ISIC_9{k:03d},P9{k},nv,melanocytic nevus" for k in range(5)]  # rows of other images
    (root / "data" / "metadata.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _docx(root / "data" / "README_file.docx", ["Skin lesion study", "Dermatoscope images, three classes."])
    (root / "VLM").mkdir(parents=True)
    (root / "VLM" / "random.txt").write_text(
        "".join(f"{k} /authors/tiny_skin/data/images/{name}.png\n" for k, name in enumerate(_ROWS)),
        encoding="utf-8",
    )
    return root


def _task(root: Path, out: Path) -> Task:
    entries = tuple(ManifestEntry(k, f"data/images/{name}.png") for k, name in enumerate(_ROWS))
    limits = Limits(max_turns=6, max_tool_calls=20, max_tokens=1_000_000)
    return Task(root=root, name="tiny_skin", entries=entries, out_dir=out, limits=limits)


def _user_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in request["messages"] if m["role"] == "user")


def test_a_samples_table_row_is_found_as_the_validator_matches_it(skin_dataset: Path) -> None:
    (row,) = table_rows(skin_dataset, "data/images/ISIC_0002.png")
    assert row == "image_id=ISIC_0002, patient_id=P1, dx=mel, diagnosis=melanoma"
    assert table_rows(skin_dataset, "data/images/ISIC_7777.png") == []
    assert path_parts("data/train/benign/x.png") == "folders train / benign; file x.png"


def test_guided_mode_shows_each_sample_its_own_row_and_the_plan_a_word_readme(
    skin_dataset: Path, tmp_path: Path, fake_server
) -> None:
    server = fake_server(SchemaAnswers("tool_choice"))
    agent = make_agent(server, mode="guided", vision=False)
    candidate = asyncio.run(agent.generate(_task(skin_dataset, tmp_path / "c0")))

    assert candidate.status == "ok", candidate.reason
    by_tool: dict[str, list[str]] = {}
    for request in server.chat_requests:
        by_tool.setdefault(request["tool_choice"]["function"]["name"], []).append(_user_text(request))
    (plan,) = by_tool["write_plan"]
    assert "Dermatoscope images, three classes." in plan and "looks binary" not in plan
    assert "image_id=ISIC_0001, patient_id=P0, dx=bkl" in plan  # how the table names one sample
    annotations = sorted(by_tool["annotate"], key=lambda text: "ISIC_0002" in text)
    assert "dx=bkl, diagnosis=benign keratosis" in annotations[0] and "dx=mel" not in annotations[0]
    assert "dx=mel, diagnosis=melanoma" in annotations[1] and "dx=bkl" not in annotations[1]


def test_neither_the_plan_ask_nor_the_instruction_names_an_example_modality() -> None:
    from agents.instructions import instruction_text

    instruction = instruction_text({}, "s0")
    for modality in ("CT", "MRI", "X-ray", "Ultrasound", "Dermoscopy", "Fundus"):
        assert modality not in PLAN_ASK
        assert f'"{modality}"' not in instruction


@pytest.mark.parametrize("mode", ["tools", "script"])
def test_the_tools_and_script_modes_open_with_each_samples_row(
    mode: str, skin_dataset: Path, tmp_path: Path, fake_server
) -> None:
    server = fake_server(SchemaAnswers("tool_choice"))
    agent = make_agent(server, mode=mode, vision=False, max_text_replies=1)
    asyncio.run(agent.generate(_task(skin_dataset, tmp_path / "c0")))

    opening = _user_text(server.chat_requests[0])
    assert "tool_choice" not in server.chat_requests[0]  # the mode's own first request, not the guided one
    assert "sample 0: table row: image_id=ISIC_0001, patient_id=P0, dx=bkl" in opening
    assert "sample 1: table row: image_id=ISIC_0002, patient_id=P1, dx=mel" in opening


def test_a_word_readme_is_read_as_text_by_the_read_text_tool(skin_dataset: Path, tmp_path: Path) -> None:
    from agents.tools.sandbox import Sandbox
    from agents.tools.tools import ToolBox

    task = _task(skin_dataset, tmp_path / "c0")
    box = ToolBox(task, Sandbox(task.root, task.output_dir), vision=False)
    result = box.run("read_text", json.dumps({"path": "data/README_file.docx"}))
    assert result.error is None, result.text
    assert result.text == "Skin lesion study\nDermatoscope images, three classes."

"""The agent's inspect/render tools show CZI scenes, ENVI bands, MATLAB variables and AppleDouble stubs,
bounded, with paths relative to the dataset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from agents.base import Limits, ManifestEntry, Task
from agents.tools.file_notes import INSPECT_MAX_ENTRIES
from agents.tools.sandbox import Sandbox
from agents.tools.tools import ToolBox
from testbed.synth.write_czi import write_czi


def _box(root: Path, out: Path) -> ToolBox:
    task = Task(
        root=root,
        name="formats",
        entries=(ManifestEntry(0, "data/x"),),
        out_dir=out,
        limits=Limits(max_turns=5, max_tool_calls=10, max_tokens=10**6),
    )
    return ToolBox(task, Sandbox(root, task.output_dir), vision=False)


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    data = root / "data"
    data.mkdir(parents=True)
    (root / "VLM").mkdir()
    (root / "VLM" / "random.txt").write_text("0 /a/ds/data/x\n")
    slide = np.zeros((2, 24, 32, 3), np.uint8)
    slide[1, ..., 1] = 200  # scene 2 is green
    write_czi(data / "he.czi", slide, axes="SYX", pixel_type="Bgr24")
    many = {f"v{i:03d}": np.full((1, 3), float(i)) for i in range(100)}
    scipy.io.savemat(data / "many.mat", {**many, "img": np.ones((16, 16))})
    (data / "img.tif").write_bytes(b"")  # a sibling exists; the stub itself is what is inspected
    (data / "._img.tif").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00" + b"\x00" * 60)
    return root


def test_inspect_shows_czi_scenes_and_relative_paths(dataset: Path, tmp_path: Path) -> None:
    result = _box(dataset, tmp_path / "out").run("inspect", json.dumps({"path": "data/he.czi"}))
    info = json.loads(result.text)
    assert result.error is None and info["format"] == "czi" and info["dims"]["S"] == 2
    assert info["path"] == "data/he.czi"


def test_render_takes_a_czi_scene(dataset: Path, tmp_path: Path) -> None:
    box = _box(dataset, tmp_path / "out")
    result = box.run("render", json.dumps({"index": 0, "source": "data/he.czi", "series": 1}))
    assert result.error is None, result.text
    from PIL import Image

    with Image.open(box.task.output_dir / "images" / "0.png") as img:
        assert img.getpixel((3, 3)) == (0, 200, 0)


def test_matlab_variables_are_bounded_and_name_the_image(dataset: Path, tmp_path: Path) -> None:
    info = json.loads(
        _box(dataset, tmp_path / "out").run("inspect", json.dumps({"path": "data/many.mat"})).text
    )
    assert len(info["variables"]) == INSPECT_MAX_ENTRIES
    assert info["variables_left_out"] == 101 - INSPECT_MAX_ENTRIES
    assert info["image_variable"]["path"] == "img"


def test_appledouble_stub_says_where_the_image_is(dataset: Path, tmp_path: Path) -> None:
    info = json.loads(
        _box(dataset, tmp_path / "out").run("inspect", json.dumps({"path": "data/._img.tif"})).text
    )
    assert info["format"] == "appledouble"
    assert info["appledouble"]["resolved_to"] == "data/img.tif"

"""The LiteLLM agent's inspect/render tools on DICOM SEG, RTSTRUCT and SR: bounded structured summaries, the
label map on the referenced slice, and an SR rendered as the image it references (and said so)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from agent_scripts import make_task
from PIL import Image

from agents.tools.render_cache import RENDERS
from agents.tools.sandbox import Sandbox
from agents.tools.tools import ToolBox

# The DICOM writers of the medio tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "medio"))
from dicom_derived_files import COLUMNS, ROWS, write_ct_series, write_seg, write_sr


@pytest.fixture(autouse=True)
def _empty_cache():
    RENDERS.clear()
    yield
    RENDERS.clear()


@pytest.fixture
def box(tmp_path: Path) -> ToolBox:
    root = tmp_path / "ds"
    ct = write_ct_series(root / "data" / "P-001" / "ct", 4)
    tumour = np.zeros((ROWS, COLUMNS), dtype=bool)
    tumour[2:6, 3:8] = True
    small = np.zeros((ROWS, COLUMNS), dtype=bool)
    small[0, 0] = True
    write_seg(root / "data" / "P-001" / "seg.dcm", ct, [(1, 2, tumour), (1, 3, small)], labels={1: "tumour"})
    write_sr(root / "data" / "P-001" / "sr.dcm", ct.slices[1], series=ct)
    task = make_task(root, tmp_path / "out")
    return ToolBox(task, Sandbox(task.root, task.output_dir), vision=False)


def _run(box: ToolBox, name: str, **args: object) -> dict:
    result = box.run(name, json.dumps(args))
    assert result.error is None, result.text
    return json.loads(result.text)


def test_inspect_of_a_seg_shows_its_segments_and_referenced_files_relative_to_the_dataset(box):
    info = _run(box, "inspect", path="data/P-001/seg.dcm")
    assert info["format"] == "dicom_seg"
    assert [(s["number"], s["label"], s["frames"]) for s in info["segments"]] == [(1, "tumour", 2)]
    assert (
        info["referenced_images"][0]["file"] == "data/P-001/ct/IM1.dcm"
    )  # slice 2 (names in reverse z order)
    assert len(json.dumps(info)) < 4000


def test_rendering_a_seg_mask_shows_its_largest_slice_and_names_the_image_beneath(box):
    result = _run(box, "render", index=0, source="data/P-001/seg.dcm", kind="mask")
    assert result["render"]["slice_index"] == 2
    assert result["render"]["referenced_image"] == "data/P-001/ct/IM1.dcm"
    assert result["label_values"] == [0, 1]
    mask = np.asarray(Image.open(box.sandbox.output_dir / "masks" / "0.png"))
    assert mask.shape == (ROWS, COLUMNS) and int(mask.sum()) == 4 * 5


def test_rendering_an_sr_renders_the_image_it_references_and_says_so(box):
    result = _run(box, "render", index=0, source="data/P-001/sr.dcm")
    assert result["render"]["source"] == "data/P-001/ct/IM2.dcm"
    assert result["render"]["read_from"] == "data/P-001/sr.dcm"
    assert "DICOM SR" in result["render"]["note"] and "[4.0, 3.0, 6.0, 5.0]" in result["render"]["note"]
    assert result["size"] == [COLUMNS, ROWS]

"""Fixtures for the agent tests: a scripted fake OpenAI server, tiny datasets, and a fast LiteLLM agent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from testbed.fakeserver import FakeServer, Script


@pytest.fixture
def fake_server() -> Iterator[Callable[..., FakeServer]]:
    """Factory: ``fake_server(script, latency_s=0)`` starts a fake OpenAI server, stopped at teardown."""
    servers: list[FakeServer] = []

    def start(script: Script, latency_s: float = 0.0) -> FakeServer:
        server = FakeServer(script, latency_s=latency_s).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def write_png(path: Path, array: np.ndarray) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path)


def write_nifti(path: Path, array: np.ndarray) -> None:
    import nibabel as nib

    path.parent.mkdir(parents=True, exist_ok=True)
    nib.save(nib.Nifti1Image(array, affine=np.diag([0.8, 0.8, 2.0, 1.0])), str(path))


@pytest.fixture
def seg_dataset(tmp_path: Path) -> Path:
    """A two-sample 3D segmentation dataset: NIfTI volumes, masks, a label table, a GT file."""
    root = tmp_path / "tiny_seg"
    rng = np.random.default_rng(0)
    for i in range(2):
        volume = rng.integers(0, 1000, size=(20, 16, 8)).astype(np.int16)  # NIfTI (X, Y, Z)
        mask = np.zeros_like(volume, dtype=np.uint8)
        mask[5:12, 4:10, 3 + i] = 1
        mask[6:8, 5:7, 3 + i] = 2
        write_nifti(root / "data" / f"case{i}" / "image.nii.gz", volume)
        write_nifti(root / "data" / f"case{i}" / "mask.nii.gz", mask)
    (root / "data" / "labels.csv").write_text("case,label\ncase0,tumor\ncase1,tumor\n", encoding="utf-8")
    write_png(root / "data" / "preview.png", rng.integers(0, 255, size=(12, 10)).astype(np.uint8))
    vlm = root / "VLM"
    vlm.mkdir(parents=True)
    (vlm / "random.txt").write_text(
        "0 /data3/authors/tiny_seg/data/case0/image.nii.gz\n"
        "1 /data3/authors/tiny_seg/data/case1/image.nii.gz\n",
        encoding="utf-8",
    )
    (vlm / "ground_truth_tiny.json").write_text('{"secret": "ground truth"}', encoding="utf-8")
    return root

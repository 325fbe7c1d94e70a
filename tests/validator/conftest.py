"""Fixtures for the validator tests: a small bundled suite with its oracle, and editable oracle copies."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from validator.validate import clear_cache

SUITE_DATASETS = (
    "synth-histology-png",
    "synth-kidney-ct-nifti",
    "synth-chest-xray-dicom",
    "synth-echo-avi",
    "synth-polyp-coco-png",
)


class Candidate:
    """An editable copy of one dataset's oracle output."""

    def __init__(self, root: Path, dataset: Path) -> None:
        self.root = root
        self.dataset = dataset

    def ann_path(self, index: int) -> Path:
        return self.root / "standardized_annotations" / f"{index}.json"

    def load(self, index: int) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.ann_path(index).read_text())
        return data

    def save(self, index: int, doc: Any) -> None:
        self.ann_path(index).write_text(json.dumps(doc))


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A few datasets of the bundled suite (one per task/dimension family) with the oracle run
    ``VLM/oracle``."""
    if importlib.util.find_spec("testbed.synth") is None:
        pytest.skip("testbed.synth (the bundled suite generator) is not installed")
    out = tmp_path_factory.mktemp("suite")
    cmd = [
        sys.executable,
        "-m",
        "testbed.synth",
        str(out),
        "--size",
        "small",
        "--oracle",
        "oracle",
        "--only",
        *SUITE_DATASETS,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.skip(f"the suite generator failed: {done.stderr[-500:]}")
    return out


@pytest.fixture(params=SUITE_DATASETS)
def suite_dataset(request: pytest.FixtureRequest) -> str:
    """Each dataset of `suite` in turn: a test that takes it runs once per dataset."""
    name: str = request.param
    return name


@pytest.fixture
def oracle_copy(suite: Path, tmp_path: Path) -> Any:
    """``oracle_copy(name)`` copies a dataset's oracle output to a temp folder and returns a `Candidate`."""
    clear_cache()

    def make(name: str) -> Candidate:
        dataset = suite / name
        dst = tmp_path / name / "agent1_data_organization"
        shutil.copytree(dataset / "VLM" / "oracle" / "agent1_data_organization", dst)
        return Candidate(dst, dataset)

    return make

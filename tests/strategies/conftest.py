"""Fixtures for strategy tests: a two-dataset synthetic suite with perfect answers, and tasks on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from strategy_fakes import make_suite

from agents.base import Task
from benchmark.discover import Dataset


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The suite root (generated once per session)."""
    return make_suite(tmp_path_factory.mktemp("suite"))


@pytest.fixture
def task(suite: Path, tmp_path: Path) -> Task:
    """A task on the fundus dataset writing into a fresh folder."""
    return Task.from_dataset(Dataset.from_root(suite / "synth-fundus-npy"), tmp_path / "selected", seed=0)

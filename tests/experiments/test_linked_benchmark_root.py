"""A benchmark root of linked dataset folders (how a subset of a large benchmark is picked) runs like the
folders themselves (issue 54 item 4)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig

from experiments.run.experiment import run_experiment

DATASET = "synth-fundus-npy"


def test_a_root_of_linked_dataset_folders_runs(
    suite: Path, make_cfg: Callable[..., DictConfig], tmp_path: Path
) -> None:
    links = tmp_path / "subset"
    links.mkdir()
    (links / DATASET).symlink_to(suite / DATASET, target_is_directory=True)
    (links / "loop").symlink_to(links, target_is_directory=True)
    cfg = make_cfg("strategy=s0", f"benchmark.root={links}", "run.report=false")
    outcome = run_experiment(cfg, tmp_path / "run")
    assert not outcome.incomplete and not outcome.errors
    assert json.loads((tmp_path / "run" / "run.json").read_text())["datasets"] == [DATASET]
    assert outcome.metrics["official"]["datasets"][DATASET]["E2E"] > 0

"""The paper's procedure is a pair of strategies (``s3_paper``, ``s4_paper``), not a flag of S3/S4."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from experiments._config_path import config_dir
from strategies.base import strategies

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["s3_paper", "s4_paper"])
def test_the_paper_strategies_pick_the_mdsbench_validator(name: str) -> None:
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        cfg = compose("config", overrides=[f"strategy={name}"])
        plain = compose("config", overrides=["strategy=s3"])
    assert cfg.validator.profile == "mdsbench"
    assert plain.validator.profile == "evidence"
    assert strategies.meta(cfg.strategy.kind)["validator"] == "mdsbench"


def test_only_our_selecting_strategies_are_reselectable() -> None:
    assert set(strategies.names_where(reselectable=True)) == {"best_of_n", "s3", "fieldwise", "s4"}


def test_the_retired_profile_override_is_refused_in_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "experiments", "strategy=s3", "strategy.profile=paper"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "strategy=s3_paper" in lines[0], proc.stderr

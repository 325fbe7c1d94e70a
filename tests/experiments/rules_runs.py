"""A stored S3 run of the deterministic ``rules`` agent, shared by the reselect and leaderboard tests (a plain
module: test files import it by a unique name)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig

from experiments import compose_config
from experiments.run.experiment import run_experiment
from testbed.synth.suite import generate_suite

DATASETS = ["synth-ct-liver-series", "synth-kidney-ct-nifti", "synth-organ-npz-shards"]
"""Datasets where the rules agent's seeded candidates at T = 0.7 differ, so selectors can disagree."""
N = 4
CHEAP_DATASETS = ["synth-kidney-ct-nifti", "synth-organ-npz-shards"]
"""Two of them that run in about a second each (the DICOM series takes most of a run's time); the candidates
differ on both: `first` keeps another candidate than validator_max on 11 of their 20 samples, `random` on 14
(majority agrees with validator_max here, as on the third dataset)."""


def rules_cfg(root: Path, *overrides: str, datasets: Sequence[str] = DATASETS) -> DictConfig:
    """The runner config: rules agent at T = 0.7, seed 0, the three datasets (or ``datasets``), no report."""
    return compose_config(
        [
            "benchmark=dir",
            f"benchmark.root={root}",
            f"benchmark.datasets=[{','.join(datasets)}]",
            "agent=rules",
            "agent.temperature=0.7",
            "run.seed=0",
            "run.progress=false",
            "run.report=false",
            *overrides,
        ]
    )


def make_rules_s3_run(base: Path, datasets: Sequence[str] = DATASETS) -> tuple[Path, Path]:
    """Generate the three datasets (or ``datasets``) and a finished S3 (n = 4, validator_max) run; return
    (suite, run)."""
    root = base / "suite"
    generate_suite(root, size="small", seed=0, only=list(datasets))
    run_experiment(rules_cfg(root, "strategy=s3", f"strategy.n={N}", datasets=datasets), base / "source")
    return root, base / "source"

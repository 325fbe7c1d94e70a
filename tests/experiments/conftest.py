"""Fixtures for runner tests: the two-dataset suite, composed configs, a subprocess environment."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

FAKES = Path(__file__).resolve().parent.parent / "strategies"
sys.path.insert(0, str(FAKES))  # the protocol test agents live beside the strategy tests

from run_overrides import FAKE_AGENT  # noqa: E402
from strategy_fakes import make_suite  # noqa: E402

from experiments import compose_config  # noqa: E402


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The suite root (generated once per session)."""
    return make_suite(tmp_path_factory.mktemp("suite"))


@pytest.fixture
def make_cfg(suite: Path) -> Callable[..., DictConfig]:
    """Compose the real config with the test agent on the small suite, plus overrides."""

    def make(*overrides: str) -> DictConfig:
        return compose_config(
            ["benchmark=dir", f"benchmark.root={suite}", FAKE_AGENT, "run.progress=false", *overrides]
        )

    return make


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for ``python -m experiments`` subprocesses: this checkout and the test agents importable,
    cache in tmp."""
    env = dict(os.environ)
    # The checkout first: a subprocess in a temp folder would otherwise import the installed snapshot.
    env["PYTHONPATH"] = os.pathsep.join([str(FAKES.parent.parent), str(FAKES), env.get("PYTHONPATH", "")])
    env["MEDSTRAT_CACHE"] = str(tmp_path / "cache")
    return env


@pytest.fixture(scope="session")
def rules_s3_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(suite root, a finished S3 run of the rules agent) — see `rules_runs`; never modify it in a test."""
    from rules_runs import make_rules_s3_run

    return make_rules_s3_run(tmp_path_factory.mktemp("rules_s3"))

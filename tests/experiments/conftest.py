"""Fixtures for runner tests: the two-dataset suite, composed configs, a subprocess environment."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from omegaconf import DictConfig

FAKES = Path(__file__).resolve().parent.parent / "strategies"
sys.path.insert(0, str(FAKES))  # the protocol test agents live beside the strategy tests

from cli_process import subprocess_env  # noqa: E402
from fake_roles import Dispatch, RolesRuns  # noqa: E402
from fake_roles import make_suite as make_roles_suite  # noqa: E402
from fake_roles import roles_runs as make_roles_runs  # noqa: E402
from run_overrides import FAKE_AGENT  # noqa: E402
from strategy_fakes import make_suite  # noqa: E402

from experiments import compose_config  # noqa: E402
from testbed.fakeserver import ByDataset, FakeServer  # noqa: E402


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
    return subprocess_env(tmp_path / "cache")


TRACKED_DATASET = "synth-fundus-npy"
"""The one dataset of the shared tracked runs below."""


@pytest.fixture(scope="session")
def tracked_run(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(start folder, run folder) of ``python -m experiments strategy=s3 tracking=mlflow`` on one dataset,
    started in a fresh folder, so the run made MLflow's default store ``mlflow.db`` there. Shared by the
    tests that read the store as a user would (a plain MLflow client, ``mlflow ui``); never write to it."""
    from cli_process import run_cli

    base = tmp_path_factory.mktemp("tracked_run")
    run = base / "tracked_s3"
    args = ["benchmark=dir", f"benchmark.root={suite}", f"benchmark.datasets=[{TRACKED_DATASET}]", FAKE_AGENT]
    args += ["strategy=s3", "tracking=mlflow", f"hydra.run.dir={run}"]
    done = run_cli(args, subprocess_env(base / "cache"), base)
    assert done.returncode == 0, done.stderr
    assert "tracking: warning" not in done.stderr
    return base, run


@pytest.fixture(scope="session")
def joblib_tracked_sweep(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(start folder, sweep folder) of ``-m hydra/launcher=local_joblib strategy=s0,s3 tracking=mlflow`` on
    one dataset, started in a fresh folder: both jobs at once, each in its own process, into a store no run
    made yet. Shared by the launcher test and the tracking-store test; never write to it."""
    from cli_process import run_cli

    base = tmp_path_factory.mktemp("joblib_sweep")
    args = [
        "-m",
        "hydra/launcher=local_joblib",
        "strategy=s0,s3",
        "benchmark=dir",
        f"benchmark.root={suite}",
        f"benchmark.datasets=[{TRACKED_DATASET}]",
        FAKE_AGENT,
        "run.progress=false",
        "tracking=mlflow",
        f"hydra.sweep.dir={base / 'sweep'}",
    ]
    done = run_cli(args, subprocess_env(base / "cache"), base, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "tracking: warning" not in done.stderr
    return base, base / "sweep"


@pytest.fixture(scope="session")
def rules_s3_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(suite root, a finished S3 run of the rules agent) — see `rules_runs`; never modify it in a test."""
    from rules_runs import make_rules_s3_run

    return make_rules_s3_run(tmp_path_factory.mktemp("rules_s3"))


@pytest.fixture(scope="session")
def rules_s3_run_small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(suite root, a finished S3 run of the rules agent) on `rules_runs.CHEAP_DATASETS`, for the tests that
    repeat runs beside it (fresh runs per selector, sweeps); never modify it in a test."""
    from rules_runs import CHEAP_DATASETS, make_rules_s3_run

    return make_rules_s3_run(tmp_path_factory.mktemp("rules_s3_small"), datasets=CHEAP_DATASETS)


@pytest.fixture(scope="module")
def roles_suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ByDataset]:
    """The model-roles tests' one-dataset suite and the rules agent's replay on it (`fake_roles`)."""
    return make_roles_suite(tmp_path_factory.mktemp("roles"))


@pytest.fixture
def roles_server(roles_suite: tuple[Path, ByDataset]) -> Iterator[tuple[FakeServer, Dispatch]]:
    """One fake server playing the pool's models (replays) and a judge that chooses candidate 1."""
    dispatch = Dispatch(roles_suite[1])
    with FakeServer(dispatch) as fake:
        yield fake, dispatch


@pytest.fixture(scope="session")
def roles_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RolesRuns]:
    """A plain and a judged run of the model-roles pool, on a server up for the session (`fake_roles`);
    never modify them in a test (copy to tmp_path first)."""
    with make_roles_runs(tmp_path_factory.mktemp("roles_runs")) as runs:
        yield runs

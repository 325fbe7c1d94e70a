"""Issue 7 scale-out: Hydra launcher plugins run sweep jobs of ``python -m experiments`` locally.

Each test runs a 2-job multirun (``strategy=s0,s3``) on one tiny dataset with the protocol test agent, through
the launcher named on the command line, and checks every job wrote its metrics and the sweep its ablation. The
joblib sweep is the session's `joblib_tracked_sweep` (tracked in MLflow), which test_tracking_store.py reads.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from run_overrides import FAKE_AGENT

from benchmark.score.constants import METRIC_NAMES


def _sweep(launcher: str, suite: Path, env: dict[str, str], cwd: Path) -> Path:
    sweep = cwd / "sweep"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments",
            "-m",
            f"hydra/launcher={launcher}",
            "strategy=s0,s3",
            "benchmark=dir",
            f"benchmark.root={suite}",
            "benchmark.datasets=[synth-fundus-npy]",
            FAKE_AGENT,
            "run.progress=false",
            f"hydra.sweep.dir={sweep}",
        ],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return sweep


def _check_jobs(sweep: Path) -> dict[str, Path]:
    jobs = {p.name.split("_", 1)[1]: p for p in sweep.iterdir() if (p / "metrics.json").is_file()}
    assert sorted(jobs) == ["s0", "s3"]
    for job in jobs.values():
        metrics = json.loads((job / "metrics.json").read_text())
        assert list(metrics["macro"]) == list(METRIC_NAMES)
        assert list(metrics["datasets"]) == ["synth-fundus-npy"]
    assert (sweep / "ablation.md").is_file() and (sweep / "ablation.csv").is_file()
    # The sweep's own page links every job's report, and each job's report shows the sweep's figure.
    page = (sweep / "report.html").read_text()
    assert all(f'href="{job.name}/report.html"' in page for job in jobs.values())
    for job in jobs.values():
        assert 'src="assets/ablation.png"' in (job / "report.html").read_text()
        assert (job / "assets" / "ablation.png").is_file()
    return jobs


def _launcher_target(job: Path) -> str:
    import yaml

    hydra_cfg = yaml.safe_load((job / ".hydra" / "hydra.yaml").read_text())
    return str(hydra_cfg["hydra"]["launcher"]["_target_"])


@pytest.mark.heavy
def test_joblib_launcher_runs_a_two_job_sweep_locally(joblib_tracked_sweep: tuple[Path, Path]) -> None:
    jobs = _check_jobs(joblib_tracked_sweep[1])  # the sweep that test_tracking_store.py reads MLflow from
    assert all("JoblibLauncher" in _launcher_target(j) for j in jobs.values())


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is None,
    reason="hydra-submitit-launcher is not installed (pip install hydra-submitit-launcher)",
)
def test_submitit_local_launcher_runs_a_two_job_sweep(
    suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    jobs = _check_jobs(_sweep("local_submitit", suite, cli_env, tmp_path))  # conf/hydra/launcher/
    assert all("LocalLauncher" in _launcher_target(j) for j in jobs.values())

"""A run folder holds one run and a sweep folder one sweep (issue 54 items 1-2): a second start into a folder
that holds another run is refused before it writes a byte (exit 2, one line naming the folder, what it holds
and the ways on); ``run.resume=true`` of the same config continues; ``run.replace=true`` moves the old run
aside instead of deleting it."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process
from cli_process import nonblank_lines
from omegaconf import DictConfig

from experiments.run.experiment import run_experiment
from experiments.run.folder import FolderHoldsRun, claim_run_folder, claim_sweep_folder, held_run

DATASET = "synth-fundus-npy"


def _digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden ones too) by its relative path: the bytes a user would lose."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _args(suite: Path, *extra: str) -> list[str]:
    return [
        "benchmark=dir",
        f"benchmark.root={suite}",
        f"benchmark.datasets=[{DATASET}]",
        "run.progress=false",
        "run.report=false",
        *extra,
    ]


def test_a_second_run_into_a_finished_run_is_refused_and_every_byte_stays_then_resume_and_replace_work(
    suite: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "runs" / "a"
    first = _args(suite, "strategy=s3", "strategy.n=2", f"hydra.run.dir={run}")
    done = run_cli_in_process(first, os.environ, tmp_path, capfd)
    assert done.returncode == 0, done.stderr
    before = _digest(run)
    assert ".hydra/config.yaml" in before and "run.json" in before

    second = run_cli_in_process(
        _args(suite, "strategy=s0", f"hydra.run.dir={run}"), os.environ, tmp_path, capfd
    )
    assert second.returncode == 2, second.stderr
    (line,) = nonblank_lines(second.stderr)
    assert line.startswith(
        f"python -m experiments: error: hydra.run.dir={run} holds a finished s3 run (started "
    )
    assert "run.resume=true" in line and "another hydra.run.dir" in line and "run.replace=true" in line
    assert _digest(run) == before  # Hydra's .hydra/ and log included: nothing was written

    resumed = run_cli_in_process([*first, "run.resume=true"], os.environ, tmp_path, capfd)
    assert resumed.returncode == 0, resumed.stderr

    kept = _digest(run)
    replaced = run_cli_in_process(
        _args(suite, "strategy=s0", f"hydra.run.dir={run}", "run.replace=true"), os.environ, tmp_path, capfd
    )
    assert replaced.returncode == 0, replaced.stderr
    (aside,) = [p for p in run.parent.iterdir() if p.name.startswith("a.replaced-")]
    assert _digest(aside) == kept  # moved, every byte, not deleted
    assert f"moved the run in {run} aside to {aside}" in replaced.stderr
    assert json.loads((run / "run.json").read_text())["strategy"] == "s0"


def test_a_sweep_into_a_folder_holding_another_sweep_is_refused_and_multirun_yaml_stays(
    suite: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # A finished one-job sweep as far as the check reads it (a real `-m strategy=s0` costs ~5 s).
    sweep = tmp_path / "sweep"
    job = sweep / "0_s0"
    (job / ".hydra").mkdir(parents=True)
    (job / "selected").mkdir()
    (job / "config.json").write_text(json.dumps({"strategy": {"name": "s0"}}))
    (job / "run.json").write_text(json.dumps({"strategy": "s0"}))
    (sweep / "ablation.md").write_text("| strategy | E2E |\n")
    task = _args(suite, "strategy=s0")
    (sweep / "multirun.yaml").write_text(json.dumps({"hydra": {"overrides": {"task": task}}}))
    before = _digest(sweep)

    again = run_cli_in_process(
        ["-m", *_args(suite, "strategy=s1", f"hydra.sweep.dir={sweep}")], os.environ, tmp_path, capfd
    )
    assert again.returncode == 2, again.stderr
    (line,) = nonblank_lines(again.stderr)
    assert line.startswith(
        f"python -m experiments: error: hydra.sweep.dir={sweep} holds a sweep of 1 run(s) (s0; 1 finished, "
    )
    assert _digest(sweep) == before  # no job, no multirun.yaml rewritten, no ablation table mixing two sweeps

    # The same sweep, resumed, is the one way back in; another sweep with resume is still refused.
    assert claim_sweep_folder({"resume": True}, [*task, "run.resume=true"], sweep) is None
    with pytest.raises(FolderHoldsRun, match="started with other overrides"):
        claim_sweep_folder({"resume": True}, _args(suite, "strategy=s1"), sweep)


def test_a_run_from_python_into_a_folder_holding_a_run_is_refused_before_any_write(
    make_cfg: object, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    (run / "candidates").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"strategy": {"name": "s3"}}))
    before = _digest(run)
    assert callable(make_cfg)
    cfg = make_cfg("strategy=s0")
    assert isinstance(cfg, DictConfig)
    with pytest.raises(FolderHoldsRun, match=r"holds an unfinished s3 run \(started "):
        run_experiment(cfg, run)
    assert _digest(run) == before and sorted(p.name for p in run.iterdir()) == ["candidates", "config.json"]


def test_what_a_folder_holds_decides_its_claim(tmp_path: Path) -> None:
    forecast = tmp_path / "forecast"
    (forecast / ".hydra").mkdir(parents=True)
    (forecast / "forecast.json").write_text("{}")
    assert held_run(forecast) is None and claim_run_folder({}, forecast) is None  # a plan, not results

    sweep = tmp_path / "sweep"
    (sweep / "0_s0" / "selected").mkdir(parents=True)
    with pytest.raises(FolderHoldsRun, match="holds a sweep of 1 run"):
        claim_run_folder({}, sweep)  # a single run would file itself among the sweep's jobs
    run = tmp_path / "run"
    (run / "selected").mkdir(parents=True)
    with pytest.raises(FolderHoldsRun, match=r"holds an unfinished run; pick another hydra\.sweep\.dir"):
        claim_sweep_folder({}, [], run)
    with pytest.raises(ValueError, match="not both"):
        claim_run_folder({"resume": True, "replace": True}, run)
    assert (run / "selected").is_dir()


def test_a_forecast_into_a_folder_holding_a_run_is_refused_before_hydra_writes(
    suite: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("strategy: {name: s3}\n")
    (run / "config.json").write_text(json.dumps({"strategy": {"name": "s3"}}))
    before = _digest(run)
    done = run_cli_in_process(
        _args(suite, "strategy=s0", "run.dry_run=true", f"hydra.run.dir={run}"), os.environ, tmp_path, capfd
    )
    assert done.returncode == 2, done.stderr
    assert f"hydra.run.dir={run} holds an unfinished s3 run" in done.stderr
    assert _digest(run) == before and not (run / "forecast.json").exists()


def test_a_sweep_started_with_run_replace_resumes_without_it(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    (sweep / "0_s0" / "selected").mkdir(parents=True)
    (sweep / ".hydra").mkdir()
    (sweep / "multirun.yaml").write_text(
        "hydra:\n  overrides:\n    task: [strategy=s0, run.replace=true]\n", encoding="utf-8"
    )
    assert claim_sweep_folder({"resume": True}, ["strategy=s0", "run.resume=true"], sweep) is None

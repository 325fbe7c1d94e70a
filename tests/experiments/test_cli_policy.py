"""`python -m experiments` failure modes a new user meets (docs/cli.md), in a fresh process: a resume under
another config is refused, a run where nothing was produced exits 4, Ctrl-C keeps the finished work and prints
the command that resumes it, and so does SIGTERM to a run a script started in the background (SIGINT
ignored)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process
from cli_process import (
    end_with_sigterm,
    sigint_ignored,
    start_as_background_job,
    start_as_terminal_command,
)
from strategy_fakes import SMALL_DATASETS


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "experiments", *args]


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_resume_under_another_config_is_refused_and_force_overrides(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # The command's refusal, exit codes and files, in this process (the signal tests below run it fresh).
    monkeypatch.setenv("MEDSTRAT_CACHE", str(tmp_path / "cache"))

    def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli_in_process(args, os.environ, tmp_path, capfd)

    run = tmp_path / "run"
    common = ["benchmark=dir", f"benchmark.root={suite}", "run.progress=false", "run.report=false"]
    agent = "agent._target_=strategy_fakes.NoisyOracleAgent"
    first = run_cli(*common, agent, "strategy=s3", "strategy.n=2", f"hydra.run.dir={run}")
    assert first.returncode == 0, first.stderr
    stored = (run / ".hydra" / "config.yaml").read_text()
    run_json = (run / "run.json").read_text()

    other = run_cli(*common, agent, "strategy=s0", "run.resume=true", f"hydra.run.dir={run}")
    assert other.returncode == 2, other.stderr
    (line,) = _lines(other.stderr)
    assert (
        "strategy.name: 's3' → 's0'" in line and "strategy.n: 2 → None" in line and "run.resume=force" in line
    )
    assert "Traceback" not in other.stderr
    # Nothing of the old run was relabelled: no s0 export, run.json and Hydra's record untouched.
    assert not list((run / "export").glob("*/VLM/s0"))
    assert (run / "run.json").read_text() == run_json and (
        run / ".hydra" / "config.yaml"
    ).read_text() == stored

    same = run_cli(*common, agent, "strategy=s3", "strategy.n=2", "run.resume=true", f"hydra.run.dir={run}")
    assert same.returncode == 0, same.stderr
    forced = run_cli(
        *common, agent, "strategy=s3", "strategy.n=3", "run.resume=force", f"hydra.run.dir={run}"
    )
    assert forced.returncode == 0, forced.stderr


def test_a_run_where_no_candidate_wrote_a_sample_exits_4(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEDSTRAT_CACHE", str(tmp_path / "cache"))
    done = run_cli_in_process(
        [
            "benchmark=dir",
            f"benchmark.root={suite}",
            "run.progress=false",
            "strategy=s3",
            "strategy.n=2",
            "agent._target_=strategy_fakes.SilentAgent",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        os.environ,
        tmp_path,
        capfd,
    )
    assert done.returncode == 4
    (line,) = _lines(done.stderr)
    # The candidates are failed by the framework with a reason (strategies.context), named in the line.
    assert "no candidate produced a sample" in line and "no sample was written" in line
    assert "official" not in done.stdout  # no table of zeros
    assert not (tmp_path / "run" / "metrics.json").exists()


@pytest.mark.heavy
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_after_the_first_dataset_keeps_it_and_prints_the_resume_command(
    signum: signal.Signals, suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    quick, slow = sorted(SMALL_DATASETS)[0], sorted(SMALL_DATASETS)[1]
    run = tmp_path / "run"
    args = [
        "benchmark=dir",
        f"benchmark.root={suite}",
        "run.progress=false",
        "strategy=s3",
        "strategy.n=2",
        "agent._target_=strategy_fakes.UnevenAgent",
        f"+agent.slow={slow}",
    ]
    if signum == signal.SIGTERM:  # `python -m experiments ... &` then `kill $!` in a script: SIGINT ignored
        proc = start_as_background_job(_cmd(*args, f"hydra.run.dir={run}")[1:], cli_env, tmp_path)
    else:  # Ctrl-C in a terminal
        proc = start_as_terminal_command(_cmd(*args, f"hydra.run.dir={run}")[1:], cli_env, tmp_path)
    marker = run / "selected" / quick / "result.json"
    deadline = time.time() + 120
    while not marker.is_file() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.is_file(), "the quick dataset never finished"
    if signum == signal.SIGTERM:
        assert sigint_ignored(proc.pid)
        took, err = end_with_sigterm(proc)
        assert took < 10, err
    else:
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = _lines(err)
    assert len(lines) == 1, err
    (line,) = lines
    assert line.startswith("interrupted — resume with: python -m experiments ")
    command = shlex.split(line.split("resume with: ", 1)[1])
    assert "run.resume=true" in command and f"hydra.run.dir={run}" in command
    assert "Traceback" not in err and "CancelledError" not in err
    assert marker.is_file() and not (run / "metrics.json").exists()  # finished work kept, nothing half-scored
    record = json.loads(marker.read_text())
    assert record["decisions"]

    if signum != signal.SIGTERM:
        return  # the resume below is the same for both signals
    # The printed command is the resume: with the slow agent made quick it is another config (refused),
    # with run.resume=force it finishes and reuses the finished dataset.
    resumed = _run([sys.executable, *command[1:], "+agent.slow_delay=0"], cli_env, tmp_path)
    assert resumed.returncode == 2 and "agent.slow_delay" in resumed.stderr
    mtime = marker.stat().st_mtime_ns
    forced = [a if a != "run.resume=true" else "run.resume=force" for a in command[1:]]
    finished = _run([sys.executable, *forced, "+agent.slow_delay=0"], cli_env, tmp_path)
    assert finished.returncode == 0, finished.stderr
    assert marker.stat().st_mtime_ns == mtime and (run / "metrics.json").is_file()

"""One writer per run folder (issue 23 item 3): a second run into a busy folder is refused at once, naming the
holder, and leaves the first run's files alone; a lock left by a killed run is taken over with a note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process
from cli_process import nonblank_lines as _lines
from cli_process import run_cli as _cli
from cli_process import start_as_terminal_command
from gated_agent import ARRIVED, OPEN

from experiments.run.lock import LOCK_NAME, RunFolderBusy, hold_run_folder, release_run_folder


def holder_pid(run: Path) -> int | None:
    """The pid written in the run folder's lock file (None when it is empty or absent)."""
    text = (run / LOCK_NAME).read_text(encoding="ascii").strip() if (run / LOCK_NAME).is_file() else ""
    return int(text) if text.isdigit() else None


def _rules_run(suite: Path, run: Path, *extra: str, strategy: str = "s0") -> list[str]:
    return [
        f"strategy={strategy}",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "run.progress=false",
        "run.report=false",
        f"hydra.run.dir={run}",
        *extra,
    ]


def test_a_second_lock_in_one_process_is_a_no_op_and_a_clean_release_empties_the_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    hold_run_folder(run)
    hold_run_folder(run)  # the callback, then the run: same process, same lock
    assert holder_pid(run) == os.getpid()
    release_run_folder(run)
    assert (run / LOCK_NAME).read_text() == "" and holder_pid(run) is None


def test_a_run_into_a_folder_another_process_holds_is_refused_with_its_pid_and_writes_nothing(
    suite: Path,
    cli_env: dict[str, str],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    run = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from experiments.run.lock import hold_run_folder as h; h({str(run)!r}); "
            "print('held', flush=True); input()",
        ],
        env=cli_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        done = run_cli_in_process(_rules_run(suite, run), os.environ, tmp_path, capfd)
    finally:
        holder.communicate("\n", timeout=60)
    assert done.returncode == 2, done.stderr
    assert _lines(done.stderr) == [
        f"python -m experiments: error: run folder {run} is in use by another run (pid {holder.pid}); "
        "wait for it to end or pick another hydra.run.dir"
    ]
    assert sorted(p.name for p in run.iterdir()) == [LOCK_NAME]  # no .hydra, no log, no outputs


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout_s: float = 300) -> bool:
    deadline = time.monotonic() + timeout_s
    while not path.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    return path.exists()


def test_two_concurrent_runs_into_one_folder_one_completes_the_other_is_refused(
    suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    names = sorted(p.name for p in suite.iterdir() if (p / "VLM" / "random.txt").is_file())
    gate = tmp_path / "gate"
    gate.mkdir()
    run = tmp_path / "run"
    env = {**cli_env, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), cli_env["PYTHONPATH"]])}
    # The first run's agent calls wait at a gate (as a model call that has not answered yet).
    agent = ["agent._target_=gated_agent.GatedAgent", f"+agent.gate={gate}"]
    first = start_as_terminal_command(
        ["-m", "experiments", *_rules_run(suite, run, *agent), "run.processes=1"], env, tmp_path
    )
    try:
        assert _wait_for(gate / ARRIVED, first), "the first run never called its agent"
        # The first run is mid-flight (its first agent call is held): a second run into its folder.
        second = _cli(_rules_run(suite, run), cli_env, tmp_path)
    finally:
        (gate / OPEN).touch()
        _, err = first.communicate(timeout=300)
    assert second.returncode == 2, second.stderr
    assert _lines(second.stderr) == [
        f"python -m experiments: error: run folder {run} is in use by another run (pid {first.pid}); "
        "wait for it to end or pick another hydra.run.dir"
    ]
    assert first.returncode == 0, err
    metrics = json.loads((run / "metrics.json").read_text())
    assert sorted(metrics["datasets"]) == names  # full metrics, from the one writer
    assert holder_pid(run) is None  # released cleanly at exit


def test_a_lock_left_by_a_killed_run_is_taken_over_with_a_note(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEDSTRAT_CACHE", str(tmp_path / "cache"))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK_NAME).write_text(f"{dead.pid}\n")
    done = run_cli_in_process(_rules_run(suite, run), os.environ, tmp_path, capfd)
    assert done.returncode == 0, done.stderr
    notes = [line for line in _lines(done.stderr) if "taking over" in line]
    assert notes == [
        f"note: run folder {run}: taking over the lock left by pid {dead.pid} (no longer running)"
    ]
    assert (run / "metrics.json").is_file()


def test_a_config_the_preflight_refuses_leaves_no_folder(
    suite: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "deep" / "run"
    args = _rules_run(suite, run, "selector.name=nope", strategy="s3")
    done = run_cli_in_process(args, os.environ, tmp_path, capfd)
    assert done.returncode == 2, done.stderr
    assert "unknown selector 'nope'" in done.stderr
    assert not (tmp_path / "deep").exists()


def test_the_busy_error_names_the_folder_and_pid() -> None:
    assert "pid 42" in str(RunFolderBusy(Path("x"), 42)) and "another process" in str(
        RunFolderBusy(Path("x"), None)
    )

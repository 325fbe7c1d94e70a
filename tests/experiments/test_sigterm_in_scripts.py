"""``CMD &`` then ``kill $!`` in a script (issue 33 item 3): the job inherits SIGINT ignored, and SIGTERM must
still end each long-running command within seconds, the way Ctrl-C does (``docs/cli.md``). Each command is
caught in the middle of its work: the fake server serving, reselect and the leaderboard inside a selector that
never returns (a stuck plug-in or judge). The whole run of ``python -m experiments`` (finished work kept, the
resume) is `test_cli_policy`'s signal test."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from cli_process import end_with_sigterm, nonblank_lines, sigint_ignored, start_as_background_job

from core.cli_errors import GRACE_ENV, TERMINATION_GRACE_S

# A selector stuck for a minute on its first call (the first to reach it tells the test through the file
# $STALL_FLAG); later calls return at once, so a process that outlives the test ends by itself.
PLUGIN = """
import os, pathlib, time
from strategies import selector

@selector("stall")
def stall(index, candidates, reports, task):
    flag = pathlib.Path(os.environ["STALL_FLAG"])
    if not flag.exists():
        flag.touch()
        time.sleep(60)
    return 0
"""


@pytest.fixture
def env(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "stall_selector.py").write_text(PLUGIN)
    return {
        **cli_env,
        "PYTHONPATH": os.pathsep.join([str(plugins), cli_env["PYTHONPATH"]]),
        "STALL_FLAG": str(tmp_path / "stalled"),
    }


def _wait_for(flag: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not flag.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if not flag.exists():
        proc.kill()
        raise AssertionError(f"the command never reached the selector: {proc.communicate()[1]}")


def _live_children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_fake_server_started_in_the_background_ends_on_sigterm(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    server = start_as_background_job(["-m", "testbed.fakeserver"], cli_env, tmp_path)
    assert server.stdout is not None
    assert server.stdout.readline().startswith("http://127.0.0.1:")  # serving
    assert sigint_ignored(server.pid)
    took, err = end_with_sigterm(server)
    assert server.returncode == 0, err
    assert took < 10


@pytest.mark.heavy
def test_reselect_stuck_in_a_selector_ends_on_sigterm(
    rules_s3_run: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    _, source = rules_s3_run
    args = [
        "-m",
        "experiments.cli",
        "reselect",
        str(source),
        "run.imports=[stall_selector]",
        "selector.name=stall",
    ]
    # The stuck selector's thread outlives the clean-up: the command ends when its grace period runs out,
    # here the one second the environment sets instead of the default five.
    env = {**env, GRACE_ENV: "1"}
    proc = start_as_background_job([*args, f"hydra.run.dir={tmp_path / 'out'}"], env, tmp_path)
    _wait_for(tmp_path / "stalled", proc)
    assert sigint_ignored(proc.pid)
    took, err = end_with_sigterm(proc)
    assert 1 <= took < TERMINATION_GRACE_S, took
    assert proc.returncode == 130, err
    assert "interrupted" in nonblank_lines(err)[-1] or "stopped after SIGTERM" in nonblank_lines(err)[-1], err
    assert "Traceback" not in err


@pytest.mark.heavy
def test_the_leaderboard_stuck_in_a_selector_ends_on_sigterm_with_its_workers(
    rules_s3_run: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    _, source = rules_s3_run
    args = [
        "-m",
        "experiments.cli",
        "leaderboard",
        str(source),
        "--selectors",
        "stall",
        "--imports",
        "stall_selector",
    ]
    proc = start_as_background_job([*args, "--workers", "2", "--out", str(tmp_path / "out")], env, tmp_path)
    _wait_for(tmp_path / "stalled", proc)
    workers = _live_children(proc.pid)
    assert workers and sigint_ignored(proc.pid)
    took, err = end_with_sigterm(proc)
    assert took < 10
    assert proc.returncode == 130, err
    assert nonblank_lines(err) == ["medstrat leaderboard: interrupted"], err
    deadline = time.monotonic() + 5
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers), "a worker outlived the leaderboard"

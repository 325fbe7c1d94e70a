"""Tool work and validation in worker processes (`agent.tool_processes`, `run.validation_processes`): the same
reports, the same selected outputs, and no process left behind after a run or a Ctrl-C."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cli_process import start_as_terminal_command

from agents.base import Task
from benchmark.discover import Dataset
from experiments import compose_config
from experiments.run.experiment import run_experiment
from experiments.run.pools import RunExecutor, validation_executor
from strategies.base import ProfileValidator, run_cpu
from testbed.fakeserver import ByDataset, FakeServer, Reply, TurnScript
from testbed.fakeserver.replay import ReplayScript, replay_script

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ("synth-chest-xray-dicom", "synth-brain-mr-nifti")


def test_validation_in_worker_processes_equals_validation_in_threads(rules_s3_run: tuple[Path, Path]):
    suite, run = rules_s3_run
    folders = sorted((run / "candidates").glob("*/*/agent1_data_organization"))
    tasks = {f: Task.from_dataset(Dataset.from_root(suite / f.parents[1].name), f.parent) for f in folders}
    assert len(folders) >= 8

    async def validate_all(validator: ProfileValidator) -> list[Any]:
        return list(
            await asyncio.gather(*(run_cpu(validator, validator.validate, f, tasks[f]) for f in folders))
        )

    threads = ThreadPoolExecutor(2)
    processes = validation_executor({"workers": 2, "validation_processes": 2})
    assert isinstance(processes, RunExecutor)
    try:
        expected = asyncio.run(validate_all(ProfileValidator("evidence", threads)))
        got = asyncio.run(validate_all(ProfileValidator("evidence", processes)))
        workers = list(processes._pool._processes) if processes._pool is not None else []  # type: ignore[attr-defined]
    finally:
        threads.shutdown()
        processes.shutdown()
    assert got == expected
    assert {r.profile for r in got} == {"evidence"} and any(r.mean_total > 0 for r in got)
    assert workers and os.getpid() not in workers  # the reports really came from other processes


def test_a_negative_pool_size_is_refused():
    with pytest.raises(ValueError, match=r"run\.validation_processes must be 0 or more"):
        validation_executor({"validation_processes": -1})


def _batched(replay: ReplayScript) -> TurnScript:
    """The replay in three turns (every read tool; every write; meta and finish): its tool work in 3 calls."""
    calls = [c for step in replay.steps if isinstance(step, Reply) for c in step.tool_calls]
    turns: dict[int, list[dict[str, Any]]] = {0: [], 1: [], 2: []}
    for call in calls:
        name = call["function"]["name"]
        turns[
            0 if name in ("inspect", "render", "view_image") else 1 if name == "write_annotation" else 2
        ].append(call)
    return TurnScript([Reply(tool_calls=tuple(turns[k]), usage=(300, 40)) for k in range(3)])


@pytest.fixture(scope="module")
def replay_suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ByDataset]:
    from testbed.synth.suite import generate_suite

    base = tmp_path_factory.mktemp("pools")
    suite = base / "suite"
    generate_suite(suite, size="small", only=list(DATASETS))
    scripts = {
        name: replay_script(
            base / "suite" / name, work_dir=base / "rules" / name, usage=(300, 40), check=False
        )
        for name in DATASETS
    }
    return suite, ByDataset(scripts)


@pytest.fixture
def server(replay_suite: tuple[Path, ByDataset]) -> Iterator[FakeServer]:
    with FakeServer(replay_suite[1]) as fake:
        yield fake


def _overrides(suite: Path, server: FakeServer, pools: int) -> list[str]:
    return [
        "strategy=s3",
        "strategy.n=2",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "agent=litellm",
        "agent.model=openai/fake-model",
        f"agent.api_base={server.url}",
        "+agent.api_key=sk-fake",
        "agent.vision=true",
        f"agent.tool_processes={pools}",
        f"run.validation_processes={pools}",
        "run.concurrency=4",
        "run.progress=false",
        "run.report=false",
    ]


def _selected(run_dir: Path) -> dict[str, str]:
    out = {}
    for path in sorted((run_dir / "selected").rglob("agent1_data_organization/**/*")):
        if path.is_file():
            out[path.relative_to(run_dir).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_an_s3_run_selects_the_same_outputs_with_the_pools_on_and_off(
    replay_suite: tuple[Path, ByDataset], server: FakeServer, tmp_path: Path
):
    suite, _ = replay_suite
    off = run_experiment(compose_config(_overrides(suite, server, 0)), tmp_path / "off")
    on = run_experiment(compose_config(_overrides(suite, server, 2)), tmp_path / "on")

    assert not off.incomplete and not on.incomplete
    selected = _selected(tmp_path / "off")
    assert len(selected) > 20 and any(p.endswith(".png") for p in selected)
    assert _selected(tmp_path / "on") == selected
    assert on.metrics == off.metrics
    # The pools ran (their forkserver is this process's child) and stopped with the run: no worker is left.
    server_pid = _forkserver_pid()
    assert server_pid is not None
    assert _children(server_pid) == []


def _forkserver_pid() -> int | None:
    """The forkserver this process started (the parent of every pool worker), if any."""
    for pid in _children(os.getpid()):
        if b"multiprocessing.forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    return None


def _children(pid: int) -> list[int]:
    """Live (not zombie) child processes of ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _processes_with(token: str) -> list[int]:
    """Live processes (not zombies) whose environment carries ``token``: the run and everything it started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if token.encode() not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def _cli(
    suite: Path, server: FakeServer, run_dir: Path, token: str, cli_env: dict[str, str]
) -> subprocess.Popen[str]:
    env = {**cli_env, "MEDSTRAT_POOL_TEST": token, "OPENAI_API_KEY": "sk-fake"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    args = [*_overrides(suite, server, 2), f"hydra.run.dir={run_dir}"]
    return start_as_terminal_command(["-m", "experiments", *args], env, run_dir.parent)


def _gone(token: str, timeout_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := _processes_with(token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_ctrl_c_stops_the_run_and_its_pools(
    replay_suite: tuple[Path, ByDataset], tmp_path: Path, cli_env: dict[str, str]
):
    token = uuid.uuid4().hex
    with FakeServer(replay_suite[1], latency_s=0.3) as slow:
        cli = _cli(replay_suite[0], slow, tmp_path / "run", token, cli_env)
        # Wait until the run has its tool workers (the run, the forkserver and at least one worker).
        deadline = time.monotonic() + 120
        while len(_processes_with(token)) < 3 and time.monotonic() < deadline and cli.poll() is None:
            time.sleep(0.1)
        assert len(_processes_with(token)) >= 3, "the tool processes never started"
        cli.send_signal(signal.SIGINT)
        _, err = cli.communicate(timeout=120)
    assert cli.returncode == 130, err
    assert "Traceback" not in err
    assert _gone(token) == []

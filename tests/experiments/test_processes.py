"""``run.processes=N``: datasets in worker processes, merged as one process would, through the real LiteLLM
path (the fake server) and the real command line: in this process where a test checks the command's exit,
line and files (`cli_in_process`; the workers are processes all the same), fresh interpreters where it
checks signals and kills."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from cli_in_process import run_cli_in_process
from cli_process import nonblank_lines as _lines
from cli_process import start_as_terminal_command
from replay_turns import USAGE, three_turns

from agents.base import Task
from experiments import compose_config
from experiments.run.experiment import preflight, run_experiment
from experiments.run.loop import TasksJob
from experiments.run.processes import resolve_processes, split_tasks
from testbed.fakeserver import (
    ByDataset,
    Delay,
    FakeServer,
    Fault,
    Reply,
    Step,
    TurnScript,
    tool_call,
)

ROOT = Path(__file__).resolve().parents[2]


def _names(suite: Path) -> list[str]:
    return sorted(p.name for p in suite.iterdir() if (p / "VLM" / "random.txt").is_file())


def _litellm(server: FakeServer, *extra: str) -> list[str]:
    return [
        "agent=litellm",
        "agent.model=openai/gpt-4o-mini",
        f"agent.api_base={server.url}",
        "agent.temperature=0",
        "agent.batch_size=10",  # the scripts below are one conversation per dataset (10 samples)
        "agent.retry.max_attempts=2",
        "agent.retry.initial_s=0.01",
        "run.progress=false",
        "run.report=false",
        *extra,
    ]


def _selected(run: Path) -> dict[str, bytes]:
    folder = run / "selected"
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "agent1_data_organization" in p.parts
    }


# -- resolving and splitting ------------------------------------------------------------------------------


def test_auto_is_one_process_for_the_rules_agent_and_one_per_core_for_litellm(
    make_cfg, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    rules = preflight(make_cfg("agent=rules"), Path("/nonexistent-run")).agent
    llm = preflight(make_cfg("agent=litellm", "agent._target_=null"), Path("/nonexistent-run")).agent
    assert resolve_processes("auto", rules) == 1
    assert resolve_processes("auto", llm) == os.cpu_count()
    assert resolve_processes(None, llm) == os.cpu_count()  # a run folder from before the key existed
    assert resolve_processes(3, rules) == 3 and resolve_processes("2", llm) == 2


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", "true"])
def test_bad_values_are_refused_by_the_preflight(make_cfg, value: str) -> None:
    with pytest.raises(ValueError, match=r"run\.processes=.*expected auto or a whole number >= 1"):
        preflight(make_cfg(f"run.processes={value}"), Path("/nonexistent-run"))


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", "true"])
def test_a_bad_concurrency_is_refused_by_the_preflight_even_for_an_agent_that_runs_one_call(
    make_cfg, value: str
) -> None:
    # The rules agent runs one candidate at a time whatever run.concurrency says (agents.base.cpu_bound):
    # a 0 must still be refused, not pass for it and hang the next agent that honours it.
    with pytest.raises(ValueError, match=r"run\.concurrency=.*expected a whole number >= 1"):
        preflight(
            make_cfg("agent=rules", "agent._target_=null", f"run.concurrency={value}"),
            Path("/nonexistent-run"),
        )


@pytest.mark.parametrize(
    ("override", "line"),
    [
        (
            "run.processes=abc",
            "run.processes='abc': expected auto or a whole number >= 1 (worker processes for datasets)",
        ),
        ("run.concurrency=0", "run.concurrency=0: expected a whole number >= 1 (model calls in flight)"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2_before_any_folder(
    suite: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], override: str, line: str
) -> None:
    run = tmp_path / "run"
    done = run_cli_in_process(
        ["benchmark=dir", f"benchmark.root={suite}", override, f"hydra.run.dir={run}"],
        os.environ,
        tmp_path,
        capfd,
    )
    assert done.returncode == 2, done.stderr
    assert _lines(done.stderr) == [f"python -m experiments: error: {line}"]
    assert not run.exists()


def _job(sizes: Mapping[str, int], concurrency: int) -> TasksJob:
    from agents.base import ManifestEntry

    tasks = tuple(
        Task(Path("/d") / n, n, tuple(ManifestEntry(i, f"data/{i}") for i in range(k)), Path("/o") / n)
        for n, k in sizes.items()
    )
    return TasksJob(
        tasks=tasks, run_dir=Path("/o"), resume=False, profile="evidence", concurrency=concurrency
    )


def test_datasets_are_balanced_by_work_and_the_concurrency_is_shared() -> None:
    job = _job({"a": 40, "b": 10, "c": 25, "d": 20, "e": 5}, concurrency=64)
    shares = split_tasks(job, 2, candidates=5)
    loads = [sum(len(t.entries) for t in s.tasks) for s in shares]
    assert sorted(loads) == [50, 50]  # 40+10 | 25+20+5
    assert sum(s.concurrency for s in shares) == 64 and all(s.concurrency == 32 for s in shares)
    names = [[t.name for t in s.tasks] for s in shares]
    assert sorted(n for group in names for n in group) == sorted("abcde")
    assert all(group == sorted(group) for group in names)  # each worker keeps the run's order
    # Never more workers than datasets or slots; each share >= 1 and the shares sum to the total.
    assert len(split_tasks(job, 8, 5)) == 5
    tight = split_tasks(job, 4, 5)
    assert [s.concurrency for s in split_tasks(_job({"a": 90, "b": 10}, 3), 2)] == [2, 1]
    assert sum(s.concurrency for s in tight) == 64 and min(s.concurrency for s in tight) >= 1
    assert len(split_tasks(_job({"a": 1, "b": 1, "c": 1}, 2), 3)) == 2
    assert split_tasks(job, 1) == [job]


# -- the LiteLLM path, merged like one process ------------------------------------------------------------


@pytest.fixture(scope="module")
def scripts(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, TurnScript]:
    work = tmp_path_factory.mktemp("rules-reference")
    return {name: three_turns(suite / name, work / name) for name in _names(suite)}


def test_two_processes_write_what_one_process_writes(
    suite: Path, scripts: dict[str, TurnScript], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import multiprocessing.forkserver

    from medio.processes import worker_context

    # The fork server is started before the key is set (as when a notebook sets it later): the workers must
    # see the parent's environment as it is when the run starts, not the server's.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    worker_context()
    multiprocessing.forkserver.ensure_running()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    runs = {}
    with FakeServer(ByDataset(scripts)) as server:
        for n in (1, 2):
            cfg = compose_config(
                [
                    "strategy=s3",
                    "strategy.n=2",
                    "benchmark=dir",
                    f"benchmark.root={suite}",
                    *_litellm(server, f"run.processes={n}", "run.concurrency=4"),
                ]
            )
            outcome = run_experiment(cfg, tmp_path / f"p{n}")
            assert not outcome.incomplete, outcome.errors
            runs[n] = tmp_path / f"p{n}"
        calls = len(server.chat_requests)
    one, two = runs[1], runs[2]
    assert calls == 2 * (2 * len(scripts) * 3)  # both runs: datasets x 2 candidates x 3 turns
    for name in ("metrics.json", "metrics_strict.json"):
        assert json.loads((one / name).read_text()) == json.loads((two / name).read_text())
    assert _selected(one) == _selected(two) and _selected(one)
    u1, u2 = (json.loads((r / "usage.json").read_text()) for r in (one, two))
    for key in ("calls", "prompt_tokens", "completion_tokens", "cost_usd"):
        assert u1["total"][key] == pytest.approx(u2["total"][key]), key
    assert u2["total"]["calls"] == 2 * len(scripts) * 3
    assert list(u1["datasets"]) == list(u2["datasets"])  # merged in the run's order
    rows = [json.loads(line)["dataset"] for line in (two / "samples.jsonl").read_text().splitlines()]
    assert rows == [json.loads(line)["dataset"] for line in (one / "samples.jsonl").read_text().splitlines()]


# -- the command line ---------------------------------------------------------------------------------------


def _env(cli_env: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in cli_env.items() if not k.endswith(("_API_KEY", "_API_BASE"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["OPENAI_API_KEY"] = "sk-fake"
    return env


def _children(pid: int) -> list[int]:
    """The live worker processes of ``pid``: its forked children (same command line; not the short-lived
    helper programs a library may run)."""
    found = []
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return found
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            same = (stat.parent / "cmdline").read_bytes() == command
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z" and same:
            found.append(int(stat.parent.name))
    return found


def _gone(pids: list[int]) -> bool:
    return not any(Path(f"/proc/{p}").exists() and "Z" not in _state(p) for p in pids)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_a_fatal_provider_error_in_one_worker_stops_the_run_with_one_line(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # The command runs in this process (its workers are processes all the same): what is checked is the
    # workers' stop and the one line, not a property of a fresh parent (~6 CPU s for importing litellm).
    failing, waiting = _names(suite)
    # The other worker's answer would come after 10 minutes: a run that waited for it cannot end within the
    # bound below, which is many times the idle figure (a few seconds) so that load never trips it.
    slow = TurnScript([Delay(600, Reply(content="too late"))])
    script = ByDataset({failing: TurnScript([Fault(401, "Incorrect API key provided")]), waiting: slow})
    with FakeServer(script) as server:
        args = [
            "strategy=s0",
            "benchmark=dir",
            f"benchmark.root={suite}",
            f"hydra.run.dir={tmp_path / 'run'}",
        ]
        start = time.perf_counter()
        done = run_cli_in_process(
            [*args, *_litellm(server, "run.processes=2")], _env(cli_env), tmp_path, capfd
        )
        elapsed = time.perf_counter() - start
    assert done.returncode == 4, done.stderr
    (line,) = _lines(done.stderr)
    assert line.startswith(
        "python -m experiments: error: the run stopped: the provider rejected the credentials for "
        "openai/gpt-4o-mini"
    ), line
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert elapsed < 300  # the other worker was stopped, not waited for


def test_a_global_budget_stops_calls_in_every_process(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from agents.model.client import import_litellm

    price = import_litellm().model_cost["gpt-4o-mini"]
    per_call = USAGE[0] * price["input_cost_per_token"] + USAGE[1] * price["output_cost_per_token"]
    # Each candidate writes sample 0, then keeps listing folders: only the budget ends it.
    write = tool_call("write_annotation", {"index": 0, "annotation": {"record": {}}}, "w0")
    loop = Reply(tool_calls=(tool_call("list_dir", {"path": "data"}, "ls"),), usage=USAGE)
    budget = 9.5 * per_call
    run = tmp_path / "run"
    script = TurnScript([Reply(tool_calls=(write,), usage=USAGE)], after_end=loop)
    with FakeServer(script, latency_s=0.05) as server:  # calls of the two workers overlap
        args = ["strategy=s0", "benchmark=dir", f"benchmark.root={suite}", f"hydra.run.dir={run}"]
        extra = ("run.processes=2", "run.concurrency=2", f"run.budget_usd={budget}")
        done = run_cli_in_process([*args, *_litellm(server, *extra)], _env(cli_env), tmp_path, capfd)
        requests = server.chat_requests
    assert done.returncode == 3, done.stderr
    assert "INCOMPLETE" in done.stdout
    usage = json.loads((run / "usage.json").read_text())
    assert usage["budget"]["hit"] and json.loads((run / "metrics.json").read_text())["incomplete"]
    total = usage["total"]
    assert total["calls"] == len(requests)
    # One counter for the run: what was spent is the budget plus at most the two calls in flight.
    assert budget <= total["cost_usd"] <= budget + 2 * per_call + 1e-12
    per_dataset = [u["calls"] for u in usage["datasets"].values()]
    assert len(per_dataset) == 2 and min(per_dataset) >= 1  # both workers drew on the one budget


def test_an_interrupted_two_process_run_resumes_with_one_or_two(
    suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    quick, slow = _names(suite)
    run = tmp_path / "run"
    args = [
        "strategy=s3",
        "strategy.n=2",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "agent._target_=strategy_fakes.UnevenAgent",
        f"+agent.slow={slow}",
        "run.progress=false",
        "run.report=false",
    ]
    proc = start_as_terminal_command(
        ["-m", "experiments", *args, "run.processes=2", f"hydra.run.dir={run}"], cli_env, tmp_path
    )
    marker = run / "selected" / quick / "result.json"
    deadline = time.time() + 120
    while not marker.is_file() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.is_file(), "the quick dataset never finished"
    workers = _children(proc.pid)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    (line,) = _lines(err)
    assert line.startswith("interrupted — resume with: python -m experiments ") and "run.processes=2" in line
    assert "Traceback" not in err
    assert _gone(workers), "a worker outlived the interrupted run"
    assert not (run / "metrics.json").exists()
    # The workers' log records reach the run's log file, as one process writes them.
    log = (run / "__main__.log").read_text()
    assert re.search(rf"\]\[INFO\] - worker process [12] \(pid \d+\): {slow}; 4 model calls in flight", log)

    # The resumes (one and two processes, each on its own copy of the interrupted run) and the whole run they
    # are compared with run in this process: what they prove is what the run folder holds, not a property of a
    # fresh process (the interruption above is the real command's).
    whole = tmp_path / "whole"
    done = run_experiment(compose_config([*args, "+agent.slow_delay=0"]), whole)
    assert not done.incomplete, done.errors
    copies = {1: tmp_path / "run1", 2: run}
    shutil.copytree(run, copies[1])  # copy2: the marker keeps its mtime
    mtime = marker.stat().st_mtime_ns
    for processes, folder in copies.items():
        # The slow agent made quick is another config: run.resume=force takes the finished work anyway.
        resume = [*args, f"run.processes={processes}", "run.resume=force", "+agent.slow_delay=0"]
        resumed = run_experiment(compose_config(resume), folder)
        assert not resumed.incomplete, (processes, resumed.errors)
        assert (folder / "selected" / quick / "result.json").stat().st_mtime_ns == mtime  # reused, not redone
        assert json.loads((folder / "metrics.json").read_text()) == json.loads(
            (whole / "metrics.json").read_text()
        ), processes


def test_a_killed_worker_is_named_with_its_datasets_and_the_rest_is_kept(
    suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    quick, slow = _names(suite)
    run = tmp_path / "run"
    args = [
        "strategy=s3",
        "strategy.n=2",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "agent._target_=strategy_fakes.UnevenAgent",
        f"+agent.slow={slow}",
        "run.progress=false",
        "run.report=false",
        "run.processes=2",
        f"hydra.run.dir={run}",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "experiments", *args],
        env=cli_env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    marker = run / "selected" / quick / "result.json"
    deadline = time.time() + 120
    while (not marker.is_file() or len(_children(proc.pid)) != 1) and time.time() < deadline:
        assert proc.poll() is None
        time.sleep(0.05)
    (worker,) = _children(proc.pid)  # the quick dataset's worker has finished: this one runs the slow one
    os.kill(worker, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    (line,) = _lines(err)
    assert line.startswith("python -m experiments: error: worker process "), line
    assert f"(pid {worker}) died (killed by SIGKILL) running {slow}; finished work is kept" in line
    assert "run.resume=true" in line and quick not in line.split("resume with")[0]
    assert marker.is_file() and not (run / "metrics.json").exists()


def test_workers_end_when_the_parent_is_killed(suite: Path, cli_env: dict[str, str], tmp_path: Path) -> None:
    _, slow = _names(suite)
    args = [
        "strategy=s0",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "agent._target_=strategy_fakes.UnevenAgent",
        f"+agent.slow={slow}",
        "run.progress=false",
        "run.processes=2",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "experiments", *args], env=cli_env, cwd=tmp_path, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 120
    while not _children(proc.pid) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    workers = _children(proc.pid)
    assert workers, "no worker started"
    proc.kill()  # SIGKILL: the parent cannot stop its workers; they notice it is gone
    proc.wait()
    deadline = time.time() + 10
    while not _gone(workers) and time.time() < deadline:
        time.sleep(0.1)
    assert _gone(workers), "orphaned workers kept running"


class _FreezeWatch(ByDataset):
    """Answers from each dataset's script and notes, at every request, how many objects the collector has
    frozen in this process (the server thread runs in the run's own process when ``run.processes=1``)."""

    def __init__(self, scripts: Mapping[str, TurnScript]) -> None:
        super().__init__(scripts)
        self.frozen: list[int] = []

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        """Note the frozen count, then answer."""
        import gc

        self.frozen.append(gc.get_freeze_count())
        return super().__call__(request, serial)


def test_the_long_lived_heap_is_frozen_during_the_model_calls_and_released_after(
    suite: Path, scripts: dict[str, TurnScript], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    watch = _FreezeWatch({name: scripts[name] for name in _names(suite)[:2]})
    with FakeServer(watch) as server:
        cfg = compose_config(
            [
                "strategy=s0",
                "benchmark=dir",
                f"benchmark.root={suite}",
                f"benchmark.datasets=[{','.join(_names(suite)[:2])}]",
                *_litellm(server, "run.processes=1"),
            ]
        )
        outcome = run_experiment(cfg, tmp_path / "run")
    assert not outcome.incomplete, outcome.errors
    # The imported libraries (LiteLLM alone is ~10^5 objects) are out of the collector's walks while the
    # model is called, and back in its reach once the run's loop is over.
    assert watch.frozen and min(watch.frozen) > 50_000, watch.frozen[:5]
    assert gc.get_freeze_count() == 0

"""`python -m experiments agent=litellm` failing fast and loud, as a user meets it: a missing key, a rejected
key, a dead endpoint, a model that fails every candidate; and the budget priced with LiteLLM's local map.

The missing key runs the command in a fresh interpreter, exactly as a user types it (a fresh LiteLLM run to
the fake server is the README's offline recipe, `test_readme_recipe`). The rejected key runs it in this
process with ``run.processes`` at its default (worker processes for LiteLLM); the dead endpoint and the model
failing every candidate in this process and in one process (``run.processes=1``). In this process is
`cli_in_process`: the same exit code, output and one line, without litellm's import each time (~6 CPU s). A
fatal error raised in a worker process is also
`test_processes.test_a_fatal_provider_error_in_one_worker_stops_the_run_with_one_line`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process

from experiments import compose_config
from experiments.run.experiment import run_experiment
from testbed.fakeserver import FakeServer, Fault, Reply, TurnScript, tool_call


def _free_port() -> int:
    with socket.socket() as sock:  # bound then closed: nothing listens there afterwards
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


ROOT = Path(__file__).resolve().parents[2]


def _env_without_keys(cli_env: dict[str, str]) -> dict[str, str]:
    """The CLI environment with no provider key, running this checkout (not an installed snapshot)."""
    env = {k: v for k, v in cli_env.items() if not k.endswith(("_API_KEY", "_API_BASE"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "experiments", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, time.perf_counter() - start


def _run_here(
    args: list[str], env: dict[str, str], cwd: Path, capture: pytest.CaptureFixture[str]
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`_run` in this process, in one process (see the module docstring)."""
    start = time.perf_counter()
    done = run_cli_in_process([*args, "run.processes=1"], env, cwd, capture)
    return done, time.perf_counter() - start


def _litellm_args(suite: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        "strategy=s3",
        "strategy.n=2",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "agent=litellm",
        "agent.vision=false",  # decided: no "LiteLLM does not know whether ... takes images" line on stdout
        f"hydra.run.dir={run_dir}",
        "run.progress=false",
        "run.report=false",
        *extra,
    ]


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_a_missing_key_is_one_line_and_exit_2_before_any_work(
    suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    done, elapsed = _run(
        _litellm_args(suite, run_dir, "agent.model=openai/gpt-4o-mini"), _env_without_keys(cli_env), tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert _lines(done.stderr) == [
        "python -m experiments: error: no API key for openai/gpt-4o-mini: "
        "set OPENAI_API_KEY in the environment"
    ], done.stderr
    assert done.stdout == ""
    assert not (run_dir / "candidates").exists()
    print(f"missing key reported in {elapsed:.2f} s")
    # Not a timing test (perf/startup.py measures the start-up): the bound only catches a run that tried the
    # provider anyway (LiteLLM's retries take minutes), at 20x the idle figure so load cannot trip it.
    assert elapsed < 60


def test_a_rejected_key_stops_the_run_at_once_with_exit_4(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    server = FakeServer(TurnScript([Fault(401, "Incorrect API key provided")] * 5)).start()
    try:
        env = {**_env_without_keys(cli_env), "OPENAI_API_KEY": "sk-wrong"}
        args = _litellm_args(
            suite, tmp_path / "run", "agent.model=openai/fake-model", f"agent.api_base={server.url}"
        )
        done = run_cli_in_process(args, env, tmp_path, capfd)  # run.processes at its default
    finally:
        server.stop()
    assert done.returncode == 4, done.stderr
    (line,) = _lines(done.stderr)
    assert line.startswith(
        "python -m experiments: error: the run stopped: the provider rejected the credentials for "
        "openai/fake-model"
    )
    assert "sk-wrong" not in done.stderr + done.stdout
    # Not retried, and no later candidate asked again: at most the calls already in flight.
    assert 1 <= len(server.chat_requests) <= 8


def test_a_dead_endpoint_fails_after_the_retry_budget_with_one_line(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    env = {**_env_without_keys(cli_env), "OPENAI_API_KEY": "sk-fake"}
    args = _litellm_args(
        suite,
        tmp_path / "run",
        "agent.model=openai/fake-model",
        f"agent.api_base=http://127.0.0.1:{_free_port()}/v1",
        "agent.retry.max_attempts=3",
        "agent.retry.initial_s=0.05",
        "agent.retry.max_wait_s=0.1",
    )
    done, elapsed = _run_here(args, env, tmp_path, capfd)
    assert done.returncode == 4, done.stderr
    (line,) = _lines(done.stderr)
    assert "did not answer once in 3 attempts" in line and "Connection error" in line, line
    assert "Traceback" not in done.stderr and done.stdout == ""
    print(f"dead endpoint reported in {elapsed:.2f} s")


def test_when_every_candidate_fails_alike_the_run_says_so_and_exits_4(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # A bad request concerns one conversation, so it is not retried and not fatal by itself; but when no
    # candidate of the run writes anything, there is no table of zeros: one line and exit 4.
    server = FakeServer(TurnScript([Fault(400, "tools are not supported by this model")])).start()
    try:
        env = {**_env_without_keys(cli_env), "OPENAI_API_KEY": "sk-fake"}
        args = _litellm_args(
            suite, tmp_path / "run", "agent.model=openai/fake-model", f"agent.api_base={server.url}"
        )
        done, _ = _run_here(args, env, tmp_path, capfd)
        requests = len(server.chat_requests)
    finally:
        server.stop()
    assert done.returncode == 4, done.stderr
    (line,) = _lines(done.stderr)
    assert line.startswith(
        "python -m experiments: error: no candidate produced a sample; most common reason (4 of 4):"
    ), line
    assert "tools are not supported by this model" in line
    assert "E2E" not in done.stdout
    assert requests == 4  # one per candidate (2 datasets x 2), none retried


def test_the_budget_is_priced_with_litellms_local_map_and_stops_the_run(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents.model.client import import_litellm

    price = import_litellm().model_cost["gpt-4o-mini"]
    per_call = 1000 * price["input_cost_per_token"] + 100 * price["output_cost_per_token"]
    assert per_call > 0
    # Each candidate writes sample 0, then keeps listing folders: only the budget ends it.
    write = tool_call("write_annotation", {"index": 0, "annotation": {"record": {}}}, "w0")
    loop = Reply(tool_calls=(tool_call("list_dir", {"path": "data"}, "ls"),))
    server = FakeServer(TurnScript([Reply(tool_calls=(write,), usage=(1000, 100))], after_end=loop)).start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    budget = 6.5 * per_call
    cfg = compose_config(
        [
            "strategy=s0",
            "benchmark=dir",
            f"benchmark.root={suite}",
            "agent=litellm",
            "agent.model=openai/gpt-4o-mini",
            f"agent.api_base={server.url}",
            "run.progress=false",
            "run.report=false",
            "run.concurrency=1",
            f"run.budget_usd={budget}",
        ]
    )
    try:
        outcome = run_experiment(cfg, tmp_path / "run")
    finally:
        server.stop()
    usage = json.loads((tmp_path / "run" / "usage.json").read_text())
    assert outcome.incomplete and usage["budget"]["hit"]
    calls = usage["total"]["calls"]
    assert len(server.chat_requests) == calls
    # The loop's replies carry the server's estimated usage; the first call's is fixed. Every dollar is
    # LiteLLM's price for gpt-4o-mini from its local map (no fetch: LITELLM_LOCAL_MODEL_COST_MAP is set).
    expected = (
        usage["total"]["prompt_tokens"] * price["input_cost_per_token"]
        + usage["total"]["completion_tokens"] * price["output_cost_per_token"]
    )
    assert usage["total"]["cost_usd"] == pytest.approx(expected, rel=1e-9)
    assert budget <= usage["total"]["cost_usd"] < 2 * budget  # overshoot: the one call in flight
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    # Per candidate: the done-markers carry each candidate's own usage, and they sum to the strategy's.
    markers = [json.loads(p.read_text()) for p in (tmp_path / "run" / "candidates").rglob("candidate.json")]
    assert sum(m["usage"]["calls"] for m in markers) == calls


@pytest.mark.heavy
def test_litellm_is_imported_without_fetching_its_price_map(tmp_path: Path) -> None:
    # Every connection attempt of the process is recorded (an exception might be swallowed by litellm's
    # fallback, a record is not); the local price map must still price a known model.
    code = (
        "import sys\n"
        "attempts = []\n"
        "sys.addaudithook(lambda e, a: attempts.append(a) if e in ('socket.connect', 'socket.getaddrinfo') "
        "else None)\n"
        "from agents.model.client import import_litellm\n"
        "litellm = import_litellm()\n"
        "print(litellm.model_cost['gpt-4o-mini']['input_cost_per_token'] > 0, len(attempts))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "0"], done.stdout


def test_a_candidate_that_wrote_no_sample_is_failed_whatever_the_agent_says(tmp_path: Path) -> None:
    import asyncio

    from agents.base import Candidate, ManifestEntry, Task
    from strategies.context import call_agent

    async def says_ok(task: Task) -> Candidate:
        task.output_dir.mkdir(parents=True)
        (task.output_dir / "data_meta.json").write_text("{}")  # something, but no annotation
        return Candidate(task.output_dir, candidate_index=task.candidate_index, agent="quiet")

    task = Task(
        root=tmp_path, name="d", entries=(ManifestEntry(0, "data/x.png"),), out_dir=tmp_path / "selected"
    )
    cand = asyncio.run(call_agent(task, "0", says_ok))
    assert cand is not None and cand.status == "failed"
    assert cand.reason == "finished; no sample was written"
    marker = json.loads((cand.output_dir.parent / "candidate.json").read_text())
    assert marker["status"] == "failed" and marker["reason"] == cand.reason

"""A real model on a real server drives the LiteLLM agent: S0, S1, S3 with the LLM judge, and every way a
local server differs from a hosted API (a small window, prose instead of tool calls, one request at a time, a
crash).

Each case checks the exit code (0, or 3 when a candidate stayed incomplete) and that a failure is one line; no
command may run past `real_runs.COMMAND_TIMEOUT_S`. The model is tiny: what is asserted is what the framework
guarantees (schema-valid samples written by the model, bounded calls, honest accounting), never a score.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from real_runs import (
    RealServer,
    candidate_records,
    experiments,
    local_args,
    sample_rows,
    trace_calls,
)

from agents.llm.guided import answer_of

pytestmark = pytest.mark.realmodel


def _summary(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if "calls bought" in line)


def _model_wrote(run_dir: Path, index: int) -> bool:
    """Whether the selected annotation of sample ``index`` holds the answer of a model call of its maker (the
    values the guided mode asks the model for; the framework writes the record around them)."""
    for trace in (run_dir / "candidates").rglob("trace_*.jsonl"):
        out = trace.parent / "agent1_data_organization" / "standardized_annotations" / f"{index}.json"
        if not out.is_file():
            continue
        written = json.loads(out.read_text())
        for call in trace_calls(trace):
            for tool_call in call["message"].get("tool_calls") or []:  # type: ignore[union-attr]
                function = tool_call["function"]
                if function["name"] != "annotate":
                    continue
                try:  # an answer the agent re-asked for (not one JSON object) is no written sample
                    arguments = json.loads(function["arguments"], strict=False)
                except ValueError:
                    continue
                if arguments == answer_of(written):
                    return True
    return False


def test_s0_writes_schema_valid_samples_that_the_model_wrote(
    real_server: RealServer, real_env: dict[str, str], tmp_path: Path
) -> None:
    run = tmp_path / "s0"
    done = experiments(["strategy=s0", *local_args(real_server, run)], real_env, tmp_path)
    assert done.returncode in (0, 3), done.stderr[-2000:]
    rows = sample_rows(run)
    valid = [r for r in rows if r["scores"]["official"]["schema_valid_score"] == 1.0]  # type: ignore[index]
    assert valid, rows
    assert any(_model_wrote(run, int(r["index"])) for r in valid)  # type: ignore[arg-type]
    (record,) = candidate_records(run)
    assert str(record["reason"]).startswith("guided mode (agent.mode=guided)")
    usage = json.loads((run / "usage.json").read_text())["total"]
    assert usage["calls"] >= 1 + len(rows)  # a plan, then at least one call per sample


def test_s1_revises_with_the_same_model(
    real_server: RealServer, real_env: dict[str, str], tmp_path: Path
) -> None:
    run = tmp_path / "s1"
    done = experiments(
        ["strategy=s1", "strategy.rounds=1", *local_args(real_server, run)], real_env, tmp_path
    )
    assert done.returncode in (0, 3), done.stderr[-2000:]
    revisions = list((run / "candidates").rglob("trace_revise.jsonl"))
    assert revisions, "S1 ran no revision"
    calls = [c for trace in revisions for c in trace_calls(trace)]
    assert calls and all(c["message"].get("tool_calls") for c in calls)  # type: ignore[union-attr]
    assert any(str(c["conversation"]).startswith("revise ") for c in calls)
    assert sample_rows(run)


def test_s3_with_two_candidates_and_the_llm_judge(
    real_server: RealServer, real_env: dict[str, str], tmp_path: Path
) -> None:
    run = tmp_path / "s3"
    args = ["strategy=s3", "strategy.n=2", "selector=llm_judge", *local_args(real_server, run)]
    done = experiments(args, real_env, tmp_path)
    assert done.returncode in (0, 3), done.stderr[-2000:]
    records = candidate_records(run)
    assert len(records) == 2 and all(r["status"] != "failed" for r in records), records
    statuses = [r["decision"]["details"]["judge"]["status"] for r in sample_rows(run)]  # type: ignore[index]
    # The judge's tool is forced: the tiny model's verdicts are valid calls, not prose the selector drops.
    assert "chosen" in statuses and "invalid" not in statuses, statuses


def test_a_request_over_the_window_is_refused_by_the_server_and_sent_again_smaller(
    real_server: RealServer, real_env: dict[str, str], tmp_path: Path
) -> None:
    # A config that claims a window four times the server's, and a task instruction too long for the real
    # one: the first plan request overflows, the server names its window, the request is sent again within it.
    instruction = tmp_path / "standard.md"
    words = " ".join(f"rule{k}" for k in range(12_000))
    instruction.write_text(f"Standardize every sample into the MDS-Bench format.\n\n{words}\n")
    run = tmp_path / "overflow"
    args = [
        "strategy=s0",
        "agent.server.context_window=32768",
        f"agent.instructions.s0={instruction}",
        *local_args(real_server, run, samples=1),
    ]
    env = {**real_env, "MEDSTRAT_REQUEST_CACHE": str(tmp_path / "own-cache.sqlite")}
    done = experiments(args, env, tmp_path)
    assert done.returncode in (0, 3), done.stderr[-2000:]
    (trace,) = (run / "candidates").rglob("trace_generate.jsonl")
    trimmed = [json.loads(line) for line in trace.read_text().splitlines() if '"context_trimmed"' in line]
    assert trimmed and trimmed[0]["window"] == 8192  # what llama-cpp-python's error said
    plan_calls = [c for c in trace_calls(trace) if c["conversation"] == "plan"]
    assert plan_calls and int(plan_calls[-1]["prompt_tokens"]) < 8192  # type: ignore[call-overload]
    assert sample_rows(run)


def test_a_prompt_over_the_window_through_the_client_names_the_servers_window(
    real_server: RealServer,
) -> None:
    from litellm.exceptions import ContextWindowExceededError

    from agents.model.client import ModelClient
    from agents.model.config import ModelConfig

    config = ModelConfig("openai/local", api_base=real_server.url, api_key="no-key", timeout_s=120)
    client = ModelClient(config)
    huge = [{"role": "user", "content": " ".join(f"token{k}" for k in range(20_000))}]
    with pytest.raises(ContextWindowExceededError):
        asyncio.run(client.complete(huge, [], {"max_tokens": 8}, 0))
    assert client.context_window == 8192


def test_a_model_that_never_calls_a_tool_gets_the_guided_mode(
    real_server: RealServer, real_env: dict[str, str], tmp_path: Path
) -> None:
    run = tmp_path / "tools"
    args = ["strategy=s0", "agent.mode=tools", "agent.max_text_replies=1", *local_args(real_server, run)]
    done = experiments(args, real_env, tmp_path)
    assert done.returncode in (0, 3), done.stderr[-2000:]
    (record,) = candidate_records(run)
    assert str(record["reason"]).startswith(
        "guided mode (tools mode, dataset: 1 replies in a row without a tool"
    )
    assert sample_rows(run)


def test_the_cache_answers_a_rerun_with_zero_calls(
    real_server: RealServer, real_env: dict[str, str], tmp_path: Path
) -> None:
    # The session's request cache and the S0 test's config: the first run is answered by whatever that test
    # (or this one) bought; the second must buy nothing and score the same.
    first = experiments(["strategy=s0", *local_args(real_server, tmp_path / "a")], real_env, tmp_path)
    assert first.returncode in (0, 3), first.stderr[-2000:]
    again = experiments(["strategy=s0", *local_args(real_server, tmp_path / "b")], real_env, tmp_path)
    assert again.returncode == first.returncode
    summary = _summary(again.stdout)
    assert ": 0 calls bought," in summary and " 0 from the cache" not in summary, summary
    assert json.loads((tmp_path / "a" / "metrics.json").read_text()) == json.loads(
        (tmp_path / "b" / "metrics.json").read_text()
    )


def test_usage_is_what_the_server_reported(real_server: RealServer) -> None:
    from agents.model.client import ModelClient
    from agents.model.config import ModelConfig

    messages = [{"role": "user", "content": "Name one imaging modality."}]
    params = {"temperature": 0.0, "max_tokens": 12, "seed": 7}
    config = ModelConfig("openai/local", api_base=real_server.url, api_key="no-key", timeout_s=120)
    client = ModelClient(config)
    reply = asyncio.run(client.complete(messages, [], params, 0))
    body = json.dumps({"model": "local", "messages": messages, **params}).encode()
    request = urllib.request.Request(
        f"{real_server.url}/chat/completions", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        usage = json.loads(answer.read())["usage"]
    assert (reply.prompt_tokens, reply.completion_tokens) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    assert reply.prompt_tokens > 0 and 0 < reply.completion_tokens <= 12


def test_one_slot_serves_two_processes_and_three_candidates_without_a_timeout(
    real_server: RealServer, real_env: dict[str, str], tmp_path: Path
) -> None:
    # 90 s per call: a plan call takes 20-40 s here (60 s on a machine 1.5x slower), so the third of three
    # candidates queued on the server at once would wait past it; they queue on the slot instead (shared by
    # the run's two worker processes), and none is retried.
    run = tmp_path / "slots"
    args = [
        "strategy=s3",
        "strategy.n=3",
        "run.processes=2",
        "agent.timeout_s=90",
        "agent.retry.max_attempts=2",
        *local_args(real_server, run, samples=1),
    ]
    env = {**real_env, "MEDSTRAT_REQUEST_CACHE": str(tmp_path / "slot-cache.sqlite")}
    done = experiments(args, env, tmp_path)
    assert done.returncode in (0, 3), done.stderr[-2000:]
    records = candidate_records(run)
    assert len(records) == 3
    assert sum(int(r["usage"]["retries"]) for r in records) == 0  # type: ignore[index]
    # A candidate may fail on the tiny model's own answers (a segmentation sample whose mask it did not choose
    # is not written whole); none may fail on the server: a timeout or a provider error names itself.
    server = re.compile(r"time ?out|timed out|provider error|did not answer|stopped answering", re.IGNORECASE)
    faults = [r["reason"] for r in records if r["status"] == "failed" and server.search(str(r["reason"]))]
    assert not faults, faults


def _wait_for(path_glob: tuple[Path, str], process: subprocess.Popen[str], timeout_s: float) -> bool:
    root, pattern = path_glob
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        if any(root.glob(pattern)):
            return True
        time.sleep(0.5)
    return False


def test_kill_9_then_resume_finishes_and_buys_nothing_twice(
    real_server: RealServer, real_env: dict[str, str], tmp_path: Path
) -> None:
    run = tmp_path / "killed"
    env = {**real_env, "MEDSTRAT_REQUEST_CACHE": str(tmp_path / "kill-cache.sqlite")}
    args = ["strategy=s3", "strategy.n=2", *local_args(real_server, run, samples=1)]
    process = subprocess.Popen(
        [sys.executable, "-m", "experiments", *args],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Killed once the first sample annotation is on disk: mid-candidate, calls bought and cached.
        assert _wait_for(
            (run, "candidates/*/*/agent1_data_organization/standardized_annotations/*.json"), process, 400
        )
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    resumed = experiments([*args, "run.resume=true"], env, tmp_path)
    assert resumed.returncode in (0, 3), resumed.stderr[-2000:]
    summary = _summary(resumed.stdout)
    assert " 0 from the cache" not in summary  # the calls the killed run bought were not bought again
    assert len(candidate_records(run)) == 2 and sample_rows(run)


def test_a_server_that_is_down_is_one_line_and_exit_4(real_env: dict[str, str], tmp_path: Path) -> None:
    from real_runs import free_port

    args = [
        "strategy=s0",
        "agent=local",
        f"agent.api_base=http://127.0.0.1:{free_port()}/v1",
        "agent.server.wait_s=0",
        "agent.retry.max_attempts=2",
        "agent.retry.initial_s=0.1",
        "benchmark.datasets=[synth-dermoscopy-jpg]",
        "benchmark.samples=1",
        f"hydra.run.dir={tmp_path / 'down'}",
    ]
    done = experiments(args, real_env, tmp_path, timeout=120)
    assert done.returncode == 4
    lines = [line for line in done.stderr.splitlines() if line.strip() and "%|" not in line]
    assert len(lines) == 1 and "did not answer" in lines[0], lines


def test_the_server_puts_no_weight_in_an_extra_buffer_type(real_server: RealServer) -> None:
    # agents.serve: every weight in the plain CPU buffer (llama.cpp logs "CPU_Mapped model buffer"); never the
    # AMX or CPU_REPACK buffer (those kernels fault on some Intel VMs that list AMX), whatever this CPU has.
    log = real_server.log.read_text(errors="replace")
    assert "extra buffer types off" in log
    assert "CPU_Mapped model buffer size" in log
    for word in ("AMX model buffer", "CPU_REPACK model buffer", "preferred buffer type"):
        assert word not in log, word

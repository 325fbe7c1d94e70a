"""Provider faults and misbehaving models: retries, clean stops, failures that spare the run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_scripts import USAGE, make_agent, make_task, standard_script, standard_steps

from agents.base import Limits
from agents.budget import Budget
from agents.model.retry import RetryPolicy
from testbed.fakeserver import (
    Delay,
    Fault,
    Garbage,
    Reply,
    TurnScript,
    assistant_turn,
    tool_call,
    with_faults,
)


def _candidate_of(request: Mapping[str, Any]) -> int:
    prompt = request["messages"][2]["content"]
    return int(prompt.split("Candidate: ", 1)[1].split("\n", 1)[0])


async def _generate_many(agent, tasks):
    return await asyncio.gather(*(agent.generate(t) for t in tasks))


def test_thirty_percent_rate_limits_and_timeouts_are_retried_to_completion(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    script = with_faults(standard_script(), rate=0.3, faults=(Fault(429, "slow down"), Delay(0.5)), seed=3)
    server = fake_server(script)
    agent = make_agent(server, timeout_s=0.25, retry=RetryPolicy(12, 0.001, 0.005, 2.0, 0.001))
    base = make_task(seg_dataset, tmp_path / "c0")
    tasks = [base.for_candidate(k, tmp_path / f"c{k}") for k in range(4)]

    candidates = asyncio.run(_generate_many(agent, tasks))

    assert [c.status for c in candidates] == ["ok"] * 4, [c.reason for c in candidates]
    assert all(c.usage.calls == 8 for c in candidates)
    retries = sum(c.usage.retries for c in candidates)
    assert retries > 0
    assert len(server.chat_requests) >= 32 + retries - 4  # timed-out requests may still be in flight
    for c in candidates:
        assert (c.output_dir / "data_meta.json").is_file()


def test_repeated_invalid_json_fails_that_candidate_only(seg_dataset: Path, tmp_path: Path, fake_server):
    good = standard_script()
    bad = assistant_turn(tool_call("render", '{"index": 0, "source": ', "bad_json"))

    def script(request: Mapping[str, Any], serial: int):
        return Reply(tool_calls=bad.tool_calls) if _candidate_of(request) == 1 else good(request, serial)

    server = fake_server(script)
    agent = make_agent(server, max_failed_turns=3)
    base = make_task(seg_dataset, tmp_path / "c0")
    ok, failed = asyncio.run(_generate_many(agent, [base, base.for_candidate(1, tmp_path / "c1")]))

    assert ok.status == "ok" and ok.usage.calls == 8
    assert failed.status == "failed"
    assert "3 turns in a row with every tool call failed" in failed.reason and "invalid_json" in failed.reason
    assert failed.usage.calls == 3
    told = [
        m["content"]
        for r in server.chat_requests
        if _candidate_of(r) == 1
        for m in r["messages"]
        if m["role"] == "tool"
    ]
    assert told and all("not valid JSON" in t for t in told)


def test_unknown_tool_is_reported_and_the_model_can_recover(seg_dataset: Path, tmp_path: Path, fake_server):
    steps = standard_steps()
    steps.insert(0, assistant_turn(tool_call("run_shell", {"cmd": "rm -rf /"}, "unk")))
    server = fake_server(TurnScript(steps))
    candidate = asyncio.run(make_agent(server).generate(make_task(seg_dataset, tmp_path / "c0")))
    assert candidate.status == "ok"
    told = next(m for m in server.chat_requests[1]["messages"] if m.get("tool_call_id") == "unk")["content"]
    assert "Unknown tool 'run_shell'" in told and "list_dir" in told


def test_wrongly_typed_arguments_are_explained_to_the_model(seg_dataset: Path, tmp_path: Path, fake_server):
    turn = assistant_turn(tool_call("render", {"index": "zero", "source": 5}, "typed"))
    server = fake_server(TurnScript([turn, assistant_turn(tool_call("finish", {}))]))
    asyncio.run(make_agent(server).generate(make_task(seg_dataset, tmp_path / "c0")))
    told = next(m for m in server.chat_requests[1]["messages"] if m.get("tool_call_id") == "typed")["content"]
    assert told.startswith("Invalid arguments for render") and "index" in told and "source" in told


def test_a_model_that_never_calls_finish_is_bounded_by_max_turns(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    # A text-only model is nudged, then stopped after max_text_replies (3) replies, before max_turns (4).
    server = fake_server(TurnScript([], after_end=Reply(content="Let me think about it.", usage=USAGE)))
    task = make_task(seg_dataset, tmp_path / "c0", limits=Limits(max_turns=4))
    candidate = asyncio.run(make_agent(server).generate(task))
    # Then the guided mode asks its plan three ways (forced, response_format, with a note): 6 calls in all.
    assert len(server.chat_requests) == 6 and candidate.usage.calls == 6
    assert candidate.status == "failed" and "3 replies in a row without a tool call" in candidate.reason
    assert server.chat_requests[2]["messages"][-1]["content"].startswith("Please continue by calling")


def test_tool_call_limit_stops_cleanly_and_keeps_what_was_written(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server = fake_server(standard_script())
    task = make_task(seg_dataset, tmp_path / "c0", limits=Limits(max_tool_calls=6))
    candidate = asyncio.run(make_agent(server).generate(task))
    assert candidate.status == "incomplete" and "max_tool_calls (6) reached" in candidate.reason
    assert candidate.missing == (1,) and "1 of 2 samples missing: [1]" in candidate.reason
    assert (candidate.output_dir / "standardized_annotations" / "0.json").is_file()
    assert not (candidate.output_dir / "data_meta.json").exists()


def test_run_budget_stops_candidates_cleanly(seg_dataset: Path, tmp_path: Path, fake_server):
    steps = standard_steps()
    steps.insert(0, assistant_turn(tool_call("write_annotation", {"index": 0, "annotation": {"record": {}}})))
    server = fake_server(
        TurnScript([Reply(content=s.content, tool_calls=s.tool_calls, usage=USAGE) for s in steps])
    )
    budget = Budget(max_tokens=300)  # 120 tokens per call: the third call crosses it
    agent = make_agent(server, budget=budget)
    first = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))
    second = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c1", candidate_index=1)))

    assert first.status == "incomplete" and "run budget of 300 tokens spent" in first.reason
    assert first.usage.calls == 3 and budget.spent.tokens == 360
    assert (first.output_dir / "standardized_annotations" / "0.json").is_file()
    assert second.usage.calls == 0 and second.status == "failed" and "budget" in second.reason
    assert len(server.chat_requests) == 3


def test_non_transient_provider_error_fails_the_candidate_without_retrying(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server = fake_server(TurnScript([Fault(400, "bad request: context too long")]))
    candidate = asyncio.run(make_agent(server).generate(make_task(seg_dataset, tmp_path / "c0")))
    assert candidate.status == "failed" and "provider error" in candidate.reason
    assert "BadRequestError" in candidate.reason and len(server.chat_requests) == 1


def test_garbage_bodies_are_retried_then_fail_with_a_reason(seg_dataset: Path, tmp_path: Path, fake_server):
    # The endpoint answered once, so it is alive: the garbage fails this candidate, not the run.
    server = fake_server(TurnScript([assistant_turn(tool_call("list_dir", {"path": "data"})), Garbage()]))
    agent = make_agent(server, retry=RetryPolicy(3, 0.001, 0.002, 2.0, 0.001))
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))
    assert candidate.status == "failed" and "provider error" in candidate.reason
    assert len(server.chat_requests) == 1 + 3
    events = [json.loads(line)["event"] for line in candidate.trace_path.read_text().splitlines()]
    assert events[0] == "start" and "provider_error" in events and events[-1] == "end"

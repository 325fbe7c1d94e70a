"""Issue 21: each way a model misbehaves ends in a bounded number of calls, with the right status and reason.

Each test scripts the model through the fake provider (the real LiteLLM path) on the two-sample dataset.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from agent_scripts import (
    DATA_META,
    FAST_RETRY,
    USAGE,
    annotation,
    make_agent,
    make_task,
    render_calls,
    standard_steps,
)

from agents.base import Limits, ManifestEntry, Task
from agents.model.retry import RetryPolicy
from testbed.fakeserver import Fault, Reply, TurnScript, assistant_turn, tool_call


def _events(candidate: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(candidate.trace_path).read_text().splitlines()]


def _arguments_are_json_objects(requests: list[dict[str, Any]]) -> bool:
    for request in requests:
        for message in request["messages"]:
            for call in message.get("tool_calls") or []:
                if not isinstance(json.loads(call["function"]["arguments"]), dict):
                    return False
    return True


def test_a_model_that_never_calls_finish_stops_at_max_turns_incomplete_with_the_missing_samples(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    write0 = assistant_turn(tool_call("write_annotation", {"index": 0, "annotation": annotation(0)}, "w0"))
    looking = Reply(tool_calls=(tool_call("list_dir", {"path": "data"}, "again"),), usage=USAGE)
    server = fake_server(TurnScript([write0], after_end=looking))
    task = make_task(seg_dataset, tmp_path / "c0", limits=Limits(max_turns=5))
    candidate = asyncio.run(make_agent(server).generate(task))
    assert len(server.chat_requests) == 5 == candidate.usage.calls
    assert candidate.status == "incomplete" and candidate.missing == (1,)
    assert "max_turns (5) reached" in candidate.reason and "1 of 2 samples missing: [1]" in candidate.reason
    assert "no data_meta.json" in candidate.reason
    end = _events(candidate)[-1]
    assert end["event"] == "end" and end["status"] == "incomplete" and end["missing"] == [1]


def test_finish_with_a_sample_missing_is_answered_once_with_the_list_then_accepted(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    steps = [
        assistant_turn(
            *render_calls(0), tool_call("write_annotation", {"index": 0, "annotation": annotation(0)})
        ),
        assistant_turn(tool_call("write_data_meta", {"data_meta": DATA_META}, "meta")),
        assistant_turn(tool_call("finish", {}, "finish1")),
        assistant_turn(tool_call("finish", {}, "finish2")),
    ]
    server = fake_server(TurnScript(steps))
    candidate = asyncio.run(make_agent(server).generate(make_task(seg_dataset, tmp_path / "c0")))
    assert len(server.chat_requests) == 4
    told = next(m for m in server.chat_requests[3]["messages"] if m.get("tool_call_id") == "finish1")[
        "content"
    ]
    assert told.startswith("Not finished yet") and "no annotation for samples [1]" in told
    assert candidate.status == "incomplete" and candidate.missing == (1,)


def test_finish_with_a_schema_invalid_sample_names_it(seg_dataset: Path, tmp_path: Path, fake_server):
    broken = {**annotation(1), "record": "not an object"}
    steps = [
        assistant_turn(
            *render_calls(0), tool_call("write_annotation", {"index": 0, "annotation": annotation(0)})
        ),
        assistant_turn(*render_calls(1), tool_call("write_annotation", {"index": 1, "annotation": broken})),
        assistant_turn(tool_call("write_data_meta", {"data_meta": DATA_META}, "meta")),
        assistant_turn(tool_call("finish", {}, "finish1")),
        assistant_turn(tool_call("finish", {}, "finish2")),
    ]
    server = fake_server(TurnScript(steps))
    candidate = asyncio.run(make_agent(server).generate(make_task(seg_dataset, tmp_path / "c0")))
    told = next(m for m in server.chat_requests[4]["messages"] if m.get("tool_call_id") == "finish1")[
        "content"
    ]
    assert "sample 1: schema: record" in told and "sample 0" not in told
    assert candidate.status == "ok" and len(server.chat_requests) == 5


def test_text_only_replies_end_the_candidate_after_three_calls_and_three_guided_ones(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    # Three prose replies end the tools mode; the guided mode's plan is then asked as a forced call, by
    # response_format, and once more with a note: a model that answers nothing but prose costs six calls.
    server = fake_server(TurnScript([], after_end=Reply(content="I would inspect the files.")))
    candidate = asyncio.run(make_agent(server).generate(make_task(seg_dataset, tmp_path / "c0")))
    assert len(server.chat_requests) == 6
    assert [("tool_choice" in r, "response_format" in r) for r in server.chat_requests[3:]] == [
        (True, False),
        (False, True),
        (False, True),
    ]
    assert candidate.status == "failed"
    assert candidate.reason.startswith(
        "guided mode (tools mode, dataset: 3 replies in a row without a tool call)"
    )
    assert "write_plan: no JSON object in the model's answers" in candidate.reason


def test_a_harmless_refusal_among_good_calls_does_not_count_against_the_candidate(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    # Five "no such file" refusals beside one good call, in each of five turns: the model is making progress.
    refusals = [tool_call("read_text", {"path": f"data/nope{k}.txt"}, f"nope{k}") for k in range(5)]
    probing = [assistant_turn(tool_call("list_dir", {"path": "data"}, f"ok{t}"), *refusals) for t in range(5)]
    server = fake_server(TurnScript([*probing, *standard_steps()]))
    candidate = asyncio.run(make_agent(server).generate(make_task(seg_dataset, tmp_path / "c0")))
    assert candidate.status == "ok", candidate.reason


def test_turns_whose_every_call_fails_end_the_candidate(seg_dataset: Path, tmp_path: Path, fake_server):
    refusals = assistant_turn(*(tool_call("read_text", {"path": f"data/nope{k}.txt"}) for k in range(3)))
    server = fake_server(TurnScript([], after_end=refusals))
    candidate = asyncio.run(make_agent(server).generate(make_task(seg_dataset, tmp_path / "c0")))
    assert len(server.chat_requests) == 4  # max_failed_turns
    assert candidate.status == "failed" and "4 turns in a row with every tool call failed" in candidate.reason


def test_a_5_mb_argument_is_refused_unrun_kept_out_of_the_history_and_traced_short(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    huge = {"index": 0, "annotation": {**annotation(0), "blob": "x" * 5_000_000}}
    # Fixed usage: the server's estimate would count the 5 MB as 1.25M completion tokens (over max_tokens).
    steps = [Reply(tool_calls=(tool_call("write_annotation", huge, "huge"),), usage=USAGE), *standard_steps()]
    server = fake_server(TurnScript(steps))
    candidate = asyncio.run(make_agent(server).generate(make_task(seg_dataset, tmp_path / "c0")))
    assert len(server.chat_requests) == 1 + len(standard_steps()), candidate.reason
    told = next(m for m in server.chat_requests[1]["messages"] if m.get("tool_call_id") == "huge")["content"]
    assert told.startswith("Not run: the arguments of write_annotation are") and "over the limit" in told
    # The refused call's arguments never go back to the provider; the next requests stay small.
    assert max(len(json.dumps(r)) for r in server.chat_requests[1:]) < 200_000
    assert candidate.status == "ok"  # the standard steps then wrote the real annotation
    written = (candidate.output_dir / "standardized_annotations" / "0.json").read_text()
    assert "blob" not in written
    trace = Path(candidate.trace_path)
    assert trace.stat().st_size < 200_000
    long = next(e for e in _events(candidate) if e.get("event") == "tool" and e["call_id"] == "huge")[
        "arguments"
    ]
    assert set(long) == {"head", "tail", "length", "sha256"} and long["length"] > 5_000_000


def test_a_malformed_argument_string_never_stays_in_the_history(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    bad = assistant_turn(tool_call("render", '{"index": 0, "source": ', "bad"))
    server = fake_server(TurnScript([bad, *standard_steps()]))
    candidate = asyncio.run(make_agent(server).generate(make_task(seg_dataset, tmp_path / "c0")))
    assert candidate.status == "ok"
    assert len(server.chat_requests) == 1 + len(standard_steps())
    assert _arguments_are_json_objects(server.chat_requests)
    stored = next(
        c for m in server.chat_requests[1]["messages"] for c in m.get("tool_calls") or [] if c["id"] == "bad"
    )
    assert "invalid_arguments" in json.loads(stored["function"]["arguments"])


def test_a_context_window_error_trims_the_history_and_retries(seg_dataset: Path, tmp_path: Path, fake_server):
    steps: list[Any] = list(standard_steps())
    meta_turn = steps[6]
    faulted: list[int] = []

    def once(request: Mapping[str, Any]) -> Any:
        if not faulted:
            faulted.append(1)
            return Fault(400, "This model's maximum context length is 8192 tokens")
        return meta_turn

    steps[6] = once
    server = fake_server(TurnScript(steps))
    agent = make_agent(server, keep_results=4, max_images=2)
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))
    assert candidate.status == "ok", candidate.reason
    assert len(server.chat_requests) == len(standard_steps()) + 1
    before, after = server.chat_requests[6], server.chat_requests[7]
    assert len(json.dumps(after)) < len(json.dumps(before))  # the retry sent a smaller window
    trimmed = [e for e in _events(candidate) if e["event"] == "context_trimmed"]
    assert [(e["keep_results"], e["max_images"]) for e in trimmed] == [(2, 1)]


def test_a_rate_limit_retry_after_is_honoured_within_the_retry_budget(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    steps: list[Any] = list(standard_steps())
    limited: list[int] = []

    def first_limited(request: Mapping[str, Any]) -> Any:
        if not limited:
            limited.append(1)
            return Fault(429, "slow down", retry_after=0.01)
        return steps_copy[0]

    steps_copy = list(steps)
    steps[0] = first_limited
    server = fake_server(TurnScript(steps))
    policy = RetryPolicy(max_attempts=3, initial_s=0.001, max_wait_s=1.0, jitter_s=0.001)
    candidate = asyncio.run(
        make_agent(server, retry=policy).generate(make_task(seg_dataset, tmp_path / "c0"))
    )
    assert candidate.status == "ok" and candidate.usage.retries == 1, candidate.reason


def test_a_retry_after_beyond_the_longest_wait_gives_up_at_once(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server = fake_server(TurnScript([Fault(429, "come back in an hour", retry_after=3600)]))
    policy = RetryPolicy(max_attempts=5, initial_s=0.001, max_wait_s=1.0, jitter_s=0.001)
    candidate = asyncio.run(
        make_agent(server, retry=policy).generate(make_task(seg_dataset, tmp_path / "c0"))
    )
    assert len(server.chat_requests) == 1  # not retried 5 times in a second against an hour's wait
    assert candidate.status == "failed" and "RateLimitError" in candidate.reason


def test_vision_auto_warns_once_for_a_model_litellm_does_not_know(fake_server, caplog):
    server = fake_server(TurnScript([]))
    from agents.llm.agent import LiteLLMAgent
    from agents.llm.options import AgentOptions
    from agents.model.config import ModelConfig

    unknown = ModelConfig("openai/vision-unknown-abc", api_base=server.url, api_key="sk-x")
    with caplog.at_level(logging.WARNING, logger="agents.llm.agent"):
        first = LiteLLMAgent(unknown, AgentOptions(vision=None))
        second = LiteLLMAgent(unknown, AgentOptions(vision=None))
    lines = [r.getMessage() for r in caplog.records if "vision" in r.getMessage()]
    assert len(lines) == 1 and "openai/vision-unknown-abc" in lines[0]
    assert first.vision is False and second.vision is False
    known = ModelConfig("openai/gpt-4o", api_base=server.url, api_key="sk-x")
    assert LiteLLMAgent(known, AgentOptions(vision=None)).vision is True
    with pytest.raises(ValueError, match=r"agent\.vision must be auto, true or false"):
        AgentOptions(vision="maybe")  # type: ignore[arg-type]


def test_vision_true_sends_image_parts_for_an_unknown_model(seg_dataset: Path, tmp_path: Path, fake_server):
    server = fake_server(TurnScript(standard_steps()))
    asyncio.run(make_agent(server, vision="true").generate(make_task(seg_dataset, tmp_path / "c0")))
    parts = [
        part
        for m in server.chat_requests[4]["messages"]
        if isinstance(m.get("content"), list)
        for part in m["content"]
        if part.get("type") == "image_url"
    ]
    assert len(parts) == 1 and parts[0]["image_url"]["url"].startswith("data:image/png;base64,")


def test_retry_policy_sees_the_header_litellm_attaches(seg_dataset: Path, tmp_path: Path, fake_server):
    from agents.model.retry import retry_after_s

    server = fake_server(TurnScript([Fault(429, "slow", retry_after=7)]))
    agent = make_agent(server, retry=RetryPolicy(max_attempts=1))
    with pytest.raises(Exception) as caught:
        asyncio.run(agent.client.complete([{"role": "user", "content": "hi"}], [], {}, 0))
    assert retry_after_s(caught.value) == 7.0
    assert FAST_RETRY.max_wait_s < 7.0


def test_a_model_that_only_explores_pays_for_about_one_conversation_not_for_every_phase(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    # Ten samples at batch_size 8: plan, two batches and meta, each allowed 20 turns (80 requests before; 240
    # at the default 60, the count).
    looking = Reply(tool_calls=(tool_call("list_dir", {"path": "data"}, "look"),), usage=USAGE)
    server = fake_server(TurnScript([], after_end=looking))
    entries = tuple(ManifestEntry(i, f"data/case{i % 2}/image.nii.gz") for i in range(10))
    limits = Limits(max_turns=20, max_tool_calls=200, max_tokens=10_000_000)
    task = Task(root=seg_dataset, name="tiny_seg", entries=entries, out_dir=tmp_path / "c0", limits=limits)
    candidate = asyncio.run(make_agent(server).generate(task))

    # The plan's 20 turns, then each batch a quarter of them to write something; meta is not started.
    assert len(server.chat_requests) == candidate.usage.calls == 20 + 5 + 5
    assert candidate.status == "failed"
    assert "plan: max_turns (20) reached" in candidate.reason
    assert "batch 1/2: nothing written in 5 turns" in candidate.reason
    assert "not started: meta: 3 conversations ended on a limit with nothing written" in candidate.reason

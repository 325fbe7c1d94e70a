"""The LiteLLM agent driven end to end by the fake server through the real LiteLLM path."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
from agent_scripts import DATA_META, PRICE, USAGE, annotation, make_agent, make_task, standard_script
from PIL import Image

from agents.instructions import BUNDLED
from agents.model.cache import RequestCache


def test_scripted_run_standardizes_the_dataset_and_accounts_usage(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server = fake_server(standard_script())
    agent = make_agent(server)
    task = make_task(seg_dataset, tmp_path / "run" / "c0")

    candidate = asyncio.run(agent.generate(task))

    assert candidate.status == "ok", candidate.reason
    out = candidate.output_dir
    assert out == tmp_path / "run" / "c0" / "agent1_data_organization"
    for i in (0, 1):
        image = np.asarray(Image.open(out / "images" / f"{i}.png"))
        mask = np.asarray(Image.open(out / "masks" / f"{i}.png"))
        assert image.shape[:2] == mask.shape == (16, 20)  # NIfTI (X=20, Y=16) -> rows Y, columns X
        assert set(np.unique(mask)) == {0, 1, 2}  # the mask's largest slice, ids kept unscaled
        written = json.loads((out / "standardized_annotations" / f"{i}.json").read_text())
        assert written == annotation(i)
    assert json.loads((out / "data_meta.json").read_text()) == DATA_META

    calls = 8
    assert candidate.usage.calls == calls
    assert candidate.usage.prompt_tokens == calls * USAGE[0]
    assert candidate.usage.completion_tokens == calls * USAGE[1]
    assert candidate.usage.cost_usd == PRICE.cost(*USAGE) * calls
    assert candidate.usage.retries == 0 and candidate.usage.cache_hits == 0
    assert len(server.chat_requests) == calls
    assert candidate.trace_path is not None and candidate.trace_path.is_file()


def test_messages_sent_carry_roles_tool_call_ids_and_image_parts(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server = fake_server(standard_script())
    asyncio.run(make_agent(server).generate(make_task(seg_dataset, tmp_path / "c0")))
    requests = server.chat_requests

    first = requests[0]
    # The task instruction (our bundled S0 text here) and the dataset's manifest are separate user messages.
    assert [m["role"] for m in first["messages"]] == ["system", "user", "user"]
    assert first["messages"][1]["content"] == BUNDLED["s0"]
    assert "tiny_seg" in first["messages"][2]["content"]
    assert "data/case1/image.nii.gz" in first["messages"][2]["content"]
    assert {t["function"]["name"] for t in first["tools"]} == {
        "list_dir",
        "tree",
        "find",
        "grep",
        "read_text",
        "table_head",
        "inspect",
        "render",
        "view_image",
        "write_annotation",
        "write_data_meta",
        "list_output",
        "read_output",
        "edit_fields",
        "finish",
    }
    assert first["model"] == "fake-model"

    last = requests[-1]["messages"]
    # Every assistant tool call is answered by a tool message with its id, in order, before anything else.
    for k, message in enumerate(last):
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [c["id"] for c in message["tool_calls"]]
            answers = last[k + 1 : k + 1 + len(ids)]
            assert [a["role"] for a in answers] == ["tool"] * len(ids)
            assert [a["tool_call_id"] for a in answers] == ids
    listing = next(m for m in last if m.get("tool_call_id") == "c_list")["content"]
    assert "case0/" in listing and "labels.csv" in listing and "VLM" not in listing
    inspected = json.loads(next(m for m in last if m.get("tool_call_id") == "c_inspect")["content"])
    assert inspected["format"] == "nifti" and str(seg_dataset) not in json.dumps(inspected)

    # view_image (turn 4) is followed by a user message holding the PNG as an image part.
    after_view = requests[4]["messages"]
    image_msgs = [m for m in after_view if m["role"] == "user" and isinstance(m["content"], list)]
    assert len(image_msgs) == 1
    parts = image_msgs[0]["content"]
    assert parts[0]["type"] == "text" and "c_view" in parts[0]["text"]
    assert parts[1]["type"] == "image_url" and parts[1]["image_url"]["url"].startswith(
        "data:image/png;base64,"
    )


def test_text_only_model_gets_a_textual_image_summary(seg_dataset: Path, tmp_path: Path, fake_server):
    server = fake_server(standard_script())
    asyncio.run(make_agent(server, vision=False).generate(make_task(seg_dataset, tmp_path / "c0")))
    messages = server.chat_requests[4]["messages"]
    assert not any(isinstance(m.get("content"), list) for m in messages)
    summary = json.loads(next(m for m in messages if m.get("tool_call_id") == "c_view")["content"])
    assert summary["size"] == [20, 16] and "cannot see images" in summary["note"]


def test_vision_support_is_asked_from_litellm_and_unknown_models_are_text_only(fake_server):
    server = fake_server(standard_script())
    from agents.llm.agent import LiteLLMAgent
    from agents.model.config import ModelConfig

    unknown = ModelConfig("openai/no-such-model-xyz", api_base=server.url, api_key="sk-x")
    assert LiteLLMAgent(unknown).vision is False
    assert LiteLLMAgent(ModelConfig("openai/gpt-4o", api_base=server.url, api_key="sk-x")).vision is True


def test_rerun_with_the_cache_sends_no_request_and_reports_the_same_usage(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server = fake_server(standard_script())
    cache_path = tmp_path / "cache.sqlite"
    first = asyncio.run(make_agent(server, cache=cache_path).generate(make_task(seg_dataset, tmp_path / "a")))
    sent = len(server.chat_requests)
    server.reset()

    second = asyncio.run(
        make_agent(server, cache=RequestCache(cache_path)).generate(make_task(seg_dataset, tmp_path / "b"))
    )

    assert sent == 8 and server.chat_requests == []
    assert second.status == "ok"
    assert second.usage.cache_hits == 8 == second.usage.calls
    for field in ("prompt_tokens", "completion_tokens", "cost_usd", "calls"):
        assert getattr(second.usage, field) == getattr(first.usage, field)
    files_a = sorted(p.relative_to(first.output_dir) for p in first.output_dir.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(second.output_dir) for p in second.output_dir.rglob("*") if p.is_file())
    assert files_a == files_b and len(files_a) == 7
    for rel in files_a:
        assert (first.output_dir / rel).read_bytes() == (second.output_dir / rel).read_bytes()


def test_candidate_index_makes_distinct_cache_entries(seg_dataset: Path, tmp_path: Path, fake_server):
    server = fake_server(standard_script())
    agent = make_agent(server, cache=tmp_path / "cache.sqlite")
    base = make_task(seg_dataset, tmp_path / "c0")
    asyncio.run(agent.generate(base))
    server.reset()
    again = asyncio.run(agent.generate(base.for_candidate(1, tmp_path / "c1")))
    assert again.usage.cache_hits == 0 and len(server.chat_requests) == 8


def test_revise_copies_the_candidate_and_sends_the_feedback(seg_dataset: Path, tmp_path: Path, fake_server):
    from agents.base import Feedback
    from testbed.fakeserver import Reply, TurnScript, assistant_turn, tool_call

    server = fake_server(standard_script())
    agent = make_agent(server)
    first = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))
    fixed = annotation(1) | {"record": {**annotation(1)["record"], "dataset_name": "tiny_seg_fixed"}}
    server.script = TurnScript(
        [
            assistant_turn(tool_call("write_annotation", {"index": 1, "annotation": fixed})),
            assistant_turn(tool_call("finish", {})),
        ],
        after_end=Reply(content="?"),
    )
    server.reset()
    feedback = Feedback("Fix the dataset name.", ((1, "record.dataset_name", "should be tiny_seg_fixed"),))

    revised = asyncio.run(
        agent.revise(make_task(seg_dataset, tmp_path / "r0"), first, feedback, ["record.dataset_name"])
    )

    assert revised.status == "ok" and revised.output_dir != first.output_dir
    assert json.loads((revised.output_dir / "standardized_annotations" / "1.json").read_text()) == fixed
    assert (revised.output_dir / "images" / "0.png").read_bytes() == (
        first.output_dir / "images" / "0.png"
    ).read_bytes()
    assert json.loads((first.output_dir / "standardized_annotations" / "1.json").read_text()) == annotation(1)
    prompt = server.chat_requests[0]["messages"][-1]["content"]
    assert "record.dataset_name" in prompt and "should be tiny_seg_fixed" in prompt

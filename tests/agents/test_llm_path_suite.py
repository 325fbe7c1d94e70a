"""Issue 6 acceptance: the LiteLLM agent standardizes bundled datasets end to end through the fake server.

The fake server replays the rules baseline's decisions as tool calls (`testbed.fakeserver.replay`), so the LLM
path (LiteLLM client, tool loop, sandboxed tools) must write exactly what the rules agent writes, account the
server's usage at the configured price, send well-formed tool conversations, and score the same E2E.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from agent_scripts import PRICE, make_agent
from PIL import Image

from agents.base import Candidate, Limits, Task
from testbed.fakeserver import FakeServer
from testbed.fakeserver.replay import ReplayScript, replay_script

# One dataset per task family the issue names: 2D classification, 3D segmentation, detection.
DATASETS = ("synth-dermoscopy-jpg", "synth-brain-mr-nifti", "synth-polyp-coco-png")
USAGE = (300, 40)  # tokens the fake server reports per answer
RULES_RUN, LLM_RUN = "rules_reference", "litellm_replay"


@dataclass
class Replayed:
    """One dataset standardized by the rules agent and, through the fake server, by the LiteLLM agent."""

    root: Path
    script: ReplayScript
    candidate: Candidate
    requests: list[dict[str, Any]]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from testbed.synth.suite import generate_suite

    root = tmp_path_factory.mktemp("suite")
    generate_suite(root, size="small", only=list(DATASETS))
    return root


@pytest.fixture(scope="module")
def replayed(suite: Path) -> dict[str, Replayed]:
    from benchmark.discover import Dataset

    out = {}
    for name in DATASETS:
        root = suite / name
        script = replay_script(root, work_dir=root / "VLM" / RULES_RUN, usage=USAGE)
        with FakeServer(script) as server:
            task = Task.from_dataset(
                Dataset.from_root(root),
                root / "VLM" / LLM_RUN,
                limits=Limits(max_turns=len(script.steps) + 2, max_tool_calls=200, max_tokens=10**8),
            )
            candidate = asyncio.run(make_agent(server).generate(task))
            out[name] = Replayed(root, script, candidate, server.chat_requests)
    return out


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _pixels(path: Path) -> np.ndarray:
    with Image.open(path) as img:
        return np.asarray(img)


@pytest.mark.parametrize("name", DATASETS)
def test_every_rules_sample_is_expressible_through_the_tools(replayed: dict[str, Replayed], name: str):
    script = replayed[name].script
    assert script.skipped == []
    assert script.mismatches == {}
    assert len(script.render_args) == 10


@pytest.mark.parametrize("name", DATASETS)
def test_llm_path_writes_the_rules_outputs_pixel_for_pixel(replayed: dict[str, Replayed], name: str):
    run = replayed[name]
    assert run.candidate.status == "ok", run.candidate.reason
    assert run.candidate.reason is None
    got, want = run.candidate.output_dir, run.script.reference_dir
    assert _files(got) == _files(want)
    for rel in _files(want):
        if rel.endswith(".png"):
            assert np.array_equal(_pixels(got / rel), _pixels(want / rel)), rel
        else:
            assert json.loads((got / rel).read_text()) == json.loads((want / rel).read_text()), rel


def _conversation_turns(script: ReplayScript) -> int:
    """Model calls of the phased replay: plan, 4 per sample + finish per batch of 8, the dataset JSON."""
    batches = [sorted(script.sample_steps)[k : k + 8] for k in range(0, len(script.sample_steps), 8)]
    return len(script.plan_steps) + sum(4 * len(b) + 1 for b in batches) + len(script.meta_steps)


@pytest.mark.parametrize("name", DATASETS)
def test_usage_is_the_servers_tokens_at_the_configured_price(replayed: dict[str, Replayed], name: str):
    run = replayed[name]
    turns = _conversation_turns(run.script)
    assert turns == 2 + (4 * 8 + 1) + (4 * 2 + 1) + 2
    usage = run.candidate.usage
    assert usage.calls == turns == len(run.requests)
    assert (usage.prompt_tokens, usage.completion_tokens) == (turns * USAGE[0], turns * USAGE[1])
    assert usage.cost_usd == pytest.approx(turns * PRICE.cost(*USAGE), rel=1e-12)
    assert usage.retries == 0 and usage.cache_hits == 0


def _phase(request: dict[str, Any]) -> str:
    prompts = [str(m.get("content")) for m in request["messages"]]
    prompt = next(p for p in prompts if p.startswith("Dataset name:"))
    return next(line for line in prompt.splitlines() if line.startswith("Phase:"))


@pytest.mark.parametrize("name", DATASETS)
def test_messages_answer_every_tool_call_and_show_each_image(replayed: dict[str, Replayed], name: str):
    run = replayed[name]
    first = run.requests[0]["messages"]
    assert [m["role"] for m in first] == ["system", "user", "user"]  # tool guide, instruction, task
    assert name in first[2]["content"]
    # Issue 21: a plan conversation, one per batch of 8 samples, one for data_meta.json.
    phases = [_phase(r) for r in run.requests]
    assert sorted(set(phases)) == ["Phase: batch 1 of 2", "Phase: batch 2 of 2", "Phase: meta", "Phase: plan"]
    sent_ids: set[str] = set()
    shown_images: set[str] = set()
    for request in run.requests:
        messages = request["messages"]
        for k, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            ids = [c["id"] for c in message["tool_calls"]]
            sent_ids.update(ids)
            answers = messages[k + 1 : k + 1 + len(ids)]
            assert [(a["role"], a["tool_call_id"]) for a in answers] == [("tool", i) for i in ids]
        parts = [
            part
            for m in messages
            if m["role"] == "user" and isinstance(m["content"], list)
            for part in m["content"]
            if part.get("type") == "image_url"
        ]
        assert len(parts) <= 4  # the default per-request image budget
        shown_images.update(p["image_url"]["url"] for p in parts)
        # The model never sees an absolute path of this machine.
        assert str(run.root) not in json.dumps(messages)
    # Every scripted call but the last finish of each conversation was answered in a later request.
    expected = {c["id"] for step in run.script.steps for c in step.tool_calls if c["id"] != "finish"}  # type: ignore[union-attr]
    assert expected | {"plan_list"} <= sent_ids
    assert len(shown_images) >= len(set(run.script.sample_steps)) - 1  # one view_image per sample


@pytest.mark.parametrize("name", DATASETS)
def test_official_scores_equal_the_rules_agents(replayed: dict[str, Replayed], name: str):
    from benchmark.score import score_dataset

    results = score_dataset(replayed[name].root, models=[RULES_RUN, LLM_RUN], profile="official")
    rules, llm = results["models"][RULES_RUN], results["models"][LLM_RUN]
    assert rules["error"] is None and llm["error"] is None
    assert llm["metrics"] == rules["metrics"]
    assert llm["metrics"]["E2E"] == pytest.approx(1.0)

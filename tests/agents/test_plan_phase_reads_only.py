"""The plan conversation of a dataset larger than one batch only looks and writes the plan: it is offered no
tool that writes a sample (or runs code), and a call to one is refused unrun; every sample is written by its
batch."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agent_scripts import make_agent

from agents.base import Task
from testbed.fakeserver import FakeServer, assistant_turn, tool_call
from testbed.fakeserver.replay import replay_script

DATASET = "synth-dermoscopy-jpg"
WRITERS = {"write_annotation", "write_data_meta", "render", "edit_fields", "run_python", "finish"}


def _phase(request: dict) -> str:
    prompt = next(
        (m["content"] for m in request["messages"] if str(m.get("content", "")).startswith("Dataset name:")),
        "",
    )
    return next((line[6:].strip() for line in prompt.splitlines() if line.startswith("Phase:")), "")


def test_the_plan_conversation_cannot_write_a_sample(tmp_path: Path) -> None:
    from benchmark.discover import Dataset
    from testbed.synth.suite import generate_suite

    generate_suite(tmp_path / "suite", only=[DATASET], samples=10)
    root = tmp_path / "suite" / DATASET
    script = replay_script(root, work_dir=tmp_path / "rules", check=False)
    annotation = json.loads(
        (tmp_path / "rules" / "agent1_data_organization" / "standardized_annotations" / "0.json").read_text()
    )
    # A model that tries to convert during the plan, then explores and writes the plan as it should.
    script.plan_steps = [
        assistant_turn(
            tool_call("write_annotation", {"index": 0, "annotation": annotation}, "plan_write_0"),
            tool_call("render", {"index": 0, "source": "data/x.jpg"}, "plan_render_0"),
        ),
        *script.plan_steps,
    ]
    task = Task.from_dataset(Dataset.from_root(root), tmp_path / "llm")
    with FakeServer(script) as server:
        candidate = asyncio.run(make_agent(server).generate(task))
        requests = server.chat_requests

    plan = [r for r in requests if _phase(r) == "plan"]
    assert plan, "a 10-sample dataset with batch_size 8 starts with a plan conversation"
    offered = {t["function"]["name"] for t in plan[0]["tools"]}
    assert "write_plan" in offered and "inspect" in offered and "list_dir" in offered
    assert not offered & WRITERS
    answers = [m for m in plan[1]["messages"] if m.get("role") == "tool"]
    assert [a["tool_call_id"] for a in answers] == ["plan_write_0", "plan_render_0"]
    assert all("Unknown tool" in str(a["content"]) for a in answers)
    # The refused calls wrote nothing; the batches wrote every sample.
    assert candidate.status == "ok", candidate.reason
    written = sorted(int(p.stem) for p in (task.output_dir / "standardized_annotations").glob("*.json"))
    assert written == list(task.indices)
    batch_tools = {
        t["function"]["name"] for r in requests if _phase(r).startswith("batch") for t in r["tools"]
    }
    assert {"write_annotation", "render"} <= batch_tools

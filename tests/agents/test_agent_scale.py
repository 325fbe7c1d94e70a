"""Issue 21: what a request carries does not grow with the dataset, for generate and for revise.

The bundled dermoscopy dataset is built at two sizes (``samples=``), the rules baseline's decisions are served
as tool calls (`testbed.fakeserver.replay`), and the LiteLLM agent runs with its default conversation design.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agent_scripts import make_agent

from agents.base import Candidate, Feedback, Task
from agents.llm.context import count_images, text_chars
from agents.llm.phases import plan_text
from testbed.fakeserver import FakeServer
from testbed.fakeserver.replay import replay_script

DATASET = "synth-dermoscopy-jpg"


@dataclass
class Run:
    root: Path
    task: Task
    candidate: Candidate
    requests: list[dict[str, Any]]
    server: FakeServer


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Run]:
    from benchmark.discover import Dataset
    from testbed.synth.suite import generate_suite

    out = {}
    for n in (10, 30):
        base = tmp_path_factory.mktemp(f"n{n}")
        generate_suite(base, only=[DATASET], samples=n)
        root = base / DATASET
        server = FakeServer(replay_script(root, work_dir=base / "rules", check=False)).start()
        task = Task.from_dataset(Dataset.from_root(root), base / "llm")
        candidate = asyncio.run(make_agent(server).generate(task))
        out[n] = Run(root, task, candidate, server.chat_requests, server)
    yield out
    for run in out.values():
        run.server.stop()


def _prompt_tokens_per_sample(run: Run) -> float:
    return run.candidate.usage.prompt_tokens / len(run.task.entries)


def test_both_sizes_finish_with_every_sample_and_the_dataset_json(runs: dict[int, Run]):
    for n, run in runs.items():
        assert run.candidate.status == "ok", run.candidate.reason
        written = list((run.candidate.output_dir / "standardized_annotations").glob("*.json"))
        assert len(written) == n and (run.candidate.output_dir / "data_meta.json").is_file()


def test_largest_request_and_images_per_request_do_not_grow_with_the_samples(runs: dict[int, Run]):
    largest = {n: max(text_chars(r["messages"]) for r in run.requests) for n, run in runs.items()}
    assert largest[30] <= 1.05 * largest[10]
    assert all(count_images(r["messages"]) <= 4 for run in runs.values() for r in run.requests)
    # Per sample the cost stays flat (the plan and the dataset JSON are paid once, the batches per sample).
    assert _prompt_tokens_per_sample(runs[30]) <= 1.25 * _prompt_tokens_per_sample(runs[10])


def test_each_batch_conversation_names_only_its_own_samples(runs: dict[int, Run]):
    run = runs[30]
    for request in run.requests:
        prompt = next(
            m["content"] for m in request["messages"] if str(m.get("content")).startswith("Dataset")
        )
        if "Phase: batch" not in prompt:
            continue
        listed = prompt.split("Samples of this batch", 1)[1].split("Output schema", 1)[0]
        lines = [line for line in listed.splitlines() if "\t" in line]
        assert 1 <= len(lines) <= 8


def test_the_plan_is_kept_beside_the_candidate(runs: dict[int, Run]):
    plan = json.loads((runs[30].task.out_dir / "plan.json").read_text())
    assert set(plan) == {"source_rule", "label_source", "slice_rule", "class_table", "conventions"}
    batch = next(r for r in runs[30].requests if "Phase: batch 2 of 4" in json.dumps(r["messages"][:3]))
    assert plan_text(plan) in batch["messages"][2]["content"]


def test_a_revision_with_items_revisits_only_the_named_samples(runs: dict[int, Run], tmp_path: Path):
    run = runs[30]
    run.server.reset()
    feedback = Feedback(
        "Fix these.", ((3, "tasks.classification.label", "check it"), (21, "record", "check"))
    )
    task = Task.from_dataset(_dataset(run.root), tmp_path / "rev")
    revised = asyncio.run(make_agent(run.server).revise(task, run.candidate, feedback, ["tasks"]))
    assert revised.status == "ok", revised.reason
    prompts = [json.dumps(r["messages"][:4]) for r in run.server.chat_requests]
    assert all("Phase: batch 1 of 1" in p for p in prompts)  # one batch of the two samples, no plan, no meta
    assert "3\\tdata/" in prompts[0] and "21\\tdata/" in prompts[0] and "4\\tdata/" not in prompts[0]


def _dataset(root: Path) -> Any:
    from benchmark.discover import Dataset

    return Dataset.from_root(root)

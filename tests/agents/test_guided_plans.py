"""``agent.plans``: the guided plan step samples k plans through the real LiteLLM path and keeps the one the
raw data supports best (`validator.plan_support`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agent_scripts import make_agent, make_task

from agents.llm.guided import PLANS_FILE
from agents.llm.options import AgentOptions
from testbed.fakeserver.schema_answers import SchemaAnswers
from testbed.fakeserver.script import Reply, tool_call

# seg_dataset: NIfTI volumes with masks beside them and a labels.csv naming "tumor".
CONTRADICTED = {  # classes nothing in the data names
    "dataset_name": "tiny_seg",
    "modality": "CT",
    "task_type": "classification",
    "dimension": "3D",
    "classes": ["pneumonia"],
}
SUPPORTED = {**CONTRADICTED, "task_type": "segmentation", "classes": ["background", "tumor"]}
UNPARSABLE = {**CONTRADICTED, "task_type": "ocr"}


class PlanAnswers:
    """`SchemaAnswers`, but the plan requests are answered by ``plans`` in turn."""

    def __init__(self, *plans: dict[str, Any]) -> None:
        self.plans = list(plans)
        self.answers = SchemaAnswers("tool_choice")

    def __call__(self, request: dict[str, Any], serial: int) -> Any:
        if request["tool_choice"]["function"]["name"] == "write_plan" and self.plans:
            return Reply(tool_calls=(tool_call("write_plan", self.plans.pop(0), call_id=f"p{serial}"),))
        return self.answers(request, serial)


def _generated(
    fake_server: Any, plans: int, *answers: dict[str, Any], out: Path, root: Path
) -> tuple[Any, Any]:
    """The fake server answering the plan requests with ``answers``, and the candidate a guided agent sampling
    ``plans`` plans generated on it."""
    server = fake_server(PlanAnswers(*answers))
    agent = make_agent(server, mode="guided", vision=False, plans=plans)
    return server, asyncio.run(agent.generate(make_task(root, out)))


def _plan_requests(server: Any) -> list[dict[str, Any]]:
    return [r for r in server.chat_requests if r["tool_choice"]["function"]["name"] == "write_plan"]


def test_three_plans_are_three_seeds_and_the_best_supported_is_kept(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server, candidate = _generated(
        fake_server, 3, CONTRADICTED, SUPPORTED, UNPARSABLE, out=tmp_path / "c0", root=seg_dataset
    )

    assert candidate.status == "ok", candidate.reason
    seeds = [r["seed"] for r in _plan_requests(server)]
    assert len(seeds) == 3 and len(set(seeds)) == 3
    assert json.loads((tmp_path / "c0" / "plan.json").read_text())["task_type"] == "segmentation"
    sampled = json.loads((tmp_path / "c0" / PLANS_FILE).read_text())
    assert sampled["kept"] == 1
    scores = [p["score"] for p in sampled["plans"]]
    assert scores[1] == 1.0 and scores[0] < 1.0 and scores[2] is None
    assert "pneumonia" in sampled["plans"][0]["reasons"][0]
    assert "not usable" in sampled["plans"][2]["reasons"][0]
    traced = [json.loads(line) for line in candidate.trace_path.read_text().splitlines()]
    assert [t["kept"] for t in traced if t["event"] == "plans"] == [1]


def test_one_plan_is_the_one_request_made_without_the_option(seg_dataset: Path, tmp_path: Path, fake_server):
    default = fake_server(PlanAnswers(SUPPORTED))
    asyncio.run(
        make_agent(default, mode="guided", vision=False).generate(make_task(seg_dataset, tmp_path / "a"))
    )
    three = fake_server(PlanAnswers(SUPPORTED, SUPPORTED, SUPPORTED))
    agent = make_agent(three, mode="guided", vision=False, plans=3)
    asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "b")))
    one = fake_server(PlanAnswers(SUPPORTED))
    asyncio.run(
        make_agent(one, mode="guided", vision=False, plans=1).generate(make_task(seg_dataset, tmp_path / "c"))
    )

    assert len(_plan_requests(one)) == 1
    assert _plan_requests(one) == _plan_requests(default) == _plan_requests(three)[:1]
    assert not (tmp_path / "c" / PLANS_FILE).exists()
    # Equal support: the earliest plan is kept.
    assert json.loads((tmp_path / "b" / PLANS_FILE).read_text())["kept"] == 0


def test_the_task_option_takes_precedence_over_the_agent_option(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    server = fake_server(PlanAnswers(CONTRADICTED, SUPPORTED))
    agent = make_agent(server, mode="guided", vision=False)
    task = make_task(seg_dataset, tmp_path / "c0", options={"plans": 2})
    candidate = asyncio.run(agent.generate(task))

    assert candidate.status == "ok", candidate.reason
    assert len(_plan_requests(server)) == 2
    assert json.loads((tmp_path / "c0" / "plan.json").read_text())["task_type"] == "segmentation"


def test_fewer_than_one_plan_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^agent.plans must be 1 or more, got 0$"):
        AgentOptions(plans=0)


def test_strategy_plans_asks_the_agent_for_n_plans_through_the_task(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    from strategies import ProfileValidator, strategies

    server = fake_server(PlanAnswers(CONTRADICTED, SUPPORTED))
    agent = make_agent(server, mode="guided", vision=False)
    run = strategies.get("plans")(n=2)
    result = asyncio.run(
        run(make_task(seg_dataset, tmp_path / "selected"), agent, ProfileValidator("evidence"))
    )

    assert result.strategy == "plans" and len(result.candidates) == 1
    assert len(_plan_requests(server)) == 2
    kept = json.loads((result.candidates[0].output_dir.parent / "plan.json").read_text())
    assert kept["task_type"] == "segmentation"


def test_a_kept_plan_the_data_contradicts_is_asked_again_with_the_reasons(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    # Two contradicted plans; asked again with the check's reasons, the model answers the supported one.
    server, candidate = _generated(
        fake_server, 2, CONTRADICTED, CONTRADICTED, SUPPORTED, out=tmp_path / "c0", root=seg_dataset
    )

    assert candidate.status == "ok", candidate.reason
    asked = _plan_requests(server)
    assert len(asked) == 3
    last = asked[-1]["messages"][-1]["content"]
    assert "## Your plan" in last and "pneumonia" in last and "contradict" in last
    sampled = json.loads((tmp_path / "c0" / PLANS_FILE).read_text())
    assert sampled["kept"] == 2 and sampled["plans"][2]["revised_from"] == 0
    assert json.loads((tmp_path / "c0" / "plan.json").read_text())["task_type"] == "segmentation"


def test_a_supported_plan_is_not_asked_again(seg_dataset: Path, tmp_path: Path, fake_server):
    server, _candidate = _generated(
        fake_server, 2, SUPPORTED, CONTRADICTED, out=tmp_path / "c0", root=seg_dataset
    )

    assert len(_plan_requests(server)) == 2

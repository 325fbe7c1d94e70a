"""S2's field whitelist on plain documents, and the resume/budget rules of every agent call."""

from __future__ import annotations

import asyncio
from pathlib import Path

from strategy_fakes import NoisyOracleAgent

from agents.base import Task
from strategies._context import DONE_MARKER, BudgetGate, RunContext, call_agent, use
from strategies._mechanics import generate_many
from strategies._whitelist import merge_whitelisted


def test_only_whitelisted_paths_change_and_each_revert_is_logged() -> None:
    before = {"media": {"task_type": "detection", "modality": "CT"}, "tasks": {"detection": {"boxes": [1]}}}
    after = {
        "media": {"task_type": "classification", "modality": "MR"},
        "tasks": {"classification": {"label": 1}, "detection": {}},
        "new_block": {"x": 1},
    }
    log: list[str] = []
    merged = merge_whitelisted(before, after, ["media.task_type", "tasks"], "", log)
    assert merged == {
        "media": {"task_type": "classification", "modality": "CT"},
        "tasks": {"classification": {"label": 1}, "detection": {}},
    }
    assert sorted(log) == [
        "reverted media.modality: not in the whitelist",
        "reverted new_block: not in the whitelist",
    ]


def test_a_whitelisted_leaf_may_be_created_under_a_missing_parent() -> None:
    merged = merge_whitelisted({"a": 1}, {"a": 2, "b": {"c": 3, "d": 4}}, ["b.c"], "", [])
    assert merged == {"a": 1, "b": {"c": 3}}


def _gen(task: Task, agent: NoisyOracleAgent, ctx: RunContext, n: int) -> list:
    async def main() -> list:
        use(ctx)
        return await generate_many(agent, task, n)

    return asyncio.run(main())


def test_resume_reuses_finished_candidates_and_redoes_unfinished_ones(task: Task, tmp_path: Path) -> None:
    ctx = RunContext(candidates_root=tmp_path / "cands", resume=True)
    first = NoisyOracleAgent()
    _gen(task, first, ctx, 3)
    (tmp_path / "cands" / task.name / "1" / DONE_MARKER).unlink()  # as if killed before the marker landed
    again = NoisyOracleAgent()
    made = _gen(task, again, RunContext(candidates_root=tmp_path / "cands", resume=True), 3)
    assert again.calls == [("generate", 1)]
    assert [c.candidate_index for c in made] == [0, 1, 2]
    assert made[0].usage.prompt_tokens == 100  # usage is restored from the marker


def test_a_spent_budget_starts_no_new_call_but_keeps_what_finished(task: Task, tmp_path: Path) -> None:
    budget = BudgetGate(max_tokens=150)
    ctx = RunContext(candidates_root=tmp_path / "c", semaphore=asyncio.Semaphore(1), budget=budget)
    agent = NoisyOracleAgent(tokens=100)

    async def main() -> list:
        use(ctx)
        ctx.semaphore = asyncio.Semaphore(1)  # bound to this loop
        return await generate_many(agent, task, 5)

    made = asyncio.run(main())
    assert len(made) == 2 and budget.hit and budget.tokens == 200


def test_call_agent_without_a_runner_puts_candidates_beside_the_selected_folder(task: Task) -> None:
    cand = asyncio.run(call_agent(task, "7", NoisyOracleAgent().generate, candidate_index=7))
    assert (
        cand is not None
        and cand.output_dir
        == task.out_dir.with_name("selected.candidates") / "7" / "agent1_data_organization"
    )

"""S0-S4 on a real (small) synthetic dataset with a protocol test agent and the real evidence validator."""

from __future__ import annotations

import asyncio
import json

import pytest
from strategy_fakes import NoisyOracleAgent, oracle_dir

from agents.base import Candidate, Feedback, Task, Usage
from strategies import ProfileValidator, strategies
from strategies.mechanics import read_annotation
from strategies.selectors import SelectorError, build_selector


def run(strategy_name: str, task: Task, agent: object, **options: object):
    return asyncio.run(strategies.get(strategy_name)(**options)(task, agent, ProfileValidator("evidence")))


def test_s0_keeps_the_single_candidate_exactly_as_written(task: Task) -> None:
    result = run("s0", task, NoisyOracleAgent(p=0.5))
    assert len(result.candidates) == 1 and result.usage.calls == 1
    cand = result.candidates[0].output_dir
    for index in task.indices:
        assert read_annotation(task.output_dir, index) == read_annotation(cand, index)
    assert {d.candidate for d in result.decisions.values()} <= {0, None}


def test_s3_makes_n_distinct_candidates_and_keeps_the_best_validated_per_sample(task: Task) -> None:
    agent = NoisyOracleAgent(p=0.5)
    result = run("s3", task, agent, n=4)
    assert sorted(k for _, k in agent.calls) == [0, 1, 2, 3]
    assert result.usage.calls == 4 and result.usage.prompt_tokens == 400
    validator = ProfileValidator("evidence")
    reports = [validator.validate(c, task) for c in result.candidates]
    final = validator.validate(task.output_dir, task)
    for index, decision in result.decisions.items():
        best = max(r.samples[index].total for r in reports)
        assert decision.score == best
        assert final.samples[index].total >= best - 1e-9
        ann = read_annotation(task.output_dir, index)
        assert ann is not None and ann["record"]["image_path"] == f"images/{index}.png"
    meta = json.loads((task.output_dir / "data_meta.json").read_text())
    assert meta["data_volume"]["total"] == len(task.indices)


def test_s3_early_stop_ends_generation_once_every_sample_clears_the_threshold(task: Task) -> None:
    agent = NoisyOracleAgent(p=0.0)
    result = run("s3", task, agent, n=5, early_stop_at=0.5)
    assert len(result.candidates) == 1 and len(agent.calls) == 1


def _fragile(index, candidates, reports, t):  # type: ignore[no-untyped-def]
    if index == 3:
        raise RuntimeError("boom")
    return 0


def test_a_selector_that_raises_stops_the_strategy_naming_it_the_sample_and_the_error(task: Task) -> None:
    with pytest.raises(SelectorError) as caught:
        run("s3", task, NoisyOracleAgent(p=0.5), n=3, selector=_fragile)
    assert str(caught.value).startswith(
        f"selector _fragile failed on {task.name} sample 3: RuntimeError: boom"
    )
    assert "selector.on_error=fallback" in str(caught.value)


def test_with_on_error_fallback_a_selector_that_raises_falls_back_to_validator_max_there(task: Task) -> None:
    fragile = build_selector(_fragile, on_error="fallback")
    result = run("s3", task, NoisyOracleAgent(p=0.5), n=3, selector=fragile)
    assert result.decisions[3].fallback and "boom" in result.decisions[3].reason
    assert not any(d.fallback for i, d in result.decisions.items() if i != 3)
    assert all(d.candidate == 0 for i, d in result.decisions.items() if i != 3)


def test_s2_applies_whitelisted_fixes_and_reverts_everything_else(task: Task) -> None:
    # The agent's revise restores the perfect answer AND rewrites modality_primary, which is not whitelisted.
    result = run("s2", task, NoisyOracleAgent(p=1.0))
    assert any("reverted context.sample.modality_primary" in n for n in result.notes)
    base = result.candidates[0].output_dir
    for index in task.indices:
        ann = read_annotation(task.output_dir, index)
        assert ann is not None
        assert ann["context"]["sample"]["modality_primary"] != "Revised-Modality"
        truth = read_annotation(oracle_dir(task), index)
        assert truth is not None
        assert ann["media_geometry"]["media"]["task_type"] == truth["media_geometry"]["media"]["task_type"]
        assert (
            ann["context"]["sample"]["modality_primary"]
            == read_annotation(base, index)["context"]["sample"]["modality_primary"]
        )  # type: ignore[index]


class UnchangedReviser(NoisyOracleAgent):
    """Revises by copying the candidate untouched."""

    async def revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable_fields: object
    ) -> Candidate:
        import shutil

        self.calls.append(("revise", task.candidate_index))
        shutil.copytree(candidate.output_dir, task.output_dir, dirs_exist_ok=True)
        return Candidate(task.output_dir, Usage(calls=1))


def test_s1_stops_early_when_a_round_changes_nothing(task: Task) -> None:
    agent = UnchangedReviser(p=0.3)
    result = run("s1", task, agent, rounds=3)
    assert [c for c, _ in agent.calls] == ["generate", "revise"]
    assert any("changed nothing" in n for n in result.notes)


def test_s4_keeps_the_base_wherever_the_merge_validates_worse_than_the_margin_allows(task: Task) -> None:
    # A negative margin makes every merge "worse by more than the margin": S4 must then equal S3's choice.
    result = run("s4", task, NoisyOracleAgent(p=0.6), n=3, margin=-1.0)
    for index, decision in result.decisions.items():
        assert "kept base" in decision.reason
        base = read_annotation(result.candidates[decision.candidate].output_dir, index)  # type: ignore[index]
        mine = read_annotation(task.output_dir, index)
        assert base is not None and mine is not None
        base["record"]["image_path"] = mine["record"]["image_path"]
        assert mine == base


def test_s4_votes_task_type_with_validator_weights(task: Task) -> None:
    result = run("s4", task, NoisyOracleAgent(p=0.6), n=5, margin=1.0)
    for index in task.indices:
        ann = read_annotation(task.output_dir, index)
        truth = read_annotation(oracle_dir(task), index)
        assert ann is not None and truth is not None
        assert ann["media_geometry"]["media"]["task_type"] == truth["media_geometry"]["media"]["task_type"]
        assert "task_type" in json.dumps(result.decisions[index].details["votes"])

"""The ``consensus`` selector and S4's base taken from the configured selector."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from strategy_fakes import NoisyOracleAgent, oracle_dir

from agents.base import Candidate, Task
from experiments.run.plan import build_strategy
from strategies import ProfileValidator, strategies
from strategies.consensus import Consensus
from strategies.selectors import build_selector, choose, first, validator_max
from testbed.perturb import correct_annotations, replay_sample


def _candidates(task: Task, tmp: Path, wrong: str, n: int = 4) -> list[Candidate]:
    """n copies of the oracle; candidate 0 carries ``wrong`` on every sample."""
    correct = oracle_dir(task)
    docs = correct_annotations(correct)
    out = []
    for k in range(n):
        folder = tmp / str(k) / "agent1_data_organization"
        shutil.copytree(correct, folder)
        if k == 0:
            for index in docs:
                assert replay_sample(correct, folder, task.root, index, [(wrong, index)], docs)
        out.append(Candidate(folder, candidate_index=k))
    return out


def test_consensus_keeps_the_candidate_the_others_agree_with_where_the_validator_ties(
    task: Task, tmp_path: Path
) -> None:
    # Invented demographics: nothing in the raw files states age or sex, so the validator scores them like
    # the right "unknown" and validator_max keeps candidate 0 on its index tie-break.
    cands = _candidates(task, tmp_path, "invented_demographics")
    validator = ProfileValidator("evidence")
    reports = [validator.validate(c, task) for c in cands]
    tied = [
        i for i in task.indices if reports[0].samples[i].total >= max(r.samples[i].total for r in reports)
    ]
    assert tied, "the validator now sees this mistake: pick one it cannot see for this test"
    by_max = choose(validator_max, task, cands, reports)
    by_consensus = choose(build_selector("consensus"), task, cands, reports)
    for index in tied:
        assert by_max[index].candidate == 0
        assert by_consensus[index].candidate != 0


def test_consensus_still_follows_a_clear_validator_preference(task: Task, tmp_path: Path) -> None:
    # Three candidates share a missing image; the one that wrote it wins on the validator despite being alone.
    cands = _candidates(task, tmp_path, "missing_image", n=1)
    for k in (1, 2, 3):
        folder = tmp_path / f"m{k}" / "agent1_data_organization"
        shutil.copytree(cands[0].output_dir, folder)
        cands.append(Candidate(folder, candidate_index=k))
    good = tmp_path / "good" / "agent1_data_organization"
    shutil.copytree(oracle_dir(task), good)
    cands.append(Candidate(good, candidate_index=4))
    validator = ProfileValidator("evidence")
    reports = [validator.validate(c, task) for c in cands]
    picks = choose(Consensus(weight=0.25), task, cands, reports)
    assert {d.candidate for d in picks.values()} == {4}


def run_s4(task: Task, **options: object):
    built = strategies.get("s4")(**options)
    return asyncio.run(built(task, NoisyOracleAgent(p=0.6), ProfileValidator("evidence")))


def test_s4_takes_its_base_from_the_configured_selector(task: Task) -> None:
    # margin -1: every merge counts as worse, so the output is exactly the base the selector chose.
    result = run_s4(task, n=3, margin=-1.0, selector=first)
    assert {d.candidate for d in result.decisions.values()} == {0}
    control = run_s4(task, n=3, margin=-1.0)
    assert {d.candidate for d in control.decisions.values()} != {0}  # validator_max picks other bases


def test_the_s4_config_passes_the_selector_group_on(task: Task) -> None:
    built = build_strategy({"name": "s4", "kind": "fieldwise", "n": 3, "margin": -1.0}, {"name": "first"})
    result = asyncio.run(built(task, NoisyOracleAgent(p=0.6), ProfileValidator("evidence")))
    assert {d.candidate for d in result.decisions.values()} == {0}


def run_s3(task: Task, **options: object):
    built = strategies.get("s3")(**options)
    return asyncio.run(built(task, NoisyOracleAgent(p=0.6), ProfileValidator("evidence")))


def test_s4_base_is_s3s_selection_of_the_same_candidates(task: Task) -> None:
    # margin -1 keeps every base: S4's output decisions are then S3's choice, sample by sample.
    for sel in (validator_max, build_selector("random")):
        s3 = run_s3(task, n=3, selector=sel)
        s4 = run_s4(task, n=3, margin=-1.0, selector=sel)
        assert [c.candidate_index for c in s4.candidates] == [c.candidate_index for c in s3.candidates]
        assert {i: d.candidate for i, d in s4.decisions.items()} == {
            i: d.candidate for i, d in s3.decisions.items()
        }


def test_s4_calls_s3s_steps_instead_of_repeating_them() -> None:
    import ast
    import inspect

    import strategies.fieldwise as s4

    called = {
        n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
        for n in ast.walk(ast.parse(inspect.getsource(s4)))
        if isinstance(n, ast.Call)
    }
    assert {"candidate_pool", "select", "result"} <= called  # strategies.best_of_n's pool and selection
    assert not {"generate_many", "validate_all", "choose", "StrategyResult"} & called

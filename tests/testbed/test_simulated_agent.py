"""The gated ``simulated`` agent: oracle output with labelled mistakes; revision fixes what it is told."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from agents.base import Feedback, Task
from benchmark.discover import Dataset
from experiments.run.plan import build_agent
from testbed.perturb import MISTAKES, read_mistakes
from testbed.simulated import SimulatedAgent, SimulationNotAllowed
from testbed.synth.suite import generate_suite

DATASET = "synth-thyroid-us-bmp"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sim-suite")
    generate_suite(root, size="small", seed=0, oracle="oracle", only=[DATASET])
    return root


def task_in(suite: Path, out: Path, seed: int = 0) -> Task:
    return Task.from_dataset(Dataset.from_root(suite / DATASET), out, seed=seed)


def test_the_agent_is_refused_unless_analysis_simulated_is_true() -> None:
    with pytest.raises(SimulationNotAllowed, match=r"analysis\.simulated=true"):
        build_agent({"name": "simulated"})
    assert isinstance(build_agent({"name": "simulated"}, allow_simulated=True), SimulatedAgent)


def test_generate_writes_the_labelled_candidate_beside_its_output(suite: Path, tmp_path: Path) -> None:
    task = task_in(suite, tmp_path / "c0", seed=5)
    cand = asyncio.run(SimulatedAgent(clean=0.3).generate(task))
    assert cand.ok and cand.usage.total_tokens == 0 and cand.agent == "simulated"
    labels = read_mistakes(tmp_path / "c0")
    assert set(labels) == set(task.indices) and any(labels.values())
    assert (tmp_path / "c0" / "agent1_data_organization" / "data_meta.json").is_file()


def test_a_dataset_without_a_correct_output_fails_with_a_one_line_reason(suite: Path, tmp_path: Path) -> None:
    cand = asyncio.run(SimulatedAgent(source="missing").generate(task_in(suite, tmp_path / "c")))
    assert cand.status == "failed" and "--oracle" in (cand.reason or "") and "\n" not in (cand.reason or "")


def _dirty(suite: Path, tmp_path: Path) -> tuple[Task, object, dict[int, frozenset[str]]]:
    task = task_in(suite, tmp_path / "gen", seed=1)
    cand = asyncio.run(SimulatedAgent(clean=0.0, extra_rate=0.0).generate(task))
    return task, cand, read_mistakes(tmp_path / "gen")


def test_revise_fixes_only_the_mistakes_the_feedback_names(suite: Path, tmp_path: Path) -> None:
    task, cand, before = _dirty(suite, tmp_path)
    index, kinds = next((i, k) for i, k in sorted(before.items()) if k)
    (kind,) = kinds
    field = MISTAKES[kind].fields[0] or "record"
    feedback = Feedback(items=((index, field, "wrong"),))
    revised_task = dataclasses.replace(task, out_dir=tmp_path / "rev")
    agent = SimulatedAgent(p_fix=1.0, p_new=0.0)
    asyncio.run(agent.revise(revised_task, cand, feedback, ["*"]))  # type: ignore[arg-type]
    after = read_mistakes(tmp_path / "rev")
    assert after[index] == frozenset()
    assert {i: k for i, k in after.items() if i != index} == {i: k for i, k in before.items() if i != index}


def test_revise_with_p_fix_zero_changes_nothing_and_p_new_one_adds_a_new_mistake(
    suite: Path, tmp_path: Path
) -> None:
    task, cand, before = _dirty(suite, tmp_path)
    keep = dataclasses.replace(task, out_dir=tmp_path / "keep")
    asyncio.run(SimulatedAgent(p_fix=0.0, p_new=0.0).revise(keep, cand, "check everything", []))  # type: ignore[arg-type]
    assert read_mistakes(tmp_path / "keep") == before
    worse = dataclasses.replace(task, out_dir=tmp_path / "worse")
    asyncio.run(SimulatedAgent(p_fix=0.0, p_new=1.0).revise(worse, cand, "check everything", []))  # type: ignore[arg-type]
    after = read_mistakes(tmp_path / "worse")
    assert all(after[i] > before[i] for i in before)


def test_a_fix_outside_the_editable_fields_is_not_claimed(suite: Path, tmp_path: Path) -> None:
    task, cand, before = _dirty(suite, tmp_path)
    revised = dataclasses.replace(task, out_dir=tmp_path / "rev")
    # Only data_meta is editable: no sample mistake may be reported as fixed (S2 would revert the edit).
    asyncio.run(SimulatedAgent(p_fix=1.0, p_new=0.0).revise(revised, cand, "fix", ["data_meta"]))  # type: ignore[arg-type]
    assert read_mistakes(tmp_path / "rev") == before

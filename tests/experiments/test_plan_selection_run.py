"""``strategy=plans`` end to end: its own label in the run, S0's flow for an agent without a plan step."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from experiments import compose_config
from experiments.run.experiment import run_experiment
from testbed.synth.suite import generate_suite

DATASET = "synth-kidney-ct-nifti"


def test_a_plans_run_of_the_rules_agent_reports_its_label_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "suite"
    generate_suite(root, size="small", seed=0, only=[DATASET])
    cfg = compose_config(
        [
            "benchmark=dir",
            f"benchmark.root={root}",
            f"benchmark.datasets=[{DATASET}]",
            "agent=rules",
            "strategy=plans",
            "strategy.n=3",
            "run.progress=false",
            "run.report=false",
        ]
    )
    with caplog.at_level(logging.WARNING, logger="strategies.plan_selection"):
        outcome = run_experiment(cfg, tmp_path / "run")

    assert not outcome.errors and not outcome.incomplete
    assert outcome.table.startswith("plans · 1 datasets · agent rules")
    assert json.loads((tmp_path / "run" / "run.json").read_text())["strategy"] == "plans"
    warned = [r.getMessage() for r in caplog.records if r.name == "strategies.plan_selection"]
    assert warned == ["strategy=plans: agent rules has no plan step; plan selection is S0 for it"]
    samples = (tmp_path / "run" / "samples.jsonl").read_text().splitlines()
    assert samples and all(json.loads(line)["decision"]["candidate"] == 0 for line in samples)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["strategy=plans", "strategy.n=0"], "strategy.n=0: input should be greater than or equal to 1"),
        (["agent=local", "agent.plans=0"], "agent.plans must be 1 or more, got 0"),
    ],
)
def test_fewer_than_one_plan_is_refused_at_config_time(overrides: list[str], expected: str) -> None:
    from experiments.run.plan import build_agent, build_strategy

    cfg = compose_config(overrides)
    with pytest.raises(ValueError) as refused:
        if "strategy.n=0" in overrides:
            build_strategy(cfg.strategy, cfg.selector)
        else:
            build_agent(cfg.agent)
    assert expected in str(refused.value) and "\n" not in str(refused.value)

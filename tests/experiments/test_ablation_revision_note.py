"""The ablation says what an S1/S2 row measures when the agent's revise is not a model reviewing its work."""

from __future__ import annotations

from pathlib import Path

from experiments.analysis.ablation import write_ablation
from experiments.run.experiment import run_experiment


def test_s1_rows_of_the_rules_agent_are_explained_and_other_agents_rows_are_not(make_cfg, tmp_path: Path):
    rules, fake = tmp_path / "rules", tmp_path / "fake"
    run_experiment(make_cfg("strategy=s1", "agent=rules", "agent._target_=null"), rules / "0_s1")
    run_experiment(make_cfg("strategy=s1"), fake / "0_s1")  # the protocol test agent
    write_ablation(rules, figure=False)
    write_ablation(fake, figure=False)
    assert "S1/S2 with the `rules` agent" in (rules / "ablation.md").read_text(encoding="utf-8")
    assert "rules" not in (fake / "ablation.md").read_text(encoding="utf-8")

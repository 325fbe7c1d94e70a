"""`agents.base.cpu_bound`: which agents run one candidate at a time per process (experiments/run/loop.py)."""

from __future__ import annotations

from pathlib import Path

from agents.adapters import from_callable
from agents.base import calls_model, cpu_bound
from agents.roles import PoolMember, RoleAgent
from agents.rules import RulesAgent
from testbed.simulated.agent import SimulatedAgent


async def _writes_nothing(task_dir: Path, out_dir: Path, model: str) -> None:
    return None


def test_the_local_agents_declare_it_and_an_agent_that_says_nothing_is_not() -> None:
    assert cpu_bound(RulesAgent()) and not calls_model(RulesAgent())
    assert cpu_bound(SimulatedAgent(source="oracle"))
    assert not cpu_bound(from_callable(_writes_nothing, model="openai/x"))
    assert not cpu_bound(object())  # an agent written before the attribute keeps run.concurrency


def test_a_pool_is_cpu_bound_only_when_every_member_is() -> None:
    rules = PoolMember(agent=RulesAgent(), n=2, label="rules")
    other = PoolMember(agent=RulesAgent(temperature=0.9), n=1, label="hot")
    model = PoolMember(agent=from_callable(_writes_nothing, model="openai/x"), n=1, label="model")
    assert cpu_bound(RoleAgent([rules, other]))
    mixed = RoleAgent([rules, model])
    assert not cpu_bound(mixed) and calls_model(mixed)
    # A model-calling reviser waits on its calls too.
    assert not cpu_bound(RoleAgent([rules], reviser=model.agent))

"""P, plan selection: one candidate whose plan is the best-supported of n sampled plans.

S0's flow (`strategies.direct`) with the candidate's task asking for ``n`` plans (``options["plans"]``): an
agent with a plan step (the model-driven agent's guided plan, `agents.llm.guided`) samples n dataset-level
plans, each one cheap call, and keeps the one the raw data supports best (`validator.plan_support`); the
samples are then done once, under that plan. An agent without a plan step (``rules``) makes its one candidate
as under S0.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Annotated

from pydantic import Field

from agents.base import Agent, Task, samples_plans
from strategies.base import Strategy, StrategyResult, Validator, strategy
from strategies.direct import direct

log = logging.getLogger(__name__)


@strategy("plan_selection", aliases=("plans",), generations=1, revisions=0, plans="n")
def plan_selection(n: Annotated[int, Field(ge=1)] = 3) -> Strategy:
    """Standardize each dataset with a single candidate whose plan is the best-supported of ``n``.

    Args:
        n: Plans sampled for the candidate (one call each); 1 is S0.
    """
    s0 = direct()
    warned = False

    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        nonlocal warned
        if not samples_plans(agent) and not warned:
            warned = True
            log.warning("strategy=plans: agent %s has no plan step; plan selection is S0 for it", agent.name)
        result = await s0(dataclasses.replace(task, options={**task.options, "plans": n}), agent, validator)
        result.strategy = "plans"
        result.notes.append(f"plan selection: {n} plans sampled for the candidate")
        return result

    return run

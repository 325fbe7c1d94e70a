"""S4 as the paper runs it (SPEC §4): the reference S3 choice as base, then the reference narrow vote."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agents.base import Agent, Task
from strategies.base import Strategy, StrategyResult, Validator, run_cpu, strategy
from strategies.best_of_n import candidate_pool, no_candidates
from strategies.paper.procedure import vote_paper


@strategy(
    "paper_fieldwise",
    aliases=("s4_paper",),
    candidates=True,
    reselectable=False,
    validator="mdsbench",
    generations="n",
)
def paper_fieldwise(n: Annotated[int, Field(ge=2)] = 5, margin: float = 0.05) -> Strategy:  # n=1: S0
    """Vote the reference S4 fields across n candidates on top of the reference S3 choice.

    Args:
        n: Candidates per dataset.
        margin: Fall back to the base when the merge validates worse by more than this.
    """

    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        pool = await candidate_pool(agent, task, validator, n)
        if pool is None:
            return no_candidates("s4", task)
        # The vote re-validates merged samples under the profile the candidates were validated with: the
        # validator's name (the run plan hands this strategy the profile it requires, `mdsbench`, by name).
        decisions = await run_cpu(
            validator, vote_paper, task, pool.candidates, pool.reports, margin, validator.name
        )
        return pool.result("s4", decisions)

    return run

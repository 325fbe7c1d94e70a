"""S3 as the paper runs it (SPEC §4): n complete candidates, per sample the reference sort key decides.

Not a selector option of `strategies.best_of_n`: the reference procedure also chooses the dataset metadata
and takes no selector, so it is a strategy of its own (validated with the ``mdsbench`` profile).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agents.base import Agent, Task
from strategies.base import Strategy, StrategyResult, Validator, run_cpu, strategy
from strategies.best_of_n import candidate_pool, no_candidates
from strategies.paper.procedure import select_paper


@strategy(
    "paper_best_of_n",
    aliases=("s3_paper",),
    candidates=True,
    reselectable=False,
    validator="mdsbench",
    generations="n",
)
def paper_best_of_n(n: Annotated[int, Field(ge=2)] = 5) -> Strategy:  # n=1 would be S0
    """Generate n complete candidates and keep, per sample, the reference S3 choice.

    Args:
        n: Candidates per dataset.
    """

    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        pool = await candidate_pool(agent, task, validator, n)  # S3's pool; the reference chooses from it
        if pool is None:
            return no_candidates("s3", task)
        # Selection reads candidate files and writes the selected folder: worker pool, not the event loop.
        decisions = await run_cpu(validator, select_paper, task, pool.candidates, pool.reports)
        return pool.result("s3", decisions)

    return run

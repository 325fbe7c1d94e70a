"""S3 as the paper runs it (SPEC §4): n complete candidates, per sample the reference sort key decides.

Not a selector option of `strategies.best_of_n`: the reference procedure also chooses the dataset metadata
and takes no selector, so it is a strategy of its own (validated with the ``mdsbench`` profile).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agents.base import Agent, Task
from strategies.base import Strategy, StrategyResult, Validator, run_cpu, strategy, usage_of
from strategies.mechanics import budget_hit, generate_many, generation_notes, validate_all
from strategies.paper.procedure import select_paper


@strategy("paper_best_of_n", aliases=("s3_paper",), candidates=True, reselectable=False, validator="mdsbench")
def paper_best_of_n(n: Annotated[int, Field(ge=2)] = 5) -> Strategy:  # n=1 would be S0
    """Generate n complete candidates and keep, per sample, the reference S3 choice.

    Args:
        n: Candidates per dataset.
    """

    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        candidates = await generate_many(agent, task, n)
        if not candidates:
            return StrategyResult("s3", task.output_dir, [], {}, usage_of([]), incomplete=True)
        reports = await validate_all(validator, candidates, task)
        # Selection reads candidate files and writes the selected folder: worker pool, not the event loop.
        decisions = await run_cpu(validator, select_paper, task, candidates, reports)
        return StrategyResult(
            "s3",
            task.output_dir,
            candidates,
            decisions,
            usage_of(candidates),
            incomplete=budget_hit(),
            notes=generation_notes(candidates, n),
        )

    return run

"""S4 as the paper runs it (SPEC §4): the reference S3 choice as base, then the reference narrow vote."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agents.base import Agent, Task
from strategies.base import Strategy, StrategyResult, Validator, run_cpu, strategy, usage_of
from strategies.mechanics import budget_hit, generate_many, generation_notes, validate_all
from strategies.paper.procedure import vote_paper


@strategy("paper_fieldwise", aliases=("s4_paper",), candidates=True, reselectable=False, validator="mdsbench")
def paper_fieldwise(n: Annotated[int, Field(ge=2)] = 5, margin: float = 0.05) -> Strategy:  # n=1: S0
    """Vote the reference S4 fields across n candidates on top of the reference S3 choice.

    Args:
        n: Candidates per dataset.
        margin: Fall back to the base when the merge validates worse by more than this.
    """

    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        candidates = await generate_many(agent, task, n)
        if not candidates:
            return StrategyResult("s4", task.output_dir, [], {}, usage_of([]), incomplete=True)
        reports = await validate_all(validator, candidates, task)
        # The vote re-validates merged samples under the profile the candidates were validated with: the
        # validator's name (the run plan hands this strategy the profile it requires, `mdsbench`, by name).
        decisions = await run_cpu(validator, vote_paper, task, candidates, reports, margin, validator.name)
        return StrategyResult(
            "s4",
            task.output_dir,
            candidates,
            decisions,
            usage_of(candidates),
            incomplete=budget_hit(),
            notes=generation_notes(candidates, n),
        )

    return run

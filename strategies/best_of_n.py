"""S3, best-of-n (paper Appendix E): n complete candidates; per sample the selector keeps one of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import Field

from agents.base import Agent, Candidate, Task
from strategies.base import (
    SampleDecision,
    Strategy,
    StrategyResult,
    Validator,
    run_cpu,
    strategy,
    usage_of,
)
from strategies.choice import bind_loop, selection_usage
from strategies.mechanics import assemble, budget_hit, generate_many, generation_notes, validate_all
from strategies.selectors import Selector, choose, is_oracle, validator_max
from validator.report import Report


@strategy("best_of_n", aliases=("s3",), candidates=True, reselectable=True)
def best_of_n(
    n: Annotated[int, Field(ge=1)] = 5,
    selector: Selector = validator_max,
    early_stop_at: float | None = None,
) -> Strategy:
    """Generate n complete candidates and keep, per sample, the one the selector prefers.

    Args:
        n: Candidates per dataset.
        selector: Chooses one candidate per sample from the validator's reports.
        early_stop_at: Stop generating once every sample has a candidate scoring at least this.

    The paper's own procedure (its sort key and meta choice) is the strategy ``s3_paper``.
    """

    async def stop(validator: Validator, task: Task, made: list[Candidate]) -> bool:
        reports = await validate_all(validator, made, task)
        best = {
            i: max((r.samples[i].total for r in reports if i in r.samples), default=0.0) for i in task.indices
        }
        return early_stop_at is not None and all(v >= early_stop_at for v in best.values())

    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        rule = (lambda made: stop(validator, task, made)) if early_stop_at is not None else None
        candidates = await generate_many(agent, task, n, stop=rule)
        if not candidates:
            return StrategyResult("s3", task.output_dir, [], {}, usage_of([]), incomplete=True)
        reports = await validate_all(validator, candidates, task)
        # Selection reads candidate files and assembly writes the selected folder: both run in the worker
        # pool, so the event loop keeps serving the model calls of the other datasets.
        bind_loop(selector)
        decisions = await run_cpu(validator, _select_and_assemble, selector, task, candidates, reports)
        return StrategyResult(
            "s3",
            task.output_dir,
            candidates,
            decisions,
            # A judge's calls are part of the strategy's cost (the tables compare at equal spend).
            usage_of(candidates) + selection_usage(decisions),
            upper_bound=is_oracle(selector),
            incomplete=budget_hit(),
            notes=generation_notes(candidates, n),
        )

    return run


def _select_and_assemble(
    selector: Selector, task: Task, candidates: Sequence[Candidate], reports: Sequence[Report]
) -> dict[int, SampleDecision]:
    """Choose per sample with ``selector`` and write the selected folder (blocking; run it in a pool).

    Args:
        selector: The selector.
        task: The dataset task.
        candidates: The candidates.
        reports: Their validator reports, same order.

    Returns:
        The per-sample decisions.
    """
    decisions = choose(selector, task, candidates, reports)
    assemble(task, candidates, {i: d.candidate for i, d in decisions.items()}, reports)
    return decisions

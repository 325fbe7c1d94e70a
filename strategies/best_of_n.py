"""S3, best-of-n (paper Appendix E): n complete candidates; per sample the selector keeps one of them.

S3's steps are public because S4 and the paper's procedure build on them instead of repeating them:
`candidate_pool` (n candidates and their reports), `CandidatePool.select` (S3's choice per sample) and
`CandidatePool.result`; S3 itself adds only the assembly of the chosen samples (`select_and_assemble`).
"""

from __future__ import annotations

from dataclasses import dataclass
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
from strategies.mechanics import (
    StopRule,
    assemble,
    budget_hit,
    generate_many,
    generation_notes,
    validate_all,
)
from strategies.selectors import Selector, choose, is_oracle, validator_max
from validator.report import Report

__all__ = ["CandidatePool", "best_of_n", "candidate_pool", "no_candidates", "select_and_assemble"]


@dataclass(frozen=True)
class CandidatePool:
    """The candidates of one dataset and their validator reports: what S3 selects from, and S4 votes over.

    Attributes:
        task: The dataset task.
        n: Candidates asked for (fewer were made when the budget or an early stop cut generation short).
        candidates: The candidates made, in candidate order (at least one).
        reports: Their validator reports, same order.
    """

    task: Task
    n: int
    candidates: list[Candidate]
    reports: list[Report]

    def select(self, selector: Selector) -> dict[int, SampleDecision]:
        """S3's choice: per sample, the candidate ``selector`` prefers (blocking: it may read files).

        Args:
            selector: The per-sample selector.

        Returns:
            Per manifest index, the decision.
        """
        return choose(selector, self.task, self.candidates, self.reports)

    def result(
        self, label: str, decisions: dict[int, SampleDecision], selector: Selector | None = None
    ) -> StrategyResult:
        """The strategy result over this pool (read the budget state now: call it once the output is written).

        Args:
            label: The strategy's label (``s3``, ``s4``).
            decisions: Per index, what was kept.
            selector: The selector that chose (an oracle marks the result as an upper bound).

        Returns:
            The result.
        """
        return StrategyResult(
            label,
            self.task.output_dir,
            self.candidates,
            decisions,
            # A judge's calls are part of the strategy's cost (the tables compare at equal spend).
            usage_of(self.candidates) + selection_usage(decisions),
            upper_bound=selector is not None and is_oracle(selector),
            incomplete=budget_hit(),
            notes=generation_notes(self.candidates, self.n),
        )


async def candidate_pool(
    agent: Agent, task: Task, validator: Validator, n: int, *, stop: StopRule | None = None
) -> CandidatePool | None:
    """Generate up to ``n`` candidates concurrently and validate them; None when none was made.

    Args:
        agent: The agent.
        task: The dataset task.
        validator: The validator.
        n: Candidates per dataset.
        stop: Stop generating early when this rule says so (S3's ``early_stop_at``).

    Returns:
        The pool, or None (then the strategy returns `no_candidates`).
    """
    candidates = await generate_many(agent, task, n, stop=stop)
    if not candidates:
        return None
    return CandidatePool(task, n, candidates, await validate_all(validator, candidates, task))


def no_candidates(label: str, task: Task) -> StrategyResult:
    """The result of a strategy that could not make one candidate (the budget was spent): incomplete."""
    return StrategyResult(label, task.output_dir, [], {}, usage_of([]), incomplete=True)


def select_and_assemble(selector: Selector, pool: CandidatePool) -> dict[int, SampleDecision]:
    """S3's choice per sample, and the selected folder written from it (blocking; run it in a pool).

    Args:
        selector: The selector.
        pool: The candidates and their reports.

    Returns:
        The per-sample decisions.
    """
    decisions = pool.select(selector)
    assemble(pool.task, pool.candidates, {i: d.candidate for i, d in decisions.items()}, pool.reports)
    return decisions


@strategy("best_of_n", aliases=("s3",), candidates=True, reselectable=True, generations="n")
def best_of_n(
    n: Annotated[int, Field(ge=2)] = 5,  # one candidate leaves nothing to select: that is S0
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
        pool = await candidate_pool(agent, task, validator, n, stop=rule)
        if pool is None:
            return no_candidates("s3", task)
        # Selection reads candidate files and assembly writes the selected folder: both run in the worker
        # pool, so the event loop keeps serving the model calls of the other datasets.
        bind_loop(selector)
        decisions = await run_cpu(validator, select_and_assemble, selector, pool)
        return pool.result("s3", decisions, selector)

    return run

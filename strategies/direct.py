"""S0, direct generation (paper Appendix E): one `generate`, kept as written."""

from __future__ import annotations

from agents.base import Agent, Task
from strategies.base import Strategy, StrategyResult, Validator, run_cpu, strategy
from strategies.mechanics import adopt, generate_many, single_result


@strategy("direct", aliases=("s0",), generations=1, revisions=0)
def direct() -> Strategy:
    """Standardize each dataset with a single agent call; no refinement, no selection."""

    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        candidates = await generate_many(agent, task, 1)
        if not candidates:
            return single_result("s0", task, [], None, None, "budget spent before the first call")
        await run_cpu(validator, adopt, task, candidates[0])
        report = await run_cpu(validator, validator.validate, task.output_dir, task)
        return single_result("s0", task, candidates, 0, report, "direct: the only candidate")

    return run

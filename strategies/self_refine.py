"""S1, self-refinement (paper Appendix E, SPEC §4): the agent reviews its own output.

The review instruction is the benchmark's ``prompt_experiment/S1`` prompt when the run found the user's
checkout, else the project's text over the paper's seven axes (`agents.instructions`); it reaches the agent as
the feedback message, with every field editable. What a round means depends on the agent: a model reads its
output with its tools and edits it; the `rules` agent re-decides the choices its own review flags
(`agents.rules.revise.self_check_points`). A round that changes nothing ends the refinement, and the result
notes say so.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agents.base import Agent, Candidate, Feedback, Task
from agents.instructions import instruction_text
from strategies._whitelist import folder_digest
from strategies.base import Strategy, StrategyResult, Validator, run_cpu, strategy
from strategies.context import call_agent
from strategies.mechanics import adopt, generate_many, single_result

EVERYTHING = ("*",)


@strategy("self_refine", aliases=("s1",), generations=1, revisions="rounds")
def self_refine(rounds: Annotated[int, Field(ge=0)] = 1) -> Strategy:
    """Generate once, then revise with a self-check instruction, for up to ``rounds`` rounds.

    Args:
        rounds: Revision rounds; stops early when a round changes nothing.
    """

    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        made = await generate_many(agent, task, 1)
        notes: list[str] = []
        review = Feedback(instruction_text(task.options, "s1"))
        for r in range(1, rounds + 1):
            if not made:
                break
            last = made[-1]

            async def revise(t: Task, c: Candidate = last) -> Candidate:
                return await agent.revise(t, c, review, EVERYTHING)

            revised = await call_agent(task, f"0.refine{r}", revise)
            if revised is None:
                notes.append(f"round {r}: budget spent")
                break
            made.append(revised)
            if folder_digest(revised.output_dir) == folder_digest(last.output_dir):
                notes.append(f"round {r} changed nothing; stopping (agent {revised.agent or agent.name})")
                break
        if not made:
            return single_result("s1", task, [], None, None, "budget spent before the first call")
        await run_cpu(validator, adopt, task, made[-1])
        report = await run_cpu(validator, validator.validate, task.output_dir, task)
        return single_result(
            "s1",
            task,
            made,
            len(made) - 1,
            report,
            f"self_refine: output after {len(made) - 1} revision round(s)",
            notes,
        )

    return run

"""S1, self-refinement (paper Appendix E, SPEC §4): the agent reviews its own output."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agents.base import Agent, Candidate, Feedback, Task
from strategies._context import call_agent
from strategies._mechanics import adopt, generate_many, single_result
from strategies._whitelist import folder_digest
from strategies.base import Strategy, StrategyResult, Validator, run_cpu, strategy

SELF_CHECK = (
    "Review your output against the raw data, the manifest and the schema, without ground truth. "
    "Check every field on seven axes: (1) source trace: extra.source_file/original_filename name the "
    "manifest file; (2) coverage: one image and one JSON per manifest index; (3) schema: the five top-level "
    "blocks, exactly one spatial and one task branch non-empty; (4) semantics: task type, dimension, labels "
    "and class ids agree with the data; (5) information quality: no placeholders where the data has the "
    "value; (6) content fidelity: the image, mask and boxes come from the declared source and slice; "
    "(7) metadata: data_meta counts equal the written outputs. Change a field only with evidence; "
    "otherwise keep it."
)
EVERYTHING = ("*",)


@strategy("self_refine", aliases=("s1",))
def self_refine(rounds: Annotated[int, Field(ge=0)] = 1) -> Strategy:
    """Generate once, then revise with a self-check instruction, for up to ``rounds`` rounds.

    Args:
        rounds: Revision rounds; stops early when a round changes nothing.
    """

    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        made = await generate_many(agent, task, 1)
        notes: list[str] = []
        for r in range(1, rounds + 1):
            if not made:
                break
            last = made[-1]

            async def revise(t: Task, c: Candidate = last) -> Candidate:
                return await agent.revise(t, c, Feedback(SELF_CHECK), EVERYTHING)

            revised = await call_agent(task, f"0.refine{r}", revise)
            if revised is None:
                notes.append(f"round {r}: budget spent")
                break
            made.append(revised)
            if folder_digest(revised.output_dir) == folder_digest(last.output_dir):
                notes.append(f"round {r} changed nothing; stopping")
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

"""S2, verification-guided refinement (paper Appendix E): the validator's high-risk checklist goes back to the
agent, and only whitelisted fields may change (enforced here, not trusted to the agent)."""

from __future__ import annotations

from collections.abc import Sequence

from agents.base import Agent, Candidate, Feedback, Task
from strategies._autofix import auto_fix as apply_auto_fix
from strategies._context import call_agent
from strategies._mechanics import adopt, generate_many, single_result
from strategies._whitelist import covered, enforce_whitelist
from strategies.base import Strategy, StrategyResult, Validator, run_cpu, strategy
from validator.checklist import checklist as failed_items

HIGH_RISK_FIELDS: tuple[str, ...] = (
    "media_geometry.media.task_type",
    "media_geometry.media.dimension",
    "media_geometry.media.annotation_type",
    "media_geometry.spatial",
    "tasks",
    "record.image_path",
    "context.sample.extra",
    "data_meta.task_type",
    "data_meta.data_volume",
    "data_meta.valid_image_n",
    "data_meta.num_classes_per_task",
)
"""Task type and dimension, active branches, labels and class ids, image paths, source fields, annotation
type,
metadata counts (paper Appendix E, S2)."""

INSTRUCTION = (
    "A deterministic validator flagged the items below. Fix them using the raw data as evidence. Only "
    "these fields may change; any other change is reverted: {fields}."
)


@strategy("checklist", aliases=("s2",))
def checklist(whitelist: Sequence[str] = HIGH_RISK_FIELDS, auto_fix: bool = False) -> Strategy:
    """Generate, validate, and revise only the failed high-risk items.

    Args:
        whitelist: Field paths a revision may change (``data_meta.`` prefix for the dataset JSON).
        auto_fix: Also apply the reference S2's deterministic fixes to the result.
    """
    fields = tuple(whitelist)

    async def run(task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        made = await generate_many(agent, task, 1)
        if not made:
            return single_result("s2", task, [], None, None, "budget spent before the first call")
        base, notes = made[0], []
        report = await run_cpu(validator, validator.validate, base, task)
        items = [
            (i.index, f, i.message)
            for i in failed_items(report)
            for f in i.editable_fields
            if covered(f, fields)
        ]
        if items:

            async def revise(t: Task) -> Candidate:
                return await agent.revise(
                    t, base, Feedback(INSTRUCTION.format(fields=", ".join(fields)), tuple(items)), fields
                )

            revised = await call_agent(task, "0.checklist", revise)
            if revised is not None:
                made.append(revised)
            else:
                notes.append("budget spent before the revision")
        else:
            notes.append("no failed high-risk item; nothing to revise")
        await run_cpu(validator, adopt, task, made[-1])
        # Reverting and fixing rewrite the selected folder: disk work, kept off the event loop like the rest.
        if len(made) > 1:
            notes += await run_cpu(validator, enforce_whitelist, base.output_dir, task.output_dir, fields)
        if auto_fix:
            notes += await run_cpu(validator, apply_auto_fix, task.output_dir, list(task.indices))
        final = await run_cpu(validator, validator.validate, task.output_dir, task)
        reason = f"checklist: {len(items)} item(s) sent, {sum('reverted' in n for n in notes)} revert(s)"
        return single_result("s2", task, made, len(made) - 1, final, reason, notes)

    return run

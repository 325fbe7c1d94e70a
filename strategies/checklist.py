"""S2, verification-guided refinement (paper Appendix E): the validator's high-risk checklist goes back to the
agent, and only whitelisted fields may change (enforced here, not trusted to the agent)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agents.base import Agent, Candidate, Feedback, Task
from agents.instructions import instruction_text
from strategies._autofix import auto_fix as apply_auto_fix
from strategies._whitelist import covered, enforce_whitelist, folder_digest
from strategies.base import Strategy, StrategyResult, Validator, run_cpu, strategy
from strategies.context import call_agent
from strategies.fields import HIGH_RISK_FIELDS
from strategies.mechanics import adopt, generate_many, single_result
from validator.checklist import checklist as failed_items

WHITELIST_LINE = "Editable field paths (a flagged item may change only its own fields among them): {fields}."


def same_folder(a: Path, b: Path) -> bool:
    """Whether two candidate folders hold the same files, byte for byte."""
    return folder_digest(a) == folder_digest(b)


def flagged_fields(items: Sequence[tuple[int | None, str, str]]) -> dict[int | None, list[str]]:
    """The fields the checklist named per sample (None = ``data_meta.json``): what S2 lets each change."""
    out: dict[int | None, list[str]] = {}
    for index, path, _message in items:
        out.setdefault(None if path.startswith("data_meta") else index, []).append(path)
    return out


@strategy("checklist", aliases=("s2",), generations=1, revisions=(0, 1))
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
            # The benchmark's S2 prompt (or ours) verbatim, then the whitelist this framework enforces.
            message = (
                instruction_text(task.options, "s2")
                + "\n\n"
                + WHITELIST_LINE.format(fields=", ".join(fields))
            )

            async def revise(t: Task) -> Candidate:
                return await agent.revise(t, base, Feedback(message, tuple(items)), fields)

            revised = await call_agent(task, "0.checklist", revise)
            if revised is not None:
                made.append(revised)
                if await run_cpu(validator, same_folder, base.output_dir, revised.output_dir):
                    notes.append(f"the revision changed nothing (agent {revised.agent or agent.name})")
            else:
                notes.append("budget spent before the revision")
        else:
            notes.append("no failed high-risk item; nothing to revise")
        await run_cpu(validator, adopt, task, made[-1])
        # Reverting and fixing rewrite the selected folder: disk work, kept off the event loop like the rest.
        if len(made) > 1:
            notes += await run_cpu(
                validator, enforce_whitelist, base.output_dir, task.output_dir, fields, flagged_fields(items)
            )
        if auto_fix:
            notes += await run_cpu(validator, apply_auto_fix, task.output_dir, list(task.indices))
        final = await run_cpu(validator, validator.validate, task.output_dir, task)
        reverts = sum(("reverted" in n) or ("rejected" in n) for n in notes)
        reason = f"checklist: {len(items)} item(s) sent, {reverts} revert(s)"
        return single_result("s2", task, made, len(made) - 1, final, reason, notes)

    return run

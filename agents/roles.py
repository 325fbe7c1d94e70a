"""Model roles: candidates from a pool of agents, and revisions by a separate reviser.

`RoleAgent` is one `Agent` made of several: candidate ``k`` of a dataset comes from the pool member whose slot
range holds ``k`` (``[{agent: A, n: 3}, {agent: B, n: 2}]``: candidates 0-2 from A, 3-4 from B), and every
``revise`` goes to the reviser. The strategies see one agent and stay unchanged; every candidate records in
``Candidate.agent`` the label of the member that made it, which the per-agent tables read.

A candidate keeps its index and seed whatever member makes it, so the run's candidate folders, resume and each
member's request cache (keyed on the member's own model) work as with one agent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.base import Agent, Candidate, Feedback, Task, calls_model, cpu_bound, samples_plans

__all__ = ["PoolMember", "RoleAgent"]


@dataclass(frozen=True)
class PoolMember:
    """One agent of a candidate pool.

    Attributes:
        agent: The agent.
        n: How many candidates per dataset it makes.
        label: The name its candidates record (``litellm:openai/gpt-4o-mini``); unique within the pool.
        task: `Task` fields of its own (``temperature``, ``limits``, ``options``) replacing the run's.
    """

    agent: Agent
    n: int
    label: str
    task: Mapping[str, Any] = field(default_factory=dict)


class RoleAgent:
    """An agent whose candidates come from a pool and whose revisions come from a reviser.

    Args:
        pool: The candidate makers, in slot order (at least one; each ``n >= 1``).
        reviser: Makes every revision (S1/S2); None: the member that made the revised candidate.
        reviser_label: The name the reviser's candidates record.
        reviser_task: `Task` fields of the reviser's own (its temperature, limits, options).

    Raises:
        ValueError: An empty pool, a member with ``n < 1``, or two members with the same label.
    """

    def __init__(
        self,
        pool: Sequence[PoolMember],
        reviser: Agent | None = None,
        *,
        reviser_label: str = "reviser",
        reviser_task: Mapping[str, Any] | None = None,
    ) -> None:
        if not pool:
            raise ValueError("a candidate pool needs at least one agent")
        bad = [m.label for m in pool if m.n < 1]
        if bad:
            raise ValueError(f"pool members need n >= 1: {', '.join(bad)}")
        labels = [m.label for m in pool]
        if len(set(labels)) != len(labels):
            raise ValueError(f"pool labels must differ (give each entry a `label`): {labels}")
        self.pool = tuple(pool)
        self.reviser = reviser
        self.reviser_label = reviser_label
        self.reviser_task = dict(reviser_task or {})
        self.name = "+".join(labels) if reviser is None else f"{'+'.join(labels)}|revise:{reviser_label}"
        # Worker processes and concurrency defaults look at this: a pool that calls any model is I/O-bound.
        self.calls_model = any(calls_model(a) for a in self.agents())
        self.cpu_bound = all(cpu_bound(a) for a in self.agents())
        self.simulation = any(bool(getattr(a, "simulation", False)) for a in self.agents())
        self.samples_plans = any(samples_plans(a) for a in self.agents())

    @property
    def size(self) -> int:
        """Candidates per dataset the pool makes (the sum of the members' ``n``)."""
        return sum(m.n for m in self.pool)

    def agents(self) -> list[Agent]:
        """Every distinct agent object of the roles (members, then the reviser)."""
        out: list[Agent] = []
        for a in [m.agent for m in self.pool] + ([self.reviser] if self.reviser is not None else []):
            if not any(a is b for b in out):
                out.append(a)
        return out

    def member_for(self, candidate_index: int) -> PoolMember:
        """The member making candidate ``candidate_index`` (slots repeat past the pool size)."""
        slot = candidate_index % self.size
        for member in self.pool:
            if slot < member.n:
                return member
            slot -= member.n
        raise AssertionError("unreachable: slot < size")

    async def generate(self, task: Task) -> Candidate:
        """Let the member owning ``task.candidate_index`` make the candidate, labelled with its name."""
        member = self.member_for(task.candidate_index)
        made = await member.agent.generate(_with(task, member.task))
        return dataclasses.replace(made, agent=member.label)

    async def revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable_fields: Sequence[str]
    ) -> Candidate:
        """Revise with the reviser (or, without one, with the member that made ``candidate``)."""
        if self.reviser is not None:
            made = await self.reviser.revise(
                _with(task, self.reviser_task), candidate, feedback, editable_fields
            )
            return dataclasses.replace(made, agent=self.reviser_label)
        member = next((m for m in self.pool if m.label == candidate.agent), self.pool[0])
        made = await member.agent.revise(_with(task, member.task), candidate, feedback, editable_fields)
        return dataclasses.replace(made, agent=member.label)

    def preflight(self, tasks: list[Task]) -> None:
        """Each member's own input check, when it has one."""
        for a in self.agents():
            check = getattr(a, "preflight", None)
            if callable(check):
                check(tasks)

    def close(self) -> None:
        """Stop the pools the members keep."""
        for a in self.agents():
            close = getattr(a, "close", None)
            if callable(close):
                close()


def _with(task: Task, fields: Mapping[str, Any]) -> Task:
    if not fields:
        return task
    options = fields.get("options")
    changes = dict(fields)
    if options is not None:
        # The run's options (the resolved instructions) stay; the member's own are added on top.
        changes["options"] = {**task.options, **dict(options)}
    return dataclasses.replace(task, **changes)

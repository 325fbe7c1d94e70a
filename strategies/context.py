"""The run around a strategy: where candidates go, resume, one semaphore for model calls, and the budget.

Strategies keep the three-argument signature ``run(task, agent, validator)``; the experiment runner sets a
`RunContext` in a context variable (which asyncio tasks inherit) and every agent call goes through
`call_agent`, which applies it. Without a runner (a notebook, a unit test) the defaults apply: no resume, no
budget, candidates next to the selected folder.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
import logging
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.base import OUTPUT_SUBDIR, Candidate, Task, Usage
from agents.budget import Budget
from core.atomic import atomic_write_json, read_json_or_none

__all__ = ["DONE_MARKER", "RunContext", "call_agent", "candidate_from_marker", "current", "use"]

log = logging.getLogger(__name__)

DONE_MARKER = "candidate.json"
"""Written last, atomically, into a candidate folder once the agent call finished: resume trusts only this."""

BUDGET_CUT = "budget_cut"
"""Key of a done-marker whose candidate the run budget cut short: ``run.resume`` makes it again."""


@dataclass
class RunContext:
    """How agent calls of the current run are made.

    Attributes:
        candidates_root: Candidate ``key`` of dataset ``d`` goes to ``<candidates_root>/<d>/<key>``; None puts
            candidates in ``<task.out_dir>.candidates/<key>``.
        resume: Reuse a candidate whose done-marker exists instead of calling the agent again.
        semaphore: Bounds the model calls in flight across the whole run.
        budget: The run's `agents.budget.Budget`; once spent, no new call starts.
        on_candidate: Called after each finished candidate (progress display).
    """

    candidates_root: Path | None = None
    resume: bool = False
    semaphore: asyncio.Semaphore | None = None
    budget: Budget | None = None
    on_candidate: Callable[[Task, Candidate], None] | None = None
    reused: list[Path] = field(default_factory=list)

    def candidate_dir(self, task: Task, key: str) -> Path:
        """The folder of candidate ``key`` (parent of its ``agent1_data_organization``)."""
        if self.candidates_root is not None:
            return self.candidates_root / task.name / key
        return task.out_dir.with_name(task.out_dir.name + ".candidates") / key


_CURRENT: contextvars.ContextVar[RunContext | None] = contextvars.ContextVar("medstrat_run", default=None)


def current() -> RunContext:
    """The active run context (a default one outside a run)."""
    ctx = _CURRENT.get()
    return ctx if ctx is not None else RunContext()


def use(ctx: RunContext) -> contextvars.Token[RunContext | None]:
    """Make ``ctx`` the active run context for this task and the tasks it starts."""
    return _CURRENT.set(ctx)


def candidate_from_marker(folder: Path) -> Candidate | None:
    """Rebuild a finished candidate from its done-marker, or None when the marker is absent or unreadable."""
    try:
        data: dict[str, Any] = json.loads((folder / DONE_MARKER).read_text(encoding="utf-8"))
        usage = {k: v for k, v in data.get("usage", {}).items() if k != "total_tokens"}
        return Candidate(
            output_dir=folder / OUTPUT_SUBDIR,
            usage=Usage(**usage),
            trace_path=Path(data["trace_path"]) if data.get("trace_path") else None,
            status=data.get("status", "ok"),
            reason=data.get("reason"),
            candidate_index=int(data.get("candidate_index", 0)),
            agent=str(data.get("agent", "")),
            skipped={int(k): str(v) for k, v in (data.get("skipped") or {}).items()},
            missing=tuple(int(i) for i in data.get("missing") or ()),
        )
    except (OSError, ValueError, TypeError, KeyError):
        return None


async def call_agent(
    task: Task,
    key: str,
    call: Callable[[Task], Awaitable[Candidate]],
    candidate_index: int = 0,
    seed: int | None = None,
) -> Candidate | None:
    """Make one agent call for candidate ``key`` under the run's rules.

    Args:
        task: The dataset task.
        key: The candidate's folder name (``"3"`` for generation 3, ``"0.refine1"`` for a revision).
        call: ``generate`` or a ``revise`` closure, given the candidate's own task.
        candidate_index: The candidate index written into its task (distinct requests, cache keys).
        seed: Its seed (default ``task.seed + candidate_index``).

    Returns:
        The candidate, or None when the budget is spent (no call was started).
    """
    ctx = current()
    folder = ctx.candidate_dir(task, key)
    if ctx.resume:
        done = candidate_from_marker(folder)
        if done is not None and not _cut_by_budget(folder):
            log.info("resume: reusing %s", folder)
            ctx.reused.append(folder)
            return done
    if ctx.semaphore is not None:
        async with ctx.semaphore:
            cand = await _call(ctx, task, folder, call, candidate_index, seed)
    else:
        cand = await _call(ctx, task, folder, call, candidate_index, seed)
    if cand is None:
        return None
    marker = cand.to_dict()
    if cand.status != "ok" and ctx.budget is not None and ctx.budget.exhausted:
        # Cut short by the run budget, not by the agent: a resume (with a larger budget) makes it again, its
        # answered calls coming from the request cache, instead of keeping the truncated output.
        marker[BUDGET_CUT] = True
    # Off the event loop: the marker is fsynced (resume trusts it), which must not stall other model calls.
    await asyncio.to_thread(atomic_write_json, folder / DONE_MARKER, marker)
    if ctx.on_candidate is not None:
        ctx.on_candidate(task, cand)
    return cand


async def _call(
    ctx: RunContext,
    task: Task,
    folder: Path,
    call: Callable[[Task], Awaitable[Candidate]],
    candidate_index: int,
    seed: int | None,
) -> Candidate | None:
    # The budget is checked once a slot is free, so calls queued behind the semaphore see what ran before
    # them.
    budget = ctx.budget
    if budget is not None and budget.exhausted:
        budget.mark_hit()
        return None
    if folder.exists():
        # Leftovers of an interrupted call (no done-marker): start clean so nothing stale is mixed in.
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    if budget is None:
        cand = await call(task.for_candidate(candidate_index, folder, seed=seed))
    else:
        with budget.tally() as tally:
            cand = await call(task.for_candidate(candidate_index, folder, seed=seed))
        # An agent that held the budget charged each model call already; any other is charged here, once.
        budget.charge_candidate(tally, cand.usage.total_tokens, cand.usage.cost_usd)
    if cand.ok and not _wrote_a_sample(cand.output_dir):
        # Whatever the agent says, an output without one annotation is no candidate; say so where it is read.
        cand = dataclasses.replace(
            cand, status="failed", reason=f"{cand.reason or 'finished'}; no sample was written"
        )
    return cand


def _cut_by_budget(folder: Path) -> bool:
    done = read_json_or_none(folder / DONE_MARKER)
    return isinstance(done, dict) and bool(done.get(BUDGET_CUT))


def _wrote_a_sample(output_dir: Path) -> bool:
    folder = output_dir / "standardized_annotations"
    return folder.is_dir() and any(p.suffix == ".json" for p in folder.iterdir())

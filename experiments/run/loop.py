"""The datasets of a run in this process: one event loop, one semaphore for model calls, a thread pool.

With ``run.processes=1`` this is the whole run; with ``run.processes=N`` each worker process
(`experiments.run.processes`) runs its share of the datasets here. Either way the same code writes the same
done-markers (``candidate.json`` per candidate, ``result.json`` per dataset) and returns the same records.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agents.base import Agent, Candidate, FatalAgentError, Task, Usage, cpu_bound
from agents.budget import Budget
from benchmark.errors import is_storage_failure
from core.atomic import atomic_write_json
from core.cli_errors import run_coroutine
from experiments.run.pools import close_agent, validation_executor
from strategies.base import ProfileValidator, Strategy, Validator
from strategies.context import RunContext, use
from strategies.selectors import SelectorError

__all__ = ["RESULT_MARKER", "ProgressEvents", "TasksJob", "run_tasks"]

log = logging.getLogger(__name__)

RESULT_MARKER = "result.json"
"""Written last into ``selected/<dataset>/``: resume trusts a dataset only when it exists."""


@dataclass(frozen=True)
class TasksJob:
    """What one process runs: its datasets' tasks and its share of the run's model calls in flight.

    Plain data, so a worker process of ``run.processes=N`` receives it as it is.

    Attributes:
        tasks: The datasets' tasks, in the run's order.
        run_dir: The run folder.
        resume: Reuse finished datasets and candidates (done-markers).
        profile: The validator profile (a name or the YAML file the run wrote).
        concurrency: Model calls in flight in this process (one semaphore; 1 for a `agents.base.cpu_bound`
            agent).
        outputs_store: Where the validator reports of the selected and merged outputs are kept by content
            (`strategies.base.ProfileValidator.outputs_store`); None validates them every time.
    """

    tasks: tuple[Task, ...]
    run_dir: Path
    resume: bool
    profile: str | Path
    concurrency: int
    outputs_store: Path | None = None


class ProgressEvents(Protocol):
    """What the runner reports as it goes: `experiments.run.progress.Progress`, or a worker's pipe to it."""

    def candidate_done(self, candidate: Candidate) -> None:
        """Count one finished candidate and its usage."""

    def dataset_done(self, name: str, *, reused: bool = False) -> None:
        """Count one finished dataset (``reused``: taken from a previous run)."""


def run_tasks(
    run_options: Mapping[str, Any],
    strategy: Strategy,
    agent: Agent,
    job: TasksJob,
    budget: Budget,
    progress: ProgressEvents,
) -> dict[str, dict[str, Any]]:
    """Run the strategy over the job's datasets in this process: one event loop, one semaphore, a thread pool.

    The whole run with ``run.processes=1``, and each worker's share of it otherwise.

    Args:
        run_options: The ``run`` node (`experiments.run.plan.RunSettings.run`: ``workers``,
            ``validation_processes``).
        strategy: The strategy.
        agent: The agent (built with ``budget`` when it takes one: `experiments.run.plan.build_components`).
        job: The datasets and this process's limits.
        budget: The run's budget (the plan's): checked before each agent call, and charged with the
            candidates of agents that do not charge it per model call.
        progress: Where finished candidates and datasets are reported.

    Returns:
        The records by dataset name (in the job's order); ``budget.hit`` says whether the budget stopped work.
    """
    executor = validation_executor(run_options)
    validator = ProfileValidator(job.profile, executor, outputs_store=job.outputs_store)

    # An agent that computes under this process's GIL gains nothing from a second call in flight, only lock
    # contention (agents.base.cpu_bound); its validations still overlap it in the executor's threads.
    in_flight = 1 if cpu_bound(agent) else job.concurrency

    async def main() -> dict[str, dict[str, Any]]:
        ctx = RunContext(
            candidates_root=job.run_dir / "candidates",
            resume=job.resume,
            semaphore=asyncio.Semaphore(in_flight),
            budget=budget,
            on_candidate=lambda t, c: progress.candidate_done(c),
        )
        use(ctx)
        done = await asyncio.gather(
            *(_one_dataset(strategy, t, agent, validator, job.resume, progress) for t in job.tasks)
        )
        return {t.name: record for t, record in zip(job.tasks, done, strict=True)}

    # What is on the heap now (LiteLLM, pydantic and the format libraries as imported, the built components)
    # lives as long as the process. Frozen, the collector stops walking it: a full collection over those
    # ~400k objects costs ~0.27 s of CPU, which a long run would otherwise pay every time enough new objects
    # survive, in the middle of its model calls. Unfrozen after, so what the run leaves can be collected.
    gc.freeze()
    try:
        records = run_coroutine(main())
    finally:
        executor.shutdown(wait=True)
        close_agent(agent)
        gc.unfreeze()
    return records


async def _one_dataset(
    strategy: Strategy, task: Task, agent: Agent, validator: Validator, resume: bool, progress: ProgressEvents
) -> dict[str, Any]:
    marker = task.out_dir / RESULT_MARKER
    if resume and marker.is_file():
        try:
            record: dict[str, Any] = json.loads(marker.read_text(encoding="utf-8"))
            progress.dataset_done(task.name, reused=True)
            return record
        except ValueError:
            log.warning("unreadable %s; redoing %s", marker, task.name)
    try:
        result = await strategy(task, agent, validator)
        record = result.to_dict()
    except Exception as exc:  # one dataset's failure must not lose the others
        if is_storage_failure(exc) or isinstance(exc, FatalAgentError | SelectorError):
            # The disk refuses writes / the provider refuses us / a plug-in is broken: every later dataset
            # would fail too, and a broken selector must never be reported as a working one.
            raise
        log.exception("strategy failed on %s", task.name)
        record = {
            "error": f"{type(exc).__name__}: {exc}",
            "decisions": {},
            "candidates": [],
            "usage": Usage().to_dict(),
            "incomplete": True,
        }
    if not record.get("incomplete") and "error" not in record:
        # Written last: resume trusts a dataset only when this exists. In a thread: its two fsyncs (~10 ms
        # here) would otherwise stop the event loop, and every other dataset's work with it.
        await asyncio.to_thread(atomic_write_json, marker, record)
    progress.dataset_done(task.name)
    return record

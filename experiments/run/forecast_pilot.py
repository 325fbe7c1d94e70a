"""``forecast.pilot=K``: measure the agent on the first K samples of each dataset before forecasting.

One candidate per dataset, ``generate`` only, through the run's own agent config (model, endpoint, cache,
limits, instructions), into ``<run>/forecast_pilot/<dataset>/``. These are real model calls: the pilot's own
spend is reported in the forecast (``source``). Its traces are what `experiments.run.forecast_rates` reads.

A K above ``agent.batch_size`` makes the pilot run the dataset in phases (plan, batches, ``data_meta``), so
every kind of conversation the run will have is measured; a smaller K is cheaper and the forecast then takes
the plan and ``data_meta`` conversations from the prior.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.base import Candidate, Task, Usage
from agents.instructions import resolve_instructions
from core.cli_errors import run_coroutine
from experiments.run.options import run_budget
from experiments.run.plan import RunSettings, build_agent, task_options
from experiments.run.pools import close_agent
from experiments.run.suite import benchmark_root

if TYPE_CHECKING:
    from benchmark.discover import Dataset

__all__ = ["PILOT_DIR", "run_pilot"]

PILOT_DIR = "forecast_pilot"


def run_pilot(
    settings: RunSettings, run_dir: Path, datasets: Sequence[Dataset], samples: int
) -> tuple[Path, dict[str, Any]]:
    """Run one candidate on the first ``samples`` samples of each dataset.

    Args:
        settings: The run's settings.
        run_dir: The run folder.
        datasets: The run's datasets.
        samples: Samples per dataset (K).

    Returns:
        The pilot folder and what it spent (``calls``, ``tokens``, ``usd``, ``cache_hits``).

    Raises:
        FatalAgentError: A failure every call would share (rejected key, unknown model, dead endpoint).
    """
    folder = run_dir / PILOT_DIR
    options = task_options(settings.agent, settings.seed)
    instructions = resolve_instructions(benchmark_root(settings.benchmark), settings.instructions)
    options["options"] = {**options["options"], "instructions": {k: v.text for k, v in instructions.items()}}
    tasks = []
    for d in datasets:
        task = Task.from_dataset(d, folder / d.name, **options)
        tasks.append(dataclasses.replace(task, entries=task.entries[:samples]))
    # The run's budget limits bound the pilot too: it never spends more than the run would be allowed.
    agent = build_agent(settings.agent, budget=run_budget(settings.run))
    slots = asyncio.Semaphore(max(1, settings.concurrency))

    async def one(task: Task) -> Candidate:
        async with slots:
            return await agent.generate(task)

    async def every() -> list[Candidate]:
        return list(await asyncio.gather(*(one(t) for t in tasks)))

    try:
        made = run_coroutine(every())
    finally:
        close_agent(agent)
    spent = sum((c.usage for c in made), Usage())
    return folder, {
        "calls": spent.calls,
        "tokens": spent.total_tokens,
        "usd": spent.cost_usd,
        "cache_hits": spent.cache_hits,
    }

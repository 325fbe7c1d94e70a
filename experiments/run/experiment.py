"""One run of ``python -m experiments``: every dataset concurrently under one semaphore for model calls and
a thread pool for CPU work (`experiments.run.loop`), in this process or split over ``run.processes``
worker processes (`experiments.run.processes`), resumable (done-markers), bounded (budget), with progress,
ending in the run folder.

Run folder: ``candidates/<dataset>/<k>/`` (each with its ``candidate.json`` done-marker),
``selected/<dataset>/`` (``agent1_data_organization`` + ``result.json`` written last), ``export/``,
``metrics.json``, ``metrics_strict.json``, ``samples.jsonl``, ``usage.json``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import medio
from agents.base import Task, Usage
from agents.budget import Budget
from agents.instructions import Instruction, resolve_instructions
from benchmark.discover import Dataset
from benchmark.layout import ANNOTATIONS_DIR
from core.atomic import atomic_write_json
from experiments.run.folder import claim_run_folder
from experiments.run.lock import run_folder_lock, takeover_note
from experiments.run.loop import RESULT_MARKER, TasksJob, run_tasks
from experiments.run.mistakes import format_miss_table, run_mistakes
from experiments.run.options import check_benchmark, check_budget
from experiments.run.plan import (
    RunPlan,
    RunSettings,
    build_components,
    is_simulation,
    read_settings,
    task_options,
    validator_profile,
)
from experiments.run.pools import close_agent
from experiments.run.processes import resolve_processes, run_in_processes, split_tasks
from experiments.run.progress import Progress
from experiments.run.results import (
    PROFILES,
    export_dataset,
    format_table,
    score_exports,
    unwritten_line,
    write_outputs,
)
from experiments.run.resume import check_resume, resume_mode, store_config
from experiments.run.served import role_models, served_label
from experiments.run.suite import benchmark_root, format_families, select_datasets

if TYPE_CHECKING:
    from omegaconf import DictConfig
from experiments.stored.mechanics import banner, mechanics_agent

__all__ = ["RESULT_MARKER", "NothingProduced", "RunOutcome", "benchmark_root", "preflight", "run_experiment"]

log = logging.getLogger(__name__)


class NothingProduced(RuntimeError):
    """No candidate of the run wrote a single sample; the message gives the most common reason."""


@dataclass
class RunOutcome:
    """What the CLI prints and the sweep callback collects.

    Attributes:
        run_dir: The run folder.
        metrics: ``{"official": metrics.json, "strict": metrics_strict.json}``.
        incomplete: True when the budget stopped it or a dataset failed.
        wall_s: Wall-clock seconds.
        table: The terminal table.
        errors: Per dataset, why its strategy failed.
    """

    run_dir: Path
    metrics: dict[str, dict[str, Any]]
    incomplete: bool
    wall_s: float
    table: str
    errors: dict[str, str] = field(default_factory=dict)


def _require_samples(records: dict[str, dict[str, Any]]) -> None:
    """Raise `NothingProduced` when no candidate of any dataset wrote a sample annotation."""
    reasons: Counter[str] = Counter()
    for name, record in records.items():
        if record.get("error"):
            reasons[str(record["error"])] += 1
        for cand in record.get("candidates", []):
            if any((Path(cand["output_dir"]) / ANNOTATIONS_DIR).glob("*.json")):
                return
            reasons[str(cand.get("reason") or "the agent finished without writing any sample")] += 1
        if not record.get("candidates") and not record.get("error"):
            reasons[f"no candidate was made for {name}"] += 1
    reason, count = reasons.most_common(1)[0] if reasons else ("no dataset was run", 0)
    total = sum(reasons.values())
    raise NothingProduced(
        f"no candidate produced a sample; most common reason ({count} of {total}): {reason}"
    )


def _usage(record: dict[str, Any]) -> Usage:
    data = {k: v for k, v in record.get("usage", {}).items() if k != "total_tokens"}
    return Usage(**data)


def preflight(cfg: DictConfig, run_dir: Path, settings: RunSettings | None = None) -> RunPlan:
    """Every check that needs no data, before any work: resume config, plug-ins, options, names.

    Called by `run_experiment` and, for a single run, by `experiments.callbacks.Preflight` before Hydra
    creates or rewrites the run folder.

    Args:
        cfg: The composed config (read by the plan builder only: `experiments.run.plan`).
        run_dir: The run folder (read only: for the resume check).
        settings: ``read_settings(cfg)`` when the caller has read it already.

    Returns:
        The run plan (strategy, agent, selector, validator profile, expected candidates, upper bound).

    Raises:
        ResumeMismatch: ``run.resume=true`` under a config that differs from the run's stored one.
        UnknownNameError: An unknown strategy, selector or agent name.
        OptionError: A strategy, selector or agent option its factory does not take or refuses.
        ValueError: An unknown ``scorer.profile`` or ``run.resume`` value.
    """
    settings = settings if settings is not None else read_settings(cfg)
    check_benchmark(settings.benchmark)  # an unknown key would be ignored: refused before anything else
    check_resume(settings, run_dir)  # before anything is written into the old run folder
    headline = settings.headline
    if headline not in PROFILES:  # checked before any work, not when the table is printed
        raise ValueError(f"unknown scorer.profile {headline!r}; valid: {', '.join(PROFILES)}")
    # Options are checked against the factories' signatures before the suite is generated or a call is made.
    plan = build_components(cfg, settings=settings)
    # Before any call: a budget the run could not hold (an unpriced role) is refused, not ignored.
    check_budget(settings.run, plan.agent, plan.judge)
    resolve_processes(settings.processes, plan.agent)
    settings.concurrency  # noqa: B018  # refused here, before a folder is made, even for a cpu_bound agent
    root = settings.benchmark.get("root")
    if root and not Path(str(root)).expanduser().is_dir():
        raise ValueError(
            f"benchmark.root={root}: no such folder (expected a benchmark root or a dataset folder)"
        )
    return plan


def run_experiment(
    cfg: DictConfig, run_dir: Path, *, preload: bool = True, store_outputs: bool = False
) -> RunOutcome:
    """Run the configured strategy over the configured benchmark and write the run folder.

    Args:
        cfg: The composed config (see ``conf/config.yaml``).
        run_dir: The run folder (Hydra's output dir).
        preload: Import every format library before the work starts (`medio.preload`). A reselection, whose
            candidates' validator reports are stored, reads no raw file and skips it (~1 s); a reader that
            does run imports its libraries under medio's import lock, which is safe from any thread.
        store_outputs: Keep the validator reports of the folders a strategy writes anew (the selected or
            merged output) by the hash of their bytes, beside the stored candidates
            (`strategies.base.ProfileValidator.outputs_store`): a reselection, which writes the same folders
            as the runs before it, then reads them back.

    Returns:
        The outcome.

    Raises:
        NoDatasetsError: The benchmark root holds no dataset.
        UnknownNameError: An unknown strategy, selector or agent name.
        OptionError: A strategy, selector or agent option its factory does not take or refuses.
        ResumeMismatch: ``run.resume=true`` under a config that differs from the run's stored one.
        NothingProduced: No candidate wrote a sample (and the budget did not stop the run).
        FatalAgentError: The agent hit a failure every candidate would hit (rejected key, unknown model,
            dead endpoint); the run stopped.
        WorkerLost: A worker process of ``run.processes=N`` died; the others finished their datasets.
        RunFolderBusy: Another live process is writing into ``run_dir``.
        FolderHoldsRun: ``run_dir`` holds another run and ``run.resume``/``run.replace`` is not set.
    """
    start = time.perf_counter()
    settings = read_settings(cfg)
    resume, _ = resume_mode(settings.run)
    plan = preflight(cfg, run_dir, settings)
    # A single run of the CLI claimed its folder before Hydra wrote into it (the Preflight callback), so this
    # finds it holding only Hydra's files; a sweep's job and a caller in Python are checked here.
    moved = claim_run_folder(settings.run, run_dir)
    if moved is not None:
        log.warning("moved the run in %s aside to %s (run.replace=true)", run_dir, moved)
    # A single run of the CLI holds the lock already (the Preflight callback) and keeps it until it exits; a
    # sweep's job, or a caller in Python (a notebook, a test), takes it here and gives it back at the end.
    with run_folder_lock(run_dir) as dead:
        if dead is not None:
            log.warning(takeover_note(run_dir, dead))
        return _run_locked(run_dir, start, resume, plan, preload, store_outputs)


def _run_locked(
    run_dir: Path, start: float, resume: bool, plan: RunPlan, preload: bool, store_outputs: bool
) -> RunOutcome:
    agent, settings = plan.agent, plan.settings
    root = benchmark_root(settings.benchmark)
    datasets = select_datasets(
        root, settings.benchmark.get("datasets"), settings.benchmark.get("shard"), samples=settings.samples
    )
    # Format libraries are imported here, in the main thread, before any worker thread exists: threads that
    # import pydicom/nibabel for the first time concurrently get half-initialised modules (docs/medio.md).
    # Not earlier: a config error (unknown dataset, empty root) is reported without paying for the imports.
    # Only the families the datasets' files need: a reader of any other family imports it under that lock.
    if preload:
        medio.preload(format_families(d.root for d in datasets))
    store_config(settings, run_dir)
    if settings.run.get("forecast"):
        # Before any call of the run: what it will cost, loud when over the budget (docs/experiments.md).
        from experiments.run.forecast import forecast_run, print_forecast

        print_forecast(forecast_run(settings, run_dir, datasets))
    profile = validator_profile(settings.validator, run_dir / ".validator", plan.validator)
    options = task_options(settings.agent, settings.seed)
    # Read now, at run time, from the user's checkout (never copied into the repository): run.json records
    # which files were used and their hashes.
    instructions = resolve_instructions(root, settings.instructions)
    options["options"] = {**options["options"], "instructions": {k: v.text for k, v in instructions.items()}}
    tasks = {d.name: Task.from_dataset(d, run_dir / "selected" / d.name, **options) for d in datasets}
    agent_check = getattr(agent, "preflight", None)
    if callable(agent_check):
        agent_check(list(tasks.values()))  # an agent that can tell bad input before any call says so here
    job = TasksJob(
        tasks=tuple(tasks.values()),
        run_dir=run_dir,
        resume=resume,
        profile=profile,
        concurrency=settings.concurrency,
        outputs_store=run_dir / "candidates" if store_outputs else None,
    )
    shares = split_tasks(job, resolve_processes(settings.processes, agent), plan.candidates)
    progress_on = settings.progress
    if len(shares) > 1:
        close_agent(agent)  # built to check the config; the workers build their own
        merged, budget = run_in_processes(settings, shares, progress_enabled=progress_on)
        records = {name: merged[name] for name in tasks}  # the run's order, as one process returns them
    else:
        budget = plan.budget
        progress = Progress(len(tasks), enabled=progress_on)
        try:
            records = run_tasks(settings.run, plan.strategy, agent, job, budget, progress)
        finally:
            progress.close()
    simulation = is_simulation(agent)
    return _finish(run_dir, datasets, records, budget, plan, start, simulation, instructions=instructions)


def _finish(
    run_dir: Path,
    datasets: list[Dataset],
    records: dict[str, dict[str, Any]],
    budget: Budget,
    plan: RunPlan,
    start: float,
    simulation: bool = False,
    *,
    instructions: dict[str, Instruction] | None = None,
) -> RunOutcome:
    settings = plan.settings
    if not budget.hit:
        _require_samples(records)
    run_name = settings.name
    exports = {
        d.name: export_dataset(
            d, run_dir / "selected" / d.name / "agent1_data_organization", run_dir / "export", run_name
        )
        for d in datasets
        if "error" not in records[d.name] and records[d.name].get("decisions")
    }
    scores = score_exports(exports, run_name, plan.metrics)
    errors = {name: str(r["error"]) for name, r in records.items() if "error" in r}
    incomplete = budget.hit or bool(errors) or any(r.get("incomplete") for r in records.values())
    usage = {name: _usage(r) for name, r in records.items()}
    n_candidates = sum(len(r.get("candidates", [])) for r in records.values())
    mistakes = run_mistakes(records, datasets, plan.label, settings.seed, run_dir / "selected")
    # Labelled candidates only come from the simulator: a run over them (a reselection) is a simulation too.
    simulation = simulation or mistakes is not None
    docs = write_outputs(
        run_dir,
        run_name,
        records,
        scores,
        usage,
        incomplete=incomplete,
        upper_bound=plan.upper_bound,
        simulation=simulation,
        mistakes=mistakes,
        extra_usage={
            "candidates": n_candidates,
            "budget": {
                "max_tokens": budget.max_tokens,
                "max_usd": budget.max_usd,
                "hit": budget.hit,
                "spent_tokens": budget.spent.tokens,
                "spent_usd": budget.spent.usd,
            },
            "errors": errors,
        },
    )
    wall = time.perf_counter() - start
    agent_name = settings.agent_name
    if plan.pool:
        agent_name = "+".join(f"{label}×{n}" for label, n in plan.pool)
    spent = sum(usage.values(), Usage())
    models = role_models(plan.agent, plan.judge)
    served = served_label(models)
    if served is not None:  # agent=local's name says nothing of the weights: say what the server served
        agent_name += f" ({served})"
    limit = settings.samples
    shown = f" · first {limit} samples each" if limit is not None else ""
    title = (
        f"{plan.name} · {len(datasets)} datasets{shown} · agent {agent_name} · {spent.total_tokens} tokens · "
        f"${spent.cost_usd:.4f}"
    )
    calls, hits = spent.calls, spent.cache_hits
    if calls:  # an agent that calls a model: what this seed bought, what the request cache answered (free)
        title += f" · seed {settings.seed}: {calls - hits} calls bought, {hits} from the cache"
    fitted = settings.fitted
    if fitted:
        # Weights learned from ground truth (experiments.validator_eval --fit): never to be read as hand-set.
        title += f" · validator {settings.validator.get('profile')} (FITTED to ground truth)"
    title += f" · {wall:.1f}s"
    atomic_write_json(
        run_dir / "run.json",
        {
            "wall_s": wall,
            "datasets": [d.name for d in datasets],
            # The sample limit (benchmark.samples): the run, its validator and its scores cover only the first
            # N manifest entries of each dataset.
            "samples_per_dataset": limit,
            "samples": {d.name: len(d.entries()) for d in datasets},
            "run_name": run_name,
            "strategy": plan.name,
            # Per role, the model the config names and the one its server said it serves.
            "models": models,
            "instructions": {stage: i.record() for stage, i in (instructions or {}).items()},
            **({"simulation": True} if simulation else {}),
            **({"validator_fitted": fitted} if fitted else {}),
            "config": dict(settings.config),
        },
    )
    roles_text = None
    if plan.pool or plan.judge is not None or plan.reviser is not None:
        # Imported here: only runs with roles pay for the per-agent table (it scores every candidate). Written
        # before the HTML report, which shows it.
        from experiments.run.role_table import role_table, write_role_table

        roots = {d.name: Path(d.root) for d in datasets}
        roles_text = write_role_table(run_dir, role_table(records, roots))
    if settings.report:
        # Imported here: the report's modules stay out of --help and of runs that do not want it.
        from experiments.report import write_report

        write_report(run_dir)  # never raises into the run: a failure is logged and the run still succeeds
    table = format_table(docs, title, settings.headline, datasets=[d.name for d in datasets], failed=errors)
    unwritten = unwritten_line(records)
    if unwritten is not None:
        table += "\n" + unwritten
    if roles_text is not None:
        table += "\n" + roles_text
    if mistakes is not None:
        table += "\n" + format_miss_table(mistakes.document)
    if settings.run.get("forecast"):
        from experiments.run.forecast import compare_with_actual

        versus = compare_with_actual(run_dir, {"total": spent.to_dict()}, time.perf_counter() - start)
        if versus is not None:
            table += "\n" + versus
    mechanics = mechanics_agent(settings.agent)
    if mechanics is not None:
        table += "\n" + banner(mechanics)
    return RunOutcome(run_dir, docs, incomplete, wall, table, errors)

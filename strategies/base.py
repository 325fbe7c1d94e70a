"""What every strategy shares: the `Strategy` and `Validator` protocols and the `StrategyResult` they return.

A strategy is an async callable ``run(task, agent, validator) -> StrategyResult``, built by a factory that
takes the strategy's typed options (``best_of_n(n=5)``). It writes the selected output into
``task.output_dir`` and returns every candidate it made, a decision per sample with its reason, and the usage
summed over every call.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from agents.base import Agent, Candidate, Task, Usage
from benchmark.discover import Dataset
from benchmark.errors import ManifestError
from core.registry import Registry
from strategies.context import DONE_MARKER
from validator.report import Report
from validator.report_store import validate_by_content, validate_stored
from validator.validate import get_profile, validate

__all__ = [
    "DONE_MARKER",
    "REPORTS_DIR",
    "ProfileValidator",
    "SampleDecision",
    "Strategy",
    "StrategyFactory",
    "StrategyResult",
    "Validator",
    "agent_work",
    "strategies",
    "strategy",
    "task_dataset",
]

R = TypeVar("R")

REPORTS_DIR = "reports"
"""Beside a stored candidate's output: its validator reports, one file per check fingerprint."""


class Validator(Protocol):
    """Scores a candidate without ground truth (see `validator.validate`)."""

    @property
    def name(self) -> str:
        """The validator's (profile) name."""
        ...

    def validate(self, candidate: Candidate | Path, task: Task) -> Report:
        """Validate one candidate folder of ``task``'s dataset.

        Args:
            candidate: The candidate or its ``agent1_data_organization`` folder.
            task: The dataset it belongs to.

        Returns:
            The report (per-sample totals, check outcomes, field paths).
        """
        ...


@dataclass
class ProfileValidator:
    """The project's validator under one check profile.

    Attributes:
        profile: ``"evidence"``, ``"mdsbench"`` or a profile YAML path.
        executor: Where the CPU-bound steps of the strategies run (None: the loop's default thread pool;
            `run_cpu`); `experiments.run.pools.RunExecutor` sends the validations to worker processes.
        store_reports: Keep each stored candidate's report beside it (``candidates/<dataset>/<k>/reports/``)
            and reuse it while the candidate and the checks are unchanged (`validator.report_store`), so a
            reselection or a resumed run does not validate the same candidate again.
        outputs_store: Where the reports of the folders a strategy writes anew on every run (the selected
            or merged output, validated by S0-S2 and S4) are kept by the hash of their bytes
            (``<outputs_store>/<dataset>/reports/``, `validator.report_store.validate_by_content`); None
            (the default, a fresh run) validates them every time. A reselection sets it, so that writing
            the same merged folder again does not validate it again.
    """

    profile: str | Path = "evidence"
    executor: Executor | None = None
    store_reports: bool = True
    outputs_store: Path | None = None

    @property
    def name(self) -> str:
        """The profile name (the file stem for a YAML path)."""
        return Path(self.profile).stem if str(self.profile).endswith((".yaml", ".yml")) else str(self.profile)

    def validate(self, candidate: Candidate | Path, task: Task) -> Report:
        """Validate ``candidate`` against the raw data and manifest of ``task.root`` (never ground truth)."""
        folder = candidate.output_dir if isinstance(candidate, Candidate) else Path(candidate)
        dataset = task_dataset(task)
        marker = folder.parent / DONE_MARKER
        if self.store_reports and isinstance(candidate, Candidate) and marker.is_file():
            # Only a finished candidate (its done-marker written) has a stable folder worth a stored report.
            store = folder.parent / REPORTS_DIR
            report, _ = validate_stored(folder, dataset, get_profile(self.profile), store)
            return report
        if self.store_reports and self.outputs_store is not None and not isinstance(candidate, Candidate):
            store = self.outputs_store / task.name / REPORTS_DIR
            report, _ = validate_by_content(folder, dataset, get_profile(self.profile), store)
            return report
        return validate(folder, dataset, profile=self.profile)

    def __getstate__(self) -> dict[str, Any]:
        # A validation sent to a worker process pickles this validator with it; the executor stays here.
        return {
            "profile": self.profile,
            "executor": None,
            "store_reports": self.store_reports,
            "outputs_store": self.outputs_store,
        }


def task_dataset(task: Task) -> Dataset | Path:
    """What the validator checks a candidate of ``task`` against: the dataset root, or the dataset cut to the
    task's samples when the run has a sample limit (``benchmark.samples``: its first N manifest entries), so
    the samples left out are not reported missing to a reviser, nor counted against data_meta."""
    full = _manifest_size(str(task.root))
    if full is not None and len(task.entries) < full:
        return Dataset.from_root(task.root).first(len(task.entries))
    return task.root


@functools.lru_cache(maxsize=256)
def _manifest_size(root: str) -> int | None:
    # Once per dataset and process: a validation per candidate and per revision must not parse it again.
    try:
        return len(Dataset.from_root(root).entries())
    except ManifestError:
        return None


async def run_cpu(validator: Validator, fn: Callable[..., R], *args: Any) -> R:
    """Run CPU-bound work in the validator's executor so the event loop keeps serving model calls."""
    executor = getattr(validator, "executor", None)
    return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)


@dataclass
class SampleDecision:
    """What a strategy decided for one manifest index.

    Attributes:
        index: The manifest index.
        candidate: The position (in `StrategyResult.candidates`) of the candidate whose output was kept,
            None when no candidate had this sample.
        reason: Why, in words (``"validator_max: 0.93 > 0.81"``).
        score: The kept output's validator total.
        fallback: True when the configured selector failed here and ``validator_max`` decided instead.
        details: Strategy-specific extras (votes, reverted fields, per-candidate scores).
    """

    index: int
    candidate: int | None
    reason: str
    score: float = 0.0
    fallback: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict."""
        return {
            "index": self.index,
            "candidate": self.candidate,
            "reason": self.reason,
            "score": round(self.score, 6),
            "fallback": self.fallback,
            "details": self.details,
        }


@dataclass
class StrategyResult:
    """The outcome of one strategy on one dataset.

    Attributes:
        strategy: The strategy's name.
        output_dir: The selected ``agent1_data_organization`` folder (``task.output_dir``).
        candidates: Every candidate produced (generations and revisions), in creation order.
        decisions: One decision per manifest index.
        usage: Summed over every agent call.
        upper_bound: True when ground truth influenced the choice (the ``oracle`` selector): not a
            real result.
        incomplete: True when the budget stopped the strategy early.
        notes: Free log lines (reverted fields, skipped rounds).
    """

    strategy: str
    output_dir: Path
    candidates: list[Candidate]
    decisions: dict[int, SampleDecision]
    usage: Usage
    upper_bound: bool = False
    incomplete: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (the run's per-dataset record)."""
        return {
            "strategy": self.strategy,
            "output_dir": str(self.output_dir),
            "candidates": [c.to_dict() for c in self.candidates],
            "decisions": {str(i): d.to_dict() for i, d in sorted(self.decisions.items())},
            "usage": self.usage.to_dict(),
            "upper_bound": self.upper_bound,
            # A candidate a limit stopped short leaves the dataset incomplete too (the run exits 3).
            "incomplete": self.incomplete or any(c.status == "incomplete" for c in self.candidates),
            "notes": list(self.notes),
        }


class Strategy(Protocol):
    """``await strategy(task, agent, validator)``: standardize ``task`` into ``task.output_dir``."""

    async def __call__(self, task: Task, agent: Agent, validator: Validator) -> StrategyResult:
        """Run the strategy on one dataset.

        Args:
            task: The dataset; the selected output goes to ``task.output_dir``.
            agent: Anything implementing the `Agent` protocol.
            validator: The ground-truth-free validator.

        Returns:
            The result.
        """
        ...


StrategyFactory = Callable[..., Strategy]

strategies: Registry[StrategyFactory] = Registry(
    "strategy",
    entry_point_group="medstrat.strategies",
    lazy={
        "direct": "strategies.direct:direct",
        "s0": "strategies.direct:direct",
        "self_refine": "strategies.self_refine:self_refine",
        "s1": "strategies.self_refine:self_refine",
        "checklist": "strategies.checklist:checklist",
        "s2": "strategies.checklist:checklist",
        "best_of_n": "strategies.best_of_n:best_of_n",
        "s3": "strategies.best_of_n:best_of_n",
        "fieldwise": "strategies.fieldwise:fieldwise",
        "s4": "strategies.fieldwise:fieldwise",
        "paper_best_of_n": "strategies.paper.best_of_n:paper_best_of_n",
        "s3_paper": "strategies.paper.best_of_n:paper_best_of_n",
        "paper_fieldwise": "strategies.paper.fieldwise:paper_fieldwise",
        "s4_paper": "strategies.paper.fieldwise:paper_fieldwise",
        "plan_selection": "strategies.plan_selection:plan_selection",
        "plans": "strategies.plan_selection:plan_selection",
    },
)
"""Strategy factories by name (S0-S4, plan selection and the paper's S3/S4 under their ids and names)."""


def strategy(
    name: str, *, aliases: tuple[str, ...] = (), **meta: Any
) -> Callable[[StrategyFactory], StrategyFactory]:
    """Decorator registering a strategy factory (``@strategy("s3", aliases=("best_of_n",))``).

    Args:
        name: The registry name.
        aliases: Further names.
        **meta: What the run plan reads about the strategy: ``candidates`` (it stores n candidates per
            dataset), ``reselectable`` (``medstrat reselect`` may re-choose among them with
            another selector), ``validator`` (the validator profile its procedure requires), and for the
            forecast (`agent_work`) ``generations`` and ``revisions``: agent calls per dataset, each an
            int, the name of an option holding it (``"n"``, ``"rounds"``), or a ``(low, high)`` pair of
            those (S2 revises only when the checklist flags something: ``(0, 1)``); ``plans``: plans each
            candidate's plan step samples (`agent_plans`).

    Returns:
        The decorator.
    """
    return strategies.register(name, aliases=aliases, **meta)


def agent_work(kind: str, options: Mapping[str, Any]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """How many ``generate`` and ``revise`` calls per dataset a strategy makes (its registry entry says).

    Args:
        kind: The strategy's registry name.
        options: The strategy's configured options (an option the config leaves out takes the factory's
            default).

    Returns:
        ``((generations low, high), (revisions low, high))``, or None when the strategy declares no
        ``generations`` (a plug-in registered without it).

    Raises:
        UnknownNameError: No such strategy.
    """
    meta = strategies.meta(kind)
    if "generations" not in meta:
        return None

    def span(value: Any) -> tuple[int, int]:
        low, high = value if isinstance(value, tuple | list) else (value, value)
        return _declared(kind, options, low), _declared(kind, options, high)

    return span(meta["generations"]), span(meta.get("revisions", 0))


def agent_plans(kind: str, options: Mapping[str, Any]) -> int:
    """Plans the strategy asks its candidates' plan step to sample (its registry entry's ``plans``; 1 else).

    Args:
        kind: The strategy's registry name.
        options: The strategy's configured options.

    Returns:
        The plans per candidate.
    """
    return _declared(kind, options, strategies.meta(kind).get("plans", 1))


def _declared(kind: str, options: Mapping[str, Any], value: Any) -> int:
    """A count the registry entry declares: an int, or the name of an option (its configured value, else the
    factory's default)."""
    if not isinstance(value, str):
        return int(value)
    if value in options:
        return int(options[value])
    default = inspect.signature(strategies.get(kind)).parameters.get(value)
    if default is None or default.default is inspect.Parameter.empty:
        return 0
    return int(default.default)


def usage_of(candidates: Sequence[Candidate]) -> Usage:
    """Sum of the candidates' usages."""
    total = Usage()
    for c in candidates:
        total = total + c.usage
    return total

"""The agent protocol: what a strategy hands an agent (`Task`) and what it gets back (`Candidate`).

One `Task` is one dataset; one `Candidate` is one complete output folder in the benchmark layout
covering every manifest sample of that dataset (as in the paper), plus what it cost (`Usage`) and a JSONL
trace. This module never imports litellm, so strategies and the experiment runner can depend on it freely.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "OUTPUT_SUBDIR",
    "Agent",
    "Candidate",
    "FatalAgentError",
    "Feedback",
    "Limits",
    "ManifestEntry",
    "Task",
    "Usage",
    "calls_model",
    "cpu_bound",
    "samples_plans",
]

# SPEC §2.1: the reference evaluator only finds outputs under `<run>/agent1_data_organization`.
OUTPUT_SUBDIR = "agent1_data_organization"

CandidateStatus = Literal["ok", "incomplete", "failed"]


@dataclass(frozen=True)
class Usage:
    """What one or more model calls cost.

    Attributes:
        prompt_tokens: Input tokens as reported by the provider (or replayed from the cache).
        completion_tokens: Output tokens.
        cost_usd: Cost in US dollars (provider/LiteLLM price when known, else the configured per-token price).
        wall_s: Wall-clock seconds spent producing the candidate.
        calls: Model calls answered (from the provider or the cache).
        retries: Extra attempts spent on transient provider errors.
        cache_hits: Calls answered from the request cache (0 tokens actually spent on them in this run).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    calls: int = 0
    retries: int = 0
    cache_hits: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages field by field (wall times add up too: use it for sequential work)."""
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(*(getattr(self, f.name) + getattr(other, f.name) for f in dataclasses.fields(self)))

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-able dict (with ``total_tokens``)."""
        out = dataclasses.asdict(self)
        out["total_tokens"] = self.total_tokens
        return out


@dataclass(frozen=True)
class ManifestEntry:
    """One line of ``VLM/random.txt``, re-rooted onto the dataset.

    Attributes:
        index: The sample index; outputs are named ``images/<index>.png`` etc.
        relpath: The raw source path relative to the dataset root (``data/...``), POSIX separators.
    """

    index: int
    relpath: str


@dataclass(frozen=True)
class Limits:
    """Per-candidate bounds; hitting one ends the candidate cleanly with what was written so far.

    Attributes:
        max_turns: Model calls per candidate.
        max_tool_calls: Tool calls per candidate.
        max_tokens: Prompt plus completion tokens per candidate.
    """

    max_turns: int = 60
    max_tool_calls: int = 200
    max_tokens: int = 400_000


@dataclass(frozen=True)
class Task:
    """One dataset to standardize, and how this particular candidate should be produced.

    Attributes:
        root: The dataset root (the folder holding ``data/`` and ``VLM/random.txt``).
        name: The dataset name (what ``record.dataset_name`` should say).
        entries: The manifest samples, in manifest order.
        out_dir: Where this candidate is written; outputs go to ``out_dir / "agent1_data_organization"``.
        output_schema: JSON Schema of the per-image annotation, shown to model-based agents (optional).
        seed: Random seed for agents that sample.
        candidate_index: Which of n candidates this is; makes n requests distinct samples (and cache keys).
        temperature: Sampling temperature.
        limits: Per-candidate bounds.
        options: Free agent-specific options (JSON-able).
    """

    root: Path
    name: str
    entries: tuple[ManifestEntry, ...]
    out_dir: Path
    output_schema: Mapping[str, Any] | None = None
    seed: int = 0
    candidate_index: int = 0
    temperature: float = 0.0
    limits: Limits = field(default_factory=Limits)
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def output_dir(self) -> Path:
        """The benchmark-layout folder this candidate writes (``<out_dir>/agent1_data_organization``)."""
        return self.out_dir / OUTPUT_SUBDIR

    @property
    def indices(self) -> tuple[int, ...]:
        """The manifest indices, in manifest order."""
        return tuple(e.index for e in self.entries)

    @classmethod
    def from_dataset(cls, dataset: Any, out_dir: Path, **options: Any) -> Task:
        """Build a task from a `benchmark.discover.Dataset` (anything with ``root``, ``name``, ``entries()``).

        Args:
            dataset: The dataset; ``entries()`` yields objects with ``index`` and ``relpath``.
            out_dir: Where the candidate is written (parent of ``agent1_data_organization``).
            **options: Further `Task` fields (``seed``, ``temperature``, ``limits`` ...).

        Returns:
            The task.
        """
        entries = tuple(ManifestEntry(int(e.index), str(e.relpath)) for e in dataset.entries())
        return cls(
            root=Path(dataset.root), name=str(dataset.name), entries=entries, out_dir=Path(out_dir), **options
        )

    def for_candidate(self, candidate_index: int, out_dir: Path, *, seed: int | None = None) -> Task:
        """Return a copy of this task for another candidate.

        Args:
            candidate_index: The new candidate index.
            out_dir: Its output folder (the parent of ``agent1_data_organization``).
            seed: Its seed; defaults to ``self.seed + candidate_index``.

        Returns:
            The new task.
        """
        new_seed = self.seed + candidate_index if seed is None else seed
        return dataclasses.replace(
            self, candidate_index=candidate_index, out_dir=Path(out_dir), seed=new_seed
        )


@dataclass(frozen=True)
class Candidate:
    """One complete output folder for one dataset, with its cost and trace.

    Attributes:
        output_dir: ``<out_dir>/agent1_data_organization`` (images/, masks/, standardized_annotations/,
            data_meta.json).
        usage: What producing it cost.
        trace_path: The JSONL trace of every model call and tool call, or None when the agent keeps none.
        status: ``"ok"``; ``"incomplete"`` when a limit or the budget stopped it with samples (or the dataset
            JSON) unwritten (its outputs are usable, the run is marked incomplete and exits 3); ``"failed"``
            (it keeps whatever it wrote before failing).
        reason: Why it failed or why it stopped early (a limit, the budget); None after a normal finish.
        candidate_index: Which candidate of the task this is.
        agent: The agent's name.
        skipped: Samples the agent deliberately wrote nothing for, and why, in one line each (e.g. the
            ``medio`` error of an undecodable source); strategies put the reason in the sample's decision.
        missing: Manifest indices with no annotation when the candidate ended (an incomplete candidate's).
    """

    output_dir: Path
    usage: Usage = field(default_factory=Usage)
    trace_path: Path | None = None
    status: CandidateStatus = "ok"
    reason: str | None = None
    candidate_index: int = 0
    agent: str = ""
    skipped: dict[int, str] = field(default_factory=dict)
    missing: tuple[int, ...] = ()

    @property
    def ok(self) -> bool:
        """True unless the candidate failed (an ``incomplete`` one, stopped early by a limit, is usable)."""
        return self.status != "failed"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-able summary (paths as strings)."""
        return {
            "output_dir": str(self.output_dir),
            "usage": self.usage.to_dict(),
            "trace_path": None if self.trace_path is None else str(self.trace_path),
            "status": self.status,
            "reason": self.reason,
            "candidate_index": self.candidate_index,
            "agent": self.agent,
            "skipped": {str(k): v for k, v in sorted(self.skipped.items())},
            "missing": list(self.missing),
        }


@dataclass(frozen=True)
class Feedback:
    """What a strategy tells an agent to fix.

    Attributes:
        message: Free text (a self-check instruction or the validator's failed items).
        items: Per-field messages: ``(sample index or None for data_meta, field path, message)``.
    """

    message: str = ""
    items: tuple[tuple[int | None, str, str], ...] = ()

    def render(self) -> str:
        """Return the feedback as plain text for a prompt."""
        lines = [self.message] if self.message else []
        for index, path, msg in self.items:
            where = "data_meta.json" if index is None else f"sample {index}"
            lines.append(f"- {where} · {path}: {msg}")
        return "\n".join(lines)


class FatalAgentError(RuntimeError):
    """A failure no later call can avoid (rejected credentials, an unknown model, an unreachable endpoint).

    The one exception an agent raises out of ``generate``/``revise``: every other candidate of the run would
    fail the same way, so the runner stops the run with one line naming ``reason`` (exit 4) instead of
    spending the retry budget of each candidate in turn.

    Args:
        reason: One line saying what failed and what to do about it.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@runtime_checkable
class Agent(Protocol):
    """Anything that turns a `Task` into a `Candidate` and can revise one.

    Implementations never raise for a bad sample or a provider failure: they return a failed `Candidate`
    with a reason, so the run goes on. The exception is `FatalAgentError`, for failures that doom every
    candidate alike (rejected key, unknown model, dead endpoint); the runner stops the run on it.
    """

    name: str

    async def generate(self, task: Task) -> Candidate:
        """Produce one complete candidate for the task.

        Args:
            task: The dataset and the run options of this candidate.

        Returns:
            The candidate (status ``"failed"`` with a reason when it could not be completed).
        """
        ...

    async def revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable_fields: Sequence[str]
    ) -> Candidate:
        """Produce a revised copy of ``candidate`` in ``task.output_dir``.

        Args:
            task: The dataset; its ``output_dir`` receives the revised candidate.
            candidate: The candidate to revise (left untouched unless it lives in ``task.output_dir``).
            feedback: What to fix.
            editable_fields: Field paths the revision may change (``"tasks.classification.label"``,
                ``"data_meta.num_classes_per_task"``); strategies enforce the whitelist themselves.

        Returns:
            The revised candidate.
        """
        ...


def calls_model(agent: object) -> bool:
    """Whether an agent spends its time waiting on model calls (its class says ``calls_model = True``).

    Such agents are I/O-bound and gain from several worker processes (``run.processes=auto`` gives them one
    per core); agents that compute everything locally (``rules``, ``simulated``) do not declare it and run in
    one process. The attribute is optional, so agents written before it existed keep the `Agent` protocol.

    Args:
        agent: Any agent.

    Returns:
        The agent's ``calls_model`` attribute, False when it has none.
    """
    return bool(getattr(agent, "calls_model", False))


def cpu_bound(agent: object) -> bool:
    """Whether an agent computes under this process's GIL and waits on nothing (its class says
    ``cpu_bound = True``: ``rules``, ``simulated``).

    A process runs one generation or revision of such an agent at a time (`experiments.run.loop`): more of
    them in threads only take turns at the GIL. On the bundled suite's S3 (2 cores), eight in flight cost
    1.4-1.5x the CPU of one (half of the difference is system time: the threads' lock calls) and run
    1.3-1.4x longer (``perf/cpu_bound_agent.py``). Agents that do not declare it (anything written before
    the attribute, any agent that waits on its own services) keep ``run.concurrency`` in flight.

    Args:
        agent: Any agent.

    Returns:
        The agent's ``cpu_bound`` attribute, False when it has none.
    """
    return bool(getattr(agent, "cpu_bound", False))


def samples_plans(agent: object) -> bool:
    """Whether an agent has a plan step that reads ``task.options["plans"]`` (its class says
    ``samples_plans = True``: the model-driven agent's guided plan, `agents.llm.guided`).

    ``strategy=plans`` asks for its n plans through that option; an agent without a plan step (``rules``)
    makes its one candidate as under S0.

    Args:
        agent: Any agent.

    Returns:
        The agent's ``samples_plans`` attribute, False when it has none.
    """
    return bool(getattr(agent, "samples_plans", False))

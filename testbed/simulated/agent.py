"""`SimulatedAgent`: the oracle's correct output with sampled, labelled mistakes; revision fixes named ones.

``generate`` copies the dataset's correct output (``<dataset>/VLM/<source>/agent1_data_organization``, the
oracle export of a suite) into the candidate folder with mistakes drawn by `testbed.perturb` and writes
``mistakes.json`` beside it. ``revise`` fixes each mistake the feedback names with probability ``p_fix`` and
adds a new one with probability ``p_new`` on every sample it touches, so a study can ask how good a model's
revision must be for S1/S2 to beat S3. No model is called: usage is zero tokens and zero cost.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from agents.base import OUTPUT_SUBDIR, Candidate, Feedback, Task, Usage
from testbed.perturb import (
    MISTAKES,
    Applied,
    MixConfig,
    correct_annotations,
    perturb_folder,
    read_mistake_meta,
    replay_sample,
    write_mistakes,
)

__all__ = ["SimulatedAgent", "SimulationNotAllowed", "SimulationSourceMissing"]

_HOW_TO_FIX = (
    "write one with `medstrat synth DIR --oracle oracle` and run on DIR (benchmark=dir "
    "benchmark.root=DIR), or set agent.source / agent.source_root"
)


class SimulationNotAllowed(ValueError):
    """The ``simulated`` agent reads ground truth; it runs only with ``analysis.simulated=true``."""


class SimulationSourceMissing(ValueError):
    """A dataset of the run has no correct output for the ``simulated`` agent to perturb."""


def _covered(path: str, editable: Sequence[str]) -> bool:
    # Same rule as S2's whitelist (strategies._whitelist.covered), restated here: agents never import
    # strategies. Files: the image needs "images", the mask "tasks.segmentation", a whole-file rewrite "*".
    if "*" in editable:
        return True
    if path == "masks":
        path = "tasks.segmentation"
    if path == "":
        return False
    return any(path == w or path.startswith(w + ".") for w in editable)


def _named(field: str, paths: Sequence[str]) -> bool:
    # A feedback item names a mistake when either path lies inside the other ("" = the whole sample).
    return any(
        not field or not p or field == p or field.startswith(p + ".") or p.startswith(field + ".")
        for p in paths
    )


class SimulatedAgent:
    """Oracle output plus labelled mistakes (SIMULATION ONLY; gated by ``analysis.simulated``).

    Args:
        source: The run folder under ``<dataset>/VLM/`` that holds the correct output.
        source_root: A benchmark root whose ``<dataset>/VLM/<source>/`` holds it instead (default: the
            dataset itself).
        clean: Probability that a sample is left clean.
        mix: Relative weights by mistake type or category (`testbed.perturb.MixConfig`).
        default_weight: Weight of the types ``mix`` does not name.
        extra_rate: Probability of each further mistake on a sample that has one.
        max_per_sample: At most this many mistakes per sample.
        p_fix: Probability that a revision fixes a mistake the feedback names.
        p_new: Probability that a revision adds a new mistake to a sample it touches.
        temperature: Ignored (accepted so the common agent config applies).
        name: The agent's name in candidates and reports.
    """

    simulation = True
    """Marks the agent for the runner's gate and labels (like the oracle selector's upper bound)."""

    cpu_bound = True
    """Local edits of stored outputs, no model call: one candidate at a time per process
    (`agents.base.cpu_bound`)."""

    def __init__(
        self,
        source: str = "oracle",
        source_root: str | None = None,
        clean: float = 0.45,
        mix: Mapping[str, float] | None = None,
        default_weight: float = 1.0,
        extra_rate: float = 0.25,
        max_per_sample: int = 3,
        p_fix: float = 0.8,
        p_new: float = 0.1,
        temperature: float | None = None,
        name: str = "simulated",
    ) -> None:
        self.name = name
        self.source = source
        self.source_root = Path(source_root).expanduser() if source_root else None
        self.config = MixConfig(
            clean=float(clean),
            mix=dict(mix or {}),
            default_weight=float(default_weight),
            extra_rate=float(extra_rate),
            max_per_sample=int(max_per_sample),
        )
        if not (0.0 <= p_fix <= 1.0 and 0.0 <= p_new <= 1.0):
            raise ValueError("p_fix and p_new are probabilities (0..1)")
        self.p_fix, self.p_new = float(p_fix), float(p_new)

    def correct_dir(self, task: Task) -> Path:
        """Where the task's correct output is read from."""
        root = self.source_root / task.name if self.source_root else Path(task.root)
        return root / "VLM" / self.source / OUTPUT_SUBDIR

    def preflight(self, tasks: Sequence[Task]) -> None:
        """Refuse, before any work, a run where some dataset has no correct output to perturb.

        Raises:
            SimulationSourceMissing: Naming the missing folders (the runner exits 2 with this one line).
        """
        missing = [t.name for t in tasks if not (self.correct_dir(t) / "standardized_annotations").is_dir()]
        if missing:
            first = self.correct_dir(next(t for t in tasks if t.name == missing[0]))
            more = ", ..." if len(missing) > 3 else ""
            raise SimulationSourceMissing(
                f"no correct output to perturb for {len(missing)} dataset(s) "
                f"({', '.join(missing[:3])}{more}; e.g. {first}): {_HOW_TO_FIX}"
            )

    async def generate(self, task: Task) -> Candidate:
        """Write the correct output with sampled mistakes into ``task.output_dir`` (+ ``mistakes.json``)."""
        return await asyncio.to_thread(self._generate, task)

    async def revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable_fields: Sequence[str]
    ) -> Candidate:
        """Fix each named mistake with probability ``p_fix``; maybe add a new one (``p_new``) per sample.

        A structured feedback (``Feedback.items``) names the mistakes whose fields its items point at, on
        their samples; free text names every mistake (a self-check reviews everything). Only mistakes whose
        fields are all editable are fixed, so a strategy's whitelist never silently undoes a fix. The
        candidate is a folder this agent wrote (with ``mistakes.json``); empty ``editable_fields``: any field.
        """
        return await asyncio.to_thread(self._revise, task, candidate, feedback, tuple(editable_fields))

    # ------------------------------------------------------------------ internals
    def _missing(self, task: Task, start: float) -> Candidate | None:
        correct = self.correct_dir(task)
        if (correct / "standardized_annotations").is_dir():
            return None
        return self._candidate(
            task,
            start,
            "failed",
            f"no correct output to perturb at {correct}: {_HOW_TO_FIX}",
        )

    def _generate(self, task: Task) -> Candidate:
        start = time.perf_counter()
        failed = self._missing(task, start)
        if failed is not None:
            return failed
        perturb_folder(
            self.correct_dir(task),
            Path(task.out_dir),
            Path(task.root),
            seed=task.seed,
            config=self.config,
            key=task.name,
        )
        return self._candidate(task, start, "ok", None)

    def _revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable: tuple[str, ...]
    ) -> Candidate:
        start = time.perf_counter()
        failed = self._missing(task, start)
        if failed is not None:
            return failed
        correct, out = self.correct_dir(task), Path(task.output_dir)
        previous = Path(candidate.output_dir).parent
        current: dict[int, list[Applied]] = {}
        for entry in read_mistake_meta(previous):
            current.setdefault(int(entry["index"]), []).append(
                Applied(int(entry["index"]), str(entry["mistake"]), int(entry["seed"]))
            )
        if Path(candidate.output_dir).resolve() != out.resolve():
            if out.exists():
                shutil.rmtree(out)
            shutil.copytree(candidate.output_dir, out)
        docs = correct_annotations(correct)
        items: dict[int, list[str]] = {}
        structured = isinstance(feedback, Feedback) and bool(feedback.items)
        if structured:
            assert isinstance(feedback, Feedback)
            for index, path, _ in feedback.items:
                if index is not None:
                    items.setdefault(int(index), []).append(path)
        touched = sorted(items) if structured else sorted(docs)
        labels = {i: list(current.get(i, [])) for i in docs}
        for index in touched:
            if index not in docs:
                continue
            rng = random.Random(f"{task.seed}:{task.name}:{index}:revise:{[a.seed for a in labels[index]]}")
            keep = []
            for applied in labels[index]:
                kind = MISTAKES[applied.name]
                named = not structured or any(_named(f, items[index]) for f in kind.fields)
                fixable = not editable or all(_covered(f, editable) for f in kind.fields)
                if named and fixable and rng.random() < self.p_fix:
                    continue
                keep.append(applied)
            add = int(rng.random() < self.p_new)
            if keep == labels[index] and not add:
                continue
            labels[index] = replay_sample(
                correct,
                out,
                Path(task.root),
                index,
                [(a.name, a.seed) for a in keep],
                docs,
                add=add,
                rng=rng,
                config=self.config,
            )
        write_mistakes(Path(task.out_dir), labels)
        return self._candidate(task, start, "ok", None)

    def _candidate(self, task: Task, start: float, status: str, reason: str | None) -> Candidate:
        return Candidate(
            output_dir=task.output_dir,
            usage=Usage(wall_s=round(time.perf_counter() - start, 4)),
            trace_path=None,
            status=status,  # type: ignore[arg-type]
            reason=reason,
            candidate_index=task.candidate_index,
            agent=self.name,
        )

"""Test doubles for strategy tests: a protocol agent that writes the synthetic suite's perfect answer and then
damages it with seeded noise, so candidates differ and a validator has something to choose between."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from agents.base import Candidate, Feedback, Task, Usage

ORACLE_RUN = "oracle"


def oracle_dir(task: Task) -> Path:
    """The perfect prediction the synth CLI wrote with ``--oracle oracle``."""
    return task.root / "VLM" / ORACLE_RUN / "agent1_data_organization"


def _damage(ann: dict[str, Any], rng: random.Random) -> None:
    kind = rng.choice(["task", "source", "dimension"])
    if kind == "task":
        ann["media_geometry"]["media"]["task_type"] = "detection"
    elif kind == "source":
        ann["context"]["sample"]["extra"]["source_file"] = "data/nowhere.bin"
        ann["context"]["sample"]["extra"]["original_filename"] = "nowhere.bin"
    else:
        ann["media_geometry"]["media"]["dimension"] = "video"


class NoisyOracleAgent:
    """Copies the oracle output and damages each sample with probability ``p`` (seeded per candidate).

    Args:
        p: Per-sample damage probability.
        tokens: Tokens reported per call (for usage and budget tests).
        drop: Also delete the JSON of damaged samples with this probability.
    """

    name = "noisy-oracle"

    def __init__(
        self, p: float = 0.4, tokens: int = 100, drop: float = 0.0, temperature: float = 0.0
    ) -> None:
        self.p, self.tokens, self.drop = p, tokens, drop
        self.calls: list[tuple[str, int]] = []

    async def generate(self, task: Task) -> Candidate:
        self.calls.append(("generate", task.candidate_index))
        out = task.output_dir
        shutil.copytree(oracle_dir(task), out, dirs_exist_ok=True)
        rng = random.Random(f"{task.seed}:{task.candidate_index}:{task.name}")
        for entry in task.entries:
            path = out / "standardized_annotations" / f"{entry.index}.json"
            if rng.random() < self.p:
                if rng.random() < self.drop:
                    path.unlink()
                    continue
                ann = json.loads(path.read_text())
                _damage(ann, rng)
                path.write_text(json.dumps(ann))
        return Candidate(
            out,
            Usage(prompt_tokens=self.tokens, cost_usd=self.tokens * 1e-6, calls=1),
            candidate_index=task.candidate_index,
            agent=self.name,
        )

    async def revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable_fields: Sequence[str]
    ) -> Candidate:
        """Repairs every sample from the oracle, and also rewrites a field nobody allowed (modality)."""
        self.calls.append(("revise", task.candidate_index))
        out = task.output_dir
        shutil.copytree(oracle_dir(task), out, dirs_exist_ok=True)
        for path in sorted((out / "standardized_annotations").glob("*.json")):
            ann = json.loads(path.read_text())
            ann["context"]["sample"]["modality_primary"] = "Revised-Modality"
            path.write_text(json.dumps(ann))
        return Candidate(
            out,
            Usage(prompt_tokens=self.tokens, calls=1),
            candidate_index=task.candidate_index,
            agent=self.name,
        )


SMALL_DATASETS = ("synth-fundus-npy", "synth-chest-xray-dicom")


def make_suite(out: Path, names: Sequence[str] = SMALL_DATASETS) -> Path:
    """Two small synthetic datasets with their perfect answers written as run ``oracle``."""
    from testbed.synth.suite import generate_suite

    generate_suite(out, size="small", seed=0, oracle=ORACLE_RUN, only=list(names))
    return out


class SlowAgent(NoisyOracleAgent):
    """A noisy oracle that sleeps in each call (interrupt and concurrency tests)."""

    def __init__(self, delay: float = 0.5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delay = delay

    async def generate(self, task: Task) -> Candidate:
        import asyncio

        await asyncio.sleep(self.delay)
        return await super().generate(task)


class InFlightAgent(NoisyOracleAgent):
    """A noisy oracle whose calls hold for ``delay`` s and count how many of them run at once (``PEAK``, by
    class name: the runner builds its own instance)."""

    PEAK: ClassVar[dict[str, int]] = {}
    _now: ClassVar[dict[str, int]] = {}

    def __init__(self, delay: float = 0.05, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delay = delay

    async def generate(self, task: Task) -> Candidate:
        import asyncio

        key = type(self).__name__
        self._now[key] = self._now.get(key, 0) + 1
        self.PEAK[key] = max(self.PEAK.get(key, 0), self._now[key])
        try:
            await asyncio.sleep(self.delay)
            return await super().generate(task)
        finally:
            self._now[key] -= 1


class CpuBoundInFlightAgent(InFlightAgent):
    """`InFlightAgent` declaring itself CPU-bound (`agents.base.cpu_bound`), as the rules agent does."""

    cpu_bound = True


class UnevenAgent(NoisyOracleAgent):
    """A noisy oracle that is quick on every dataset but ``slow``, where each call sleeps ``slow_delay``
    seconds (interrupt tests: one dataset finishes, the other is still running)."""

    def __init__(self, slow: str = "synth-fundus-npy", slow_delay: float = 60.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.slow, self.slow_delay = slow, slow_delay

    async def generate(self, task: Task) -> Candidate:
        import asyncio

        if task.name == self.slow:
            await asyncio.sleep(self.slow_delay)
        return await super().generate(task)


class SilentAgent(NoisyOracleAgent):
    """Finishes every call as ``ok`` without writing a single sample (the "table of zeros" failure)."""

    name = "silent"

    async def generate(self, task: Task) -> Candidate:
        task.output_dir.mkdir(parents=True, exist_ok=True)
        return Candidate(
            task.output_dir, Usage(calls=1), candidate_index=task.candidate_index, agent=self.name
        )


class FailOnAgent(NoisyOracleAgent):
    """A noisy oracle that raises on one dataset (a dataset whose strategy fails: INCOMPLETE tables)."""

    def __init__(self, fail: str = "synth-fundus-npy", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fail = fail

    async def generate(self, task: Task) -> Candidate:
        if task.name == self.fail:
            raise RuntimeError(f"cannot read {task.name}")
        return await super().generate(task)

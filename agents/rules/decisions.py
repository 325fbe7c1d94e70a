"""Decision points: ranked hypotheses, softmax sampling with a seeded generator, and a replayable log.

The rules baseline makes a handful of decisions per sample (which file is the source, which slice, which table
column holds the label, which box convention ...). Each decision lists its hypotheses with a score in *nats*
(a log-weight: a gap of 1.0 means "e times more plausible"). At temperature 0 the top-scored hypothesis wins
(ties go to the earlier one); at temperature ``T > 0`` a hypothesis is drawn with probability
``softmax(score / T)``. This is a simulation of sampling noise for the strategies to select from, not a model.

The draw for one decision depends only on ``(seed, candidate index, scope, sample, point)``, never on the
order in which samples are processed, so a candidate is reproducible even when samples run concurrently. The
scope (the dataset name) keeps the draws of different datasets independent: without it, candidate k would make
the same "mistake" at sample i of every dataset, which no sampled model does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["Decider", "DecisionRecord", "Hypothesis", "softmax"]

T = TypeVar("T")


@dataclass(frozen=True)
class Hypothesis(Generic[T]):
    """One candidate answer at a decision point.

    Attributes:
        value: What the pipeline uses when this hypothesis is chosen.
        score: Plausibility in nats (higher is better); only differences between hypotheses matter.
        why: A short human-readable reason, written to the trace.
        label: A JSON-able name for the value in the trace (defaults to ``str(value)``).
    """

    value: T
    score: float
    why: str = ""
    label: str | None = None

    @property
    def name(self) -> str:
        """The label used in the trace and for replay."""
        return self.label if self.label is not None else str(self.value)


@dataclass(frozen=True)
class DecisionRecord:
    """What was decided at one point, for the JSONL trace and for `revise` replays.

    Attributes:
        sample: The manifest index, or None for a dataset-level decision.
        point: The decision point's name (``"source"``, ``"slice"``, ``"box_convention"`` ...).
        chosen: The name of the chosen hypothesis.
        rank: Its rank in the score order (0 = the argmax).
        temperature: The temperature in force.
        options: ``[(name, score, why), ...]`` in score order.
        replayed: True when the choice was copied from an earlier candidate instead of being decided.
    """

    sample: int | None
    point: str
    chosen: str
    rank: int
    temperature: float
    options: tuple[tuple[str, float, str], ...]
    replayed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-able dict for the trace."""
        options = [{"name": n, "score": round(s, 4), "why": w} for n, s, w in self.options]
        return {**dataclasses.asdict(self), "options": options}


def softmax(scores: Sequence[float], temperature: float) -> list[float]:
    """Probabilities ``exp(score / T)`` normalised, computed stably.

    Args:
        scores: Scores in nats.
        temperature: A positive temperature.

    Returns:
        Probabilities summing to 1, in the order of ``scores``.

    Raises:
        ValueError: For a non-positive temperature or no scores.
    """
    if temperature <= 0:
        raise ValueError(f"softmax needs a positive temperature, got {temperature}")
    if not scores:
        raise ValueError("softmax needs at least one score")
    top = max(scores)
    weights = [math.exp((s - top) / temperature) for s in scores]
    total = sum(weights)
    return [w / total for w in weights]


def _stable_rng(
    seed: int, candidate_index: int, sample: int | None, point: str, scope: str = ""
) -> random.Random:
    # hashlib, not hash(): Python salts str hashes per process, which would break reproducibility.
    key = f"{seed}|{candidate_index}|{sample}|{point}".encode()
    if scope:
        key = f"{scope}|".encode() + key
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


@dataclass
class Decider:
    """Makes every decision of one candidate and remembers them.

    Args:
        temperature: 0 for the argmax; ``> 0`` samples ``softmax(score / temperature)``.
        seed: The task seed.
        candidate_index: The task's candidate index (so n candidates of one seed still differ).
        replay: Earlier choices ``{(sample, point): hypothesis name}`` to reuse as they are (for `revise`).
        redecide: Decision points that must be decided afresh at temperature 0 even when ``replay`` has them;
            a point is named either ``"point"`` (every sample) or ``"point@<sample>"`` (one sample).
        on_record: Called with every record as it is made (the agent writes it to the trace).
        scope: What the draws are independent across (the agent passes the dataset name).
    """

    temperature: float = 0.0
    seed: int = 0
    candidate_index: int = 0
    replay: Mapping[tuple[int | None, str], str] = field(default_factory=dict)
    redecide: frozenset[str] = frozenset()
    on_record: Callable[[DecisionRecord], None] | None = None
    records: list[DecisionRecord] = field(default_factory=list)
    scope: str = ""

    def _must_redecide(self, sample: int | None, point: str) -> bool:
        return point in self.redecide or f"{point}@{sample}" in self.redecide

    def choose(self, point: str, hypotheses: Iterable[Hypothesis[T]], sample: int | None = None) -> T:
        """Pick one hypothesis at a decision point.

        Args:
            point: The decision point's name.
            hypotheses: The candidates (at least one); their order breaks score ties.
            sample: The manifest index, or None for a dataset-level decision.

        Returns:
            The chosen hypothesis's value.

        Raises:
            ValueError: When ``hypotheses`` is empty.
        """
        ranked = sorted(enumerate(hypotheses), key=lambda item: (-item[1].score, item[0]))
        if not ranked:
            raise ValueError(f"decision point {point!r} (sample {sample}) has no hypotheses")
        options = [h for _, h in ranked]
        redo = self._must_redecide(sample, point)
        temperature = 0.0 if redo else self.temperature
        rank = 0
        replayed = False
        earlier = None if redo else self.replay.get((sample, point))
        names = [h.name for h in options]
        if earlier is not None and earlier in names:
            rank, replayed = names.index(earlier), True
        elif temperature > 0 and len(options) > 1:
            probs = softmax([h.score for h in options], temperature)
            draw = _stable_rng(self.seed, self.candidate_index, sample, point, self.scope).random()
            cumulative = itertools.accumulate(probs)
            rank = next((k for k, c in enumerate(cumulative) if draw < c), len(options) - 1)
        record = DecisionRecord(
            sample=sample,
            point=point,
            chosen=names[rank],
            rank=rank,
            temperature=temperature,
            options=tuple((h.name, float(h.score), h.why) for h in options),
            replayed=replayed,
        )
        self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)
        return options[rank].value

"""Apply sampled mistakes to a correct output folder: deterministic, seeded, every mistake labelled.

Per sample a stream seeded by ``(seed, key, index)`` decides whether the sample stays clean and, if not, which
mistakes it gets (one, then each further one with ``extra_rate``), drawn by the configured mix among the
mistakes that apply to it. Each applied mistake keeps its own seed, so a sample can be rebuilt from the
correct one with any subset of its mistakes (`replay_sample`, how a revision fixes one of them).
"""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.perturb import catalogue_image, catalogue_json, catalogue_render  # noqa: F401  # registers them
from testbed.perturb.mistake import CATEGORIES, MISTAKES, SampleState

__all__ = [
    "AGENT_DIR",
    "Applied",
    "MixConfig",
    "correct_annotations",
    "draw_mistakes",
    "perturb_folder",
    "replay_sample",
]

AGENT_DIR = "agent1_data_organization"


@dataclass(frozen=True)
class Applied:
    """One mistake applied to one sample.

    Attributes:
        index: The sample index.
        name: The mistake type.
        seed: The mistake's own seed (replaying it with this seed redoes exactly the same edit).
    """

    index: int
    name: str
    seed: int

    def to_dict(self) -> dict[str, Any]:
        """The ``mistakes.json`` ``meta`` entry (with the type's category, evidence flag and fields)."""
        kind = MISTAKES[self.name]
        return {
            "index": self.index,
            "mistake": self.name,
            "seed": self.seed,
            "category": kind.category,
            "raw_evidence": kind.raw_evidence,
            "fields": list(kind.fields),
        }


@dataclass(frozen=True)
class MixConfig:
    """How many mistakes and which.

    Attributes:
        clean: Probability that a sample stays clean (the expected fraction of clean samples).
        mix: Relative weights by mistake name or category (a name wins over its category); names left out
            weigh ``default_weight``. Empty: every mistake equally likely.
        default_weight: Weight of the mistakes ``mix`` does not name (0 restricts the draw to ``mix``).
        extra_rate: Probability of each further mistake on a sample that has one.
        max_per_sample: At most this many mistakes on one sample.
    """

    clean: float = 0.45
    mix: Mapping[str, float] = field(default_factory=dict)
    default_weight: float = 1.0
    extra_rate: float = 0.25
    max_per_sample: int = 3

    def __post_init__(self) -> None:
        unknown = sorted(set(self.mix) - set(MISTAKES) - set(CATEGORIES))
        if unknown:
            raise ValueError(
                f"unknown mistake type(s) or categories in the mix: {', '.join(unknown)}; "
                f"valid: {', '.join([*CATEGORIES, *MISTAKES])}"
            )
        if not 0.0 <= self.clean <= 1.0 or not 0.0 <= self.extra_rate <= 1.0:
            raise ValueError("clean and extra_rate are probabilities (0..1)")

    def weight(self, name: str) -> float:
        """The draw weight of one mistake type."""
        if name in self.mix:
            return float(self.mix[name])
        return float(self.mix.get(MISTAKES[name].category, self.default_weight))


def correct_annotations(correct: Path) -> dict[int, dict[str, Any]]:
    """The correct folder's per-image JSON objects by index (non-numeric stems and non-objects skipped)."""
    out = {}
    for path in sorted((correct / "standardized_annotations").glob("*.json")):
        if not path.stem.isdigit():
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict):
            out[int(path.stem)] = doc
    return out


def _fresh_state(
    correct: Path, out: Path, dataset_root: Path, index: int, docs: Mapping[int, dict[str, Any]]
) -> SampleState:
    """Copy the correct sample's files into ``out`` (replacing what was there) and return its state."""
    for sub, suffix in (("images", ".png"), ("masks", ".png"), ("standardized_annotations", ".json")):
        target = out / sub / f"{index}{suffix}"
        target.unlink(missing_ok=True)
        source = correct / sub / f"{index}{suffix}"
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    return SampleState(
        index=index,
        annotation=json.loads(json.dumps(docs[index])),
        out_dir=out,
        dataset_root=dataset_root,
        others=docs,
        correct=correct,
        rng=random.Random(0),
    )


def _weighted_order(names: Sequence[str], weights: Sequence[float], rng: random.Random) -> list[str]:
    # Weighted sampling without replacement (Efraimidis–Spirakis keys): the first names of the order are the
    # draw; the rest are fall-backs for when a drawn mistake does not apply to the sample.
    keyed = [(math.log(rng.random() or 1e-12) / w, n) for n, w in zip(names, weights, strict=True) if w > 0]
    return [n for _, n in sorted(keyed, reverse=True)]


def draw_mistakes(
    state: SampleState, rng: random.Random, config: MixConfig, *, count: int | None = None
) -> list[Applied]:
    """Apply sampled mistakes to a fresh sample state; return what was applied (nothing for a clean sample).

    Args:
        state: The sample, fresh from the correct folder.
        rng: The sample's stream.
        config: Rates and mix.
        count: Apply exactly this many (when possible) instead of drawing clean/how many.

    Returns:
        The applied mistakes, in application order.
    """
    if count is None:
        if rng.random() < config.clean:
            return []
        count = 1
        while count < config.max_per_sample and rng.random() < config.extra_rate:
            count += 1
    names = list(MISTAKES)
    order = _weighted_order(names, [config.weight(n) for n in names], rng)
    applied: list[Applied] = []
    groups: set[str] = set()
    for name in order:
        if len(applied) >= count:
            break
        kind = MISTAKES[name]
        if kind.exclusive is not None and kind.exclusive in groups:
            continue
        seed = rng.randrange(2**31)
        state.rng = random.Random(seed)
        if kind.apply(state):
            applied.append(Applied(state.index, name, seed))
            if kind.exclusive is not None:
                groups.add(kind.exclusive)
    return applied


def replay_sample(
    correct: Path,
    out: Path,
    dataset_root: Path,
    index: int,
    mistakes: Iterable[tuple[str, int]],
    docs: Mapping[int, dict[str, Any]] | None = None,
    *,
    add: int = 0,
    rng: random.Random | None = None,
    config: MixConfig | None = None,
) -> list[Applied]:
    """Rebuild one sample in ``out`` from the correct folder with the given mistakes (and ``add`` new ones).

    Args:
        correct: The correct ``agent1_data_organization`` folder.
        out: The ``agent1_data_organization`` folder to rewrite the sample in.
        dataset_root: The dataset folder.
        index: The sample.
        mistakes: ``(name, seed)`` pairs in application order.
        docs: The correct annotations (read from ``correct`` when None).
        add: Draw this many further mistakes of types the sample does not have yet.
        rng: The stream for that draw.
        config: The mix for that draw.

    Returns:
        The mistakes that applied.
    """
    docs = correct_annotations(correct) if docs is None else docs
    state = _fresh_state(correct, out, dataset_root, index, docs)
    applied = []
    for name, seed in mistakes:
        state.rng = random.Random(seed)
        if MISTAKES[name].apply(state):
            applied.append(Applied(index, name, seed))
    if add:
        mix = config or MixConfig()
        taken = {a.name for a in applied}
        groups = {MISTAKES[n].exclusive for n in taken} - {None}
        # A new mistake must be new: types already on the sample and taken exclusive groups weigh nothing.
        weights = {
            n: 0.0 if n in taken or MISTAKES[n].exclusive in groups else mix.weight(n) for n in MISTAKES
        }
        fresh = MixConfig(clean=0.0, mix=weights, default_weight=0.0, extra_rate=0.0, max_per_sample=add)
        applied += draw_mistakes(state, rng or random.Random(index), fresh, count=add)
    state.write()
    return applied


def perturb_folder(
    correct: Path,
    out_dir: Path,
    dataset_root: Path,
    *,
    seed: int,
    config: MixConfig | None = None,
    key: str = "",
) -> dict[int, list[Applied]]:
    """Write a perturbed copy of a correct output folder and its labels.

    Args:
        correct: The correct ``agent1_data_organization`` folder (e.g. the oracle export of a suite).
        out_dir: The candidate folder; the copy goes to ``out_dir/agent1_data_organization`` and the labels to
            ``out_dir/mistakes.json``.
        dataset_root: The dataset folder (raw files some mistakes re-read).
        seed: The seed; with ``key`` it fixes every draw.
        config: Rates and mix (default `MixConfig`).
        key: Extra seed material (the dataset name), so datasets sharing a seed draw differently.

    Returns:
        Per index, the applied mistakes (empty for a clean sample).

    Raises:
        FileNotFoundError: ``correct`` holds no ``standardized_annotations/``.
    """
    from testbed.perturb.labels import write_mistakes

    config = config or MixConfig()
    if not (correct / "standardized_annotations").is_dir():
        raise FileNotFoundError(f"{correct} holds no standardized_annotations/: nothing to perturb")
    out = out_dir / AGENT_DIR
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    docs = correct_annotations(correct)
    if (correct / "data_meta.json").is_file():
        shutil.copyfile(correct / "data_meta.json", out / "data_meta.json")
    labels: dict[int, list[Applied]] = {}
    for index in sorted(docs):
        state = _fresh_state(correct, out, dataset_root, index, docs)
        labels[index] = draw_mistakes(state, random.Random(f"{seed}:{key}:{index}"), config)
        state.write()
    write_mistakes(out_dir, labels)
    return labels

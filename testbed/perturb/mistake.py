"""What a mistake is: a labelled, seeded edit of one correct output sample, and the registry of them.

A mistake is written from the output format (SPEC §2, docs/benchmark_format.md), never from a validator check:
it edits the sample's JSON and files the way an agent gets them wrong. Each one declares the paper's error
category it belongs to (or ``image`` / ``format``), whether a ground-truth-free judge could tell it from the
raw data and the output alone (``raw_evidence``), and the field paths it touches (a revision that is told
about one of them may fix it).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from benchmark.fields import DIMENSION, TASK_TYPE
from validator.values import get_path

__all__ = [
    "CATEGORIES",
    "MISTAKES",
    "Category",
    "Mistake",
    "SampleState",
    "mistake",
]

Category = Literal[
    "source_grounding", "semantic_confusion", "content_omission", "unsupported_filling", "image", "format"
]
#: The paper's four error categories (MDS-Bench §4.3), then the image and format mistakes of issue 12.
CATEGORIES: tuple[Category, ...] = get_args(Category)


@dataclass
class SampleState:
    """One sample being perturbed: its JSON (edited in place) and its files in the output folder.

    Attributes:
        index: The manifest index.
        annotation: The per-image JSON, edited in place by the mistakes.
        out_dir: The ``agent1_data_organization`` folder being written (images/masks already copied).
        dataset_root: The dataset folder (raw data under ``data/``).
        others: Every sample's correct annotation, by index (for the neighbour's values).
        correct: The correct ``agent1_data_organization`` folder (for the neighbour's files).
        rng: The mistake's own random stream.
        serialize: Replaces ``json.dumps`` when a format mistake decides how the file is written.
    """

    index: int
    annotation: dict[str, Any]
    out_dir: Path
    dataset_root: Path
    others: Mapping[int, Mapping[str, Any]]
    correct: Path
    rng: random.Random
    serialize: Callable[[Any], str] | None = None
    #: Replaces the object at the top level (a format mistake writes a list around it).
    top_level: Callable[[dict[str, Any]], Any] | None = None

    @property
    def image(self) -> Path:
        """The sample's image file (``images/<index>.png``)."""
        return self.out_dir / "images" / f"{self.index}.png"

    @property
    def mask(self) -> Path:
        """The sample's label-map file (``masks/<index>.png``), which may not exist."""
        return self.out_dir / "masks" / f"{self.index}.png"

    def task(self) -> str:
        """The sample's task type as written."""
        return str(get_path(self.annotation, TASK_TYPE) or "")

    def dimension(self) -> str:
        """The sample's dimension as written (``2D``/``3D``/``video``)."""
        return str(get_path(self.annotation, DIMENSION) or "")

    def extra(self) -> dict[str, Any]:
        """``context.sample.extra`` (created when missing)."""
        sample = self.annotation.setdefault("context", {}).setdefault("sample", {})
        extra = sample.setdefault("extra", {})
        return extra if isinstance(extra, dict) else {}

    def neighbour(self, path: str) -> tuple[int, Any] | None:
        """Another sample whose value at ``path`` differs from this one's, drawn with ``rng``."""
        mine = get_path(self.annotation, path)
        pool = [(i, get_path(a, path)) for i, a in sorted(self.others.items()) if i != self.index]
        pool = [(i, v) for i, v in pool if v not in (None, "") and v != mine]
        return self.rng.choice(pool) if pool else None

    def write(self) -> None:
        """Write the (perturbed) JSON to ``standardized_annotations/<index>.json``."""
        doc: Any = self.top_level(self.annotation) if self.top_level else self.annotation
        text = self.serialize(doc) if self.serialize else json.dumps(doc, indent=2, ensure_ascii=False)
        path = self.out_dir / "standardized_annotations" / f"{self.index}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


Apply = Callable[[SampleState], bool]


@dataclass(frozen=True)
class Mistake:
    """One kind of agent mistake.

    Attributes:
        name: The label written to ``mistakes.json``.
        category: The paper's error category, or ``image`` / ``format``.
        raw_evidence: Whether a judge without ground truth can tell the mistake from the raw data and the
            output (an omission or an inconsistency counts); False for choices only the ground truth settles
            (a plausible modality, an invented age, a slice picked by another convention).
        fields: The field paths it changes (``images``/``masks`` for files).
        description: One line for docs and reports.
        apply: Edits the state; returns False when the mistake does not apply to this sample.
        exclusive: Mistakes sharing a group never go together on one sample (one serialization, one image).
    """

    name: str
    category: Category
    raw_evidence: bool
    fields: tuple[str, ...]
    description: str
    apply: Apply = field(repr=False)
    exclusive: str | None = None


MISTAKES: dict[str, Mistake] = {}
"""The catalogue, by name, in registration order."""


def mistake(
    name: str,
    category: Category,
    *,
    raw_evidence: bool,
    fields: tuple[str, ...],
    exclusive: str | None = None,
) -> Callable[[Apply], Apply]:
    """Register ``fn(state) -> bool`` as a mistake; its docstring's first line is the description."""

    def register(fn: Apply) -> Apply:
        if name in MISTAKES:
            raise ValueError(f"mistake {name!r} registered twice")
        doc = (fn.__doc__ or name).strip().splitlines()[0]
        MISTAKES[name] = Mistake(name, category, raw_evidence, fields, doc, fn, exclusive)
        return fn

    return register

"""Plan support: how well the raw data backs a dataset-level plan (task, modality, dimension, classes).

A plan (the guided agent's one cheap answer: dataset name, modality, task type, dimension, classes) decides
everything written after it, so a plan the data contradicts is worth catching before any sample is done.
This check looks only at the raw evidence the validator's checks already read (never ground truth, never an
output):

- the annotation-like files beside the images (`validator.dataset_facts.DatasetFacts.annotation_files`) and a
  label member inside the first sample's container (`validator._raw.is_label_member`);
- box words in the file names and small text files (the dataset's word corpus);
- label tables naming a sample (`validator.checks.evidence_payload.rows_naming_sample`) and class-like table
  columns (`validator._tables.label_codes`);
- the DICOM ``Modality`` tag, in the modality vocabulary of `evidence_payload.modality_matches_source`;
- the source array's shape (`evidence_source.dimension_matches_source`);
- class names in the file and folder names, tables and README (``task_support``'s corpus test).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from validator import _payload, _raw, _tables
from validator.checks.evidence_payload import (
    _DICOM_MODALITY,
    _MODALITY_SYNONYMS,
    _modality_matches,
    rows_naming_sample,
    sample_keys,
)
from validator.checks.evidence_source import _source_dims
from validator.checks.evidence_support import _label_supported
from validator.dataset_facts import DatasetFacts, dataset_facts, words
from validator.sample import safe_join

__all__ = ["PlanSupport", "plan_support", "reads_as"]

# Each contradiction costs its weight from a score of 1.0. The task counts most (it picks the payload every
# sample writes: a wrong task loses every sample); modality and dimension are one field each but shape every
# annotation; classes cost in proportion to the share of names nothing in the data mentions.
TASK_WEIGHT = 0.4
MODALITY_WEIGHT = 0.2
DIMENSION_WEIGHT = 0.2
CLASSES_WEIGHT = 0.2

_HEADERS_READ = 3  # samples whose headers are read: enough to see the dataset's kind, bounded on a big one
_BOX_WORDS = frozenset({"bbox", "bboxes", "box", "boxes", "xmin", "ymin", "xmax", "ymax", "bndbox"})
# Class names a segmentation plan adds by convention (background first) rather than from the data.
_CONVENTIONAL = frozenset({"background", "bg", "none", "normal", "unknown"})


@dataclass(frozen=True)
class PlanSupport:
    """A plan's support in the raw data.

    Attributes:
        score: 1.0 when nothing contradicts the plan, lower by each contradiction's weight (at least 0.0).
        reasons: One line per contradiction, saying what the data shows.
    """

    score: float
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-able."""
        return {"score": round(self.score, 6), "reasons": list(self.reasons)}


def plan_support(root: Path, sample_paths: Sequence[str], plan: Mapping[str, Any]) -> PlanSupport:
    """Score a dataset-level plan against the raw data of the dataset at ``root``.

    Args:
        root: The dataset root (holding ``data/`` and ``VLM/random.txt``).
        sample_paths: The manifest samples' paths relative to ``root`` (``data/...``), in manifest order.
        plan: ``task_type``, ``modality``, ``dimension`` and ``classes`` (other keys are ignored; a missing
            one is not checked).

    Returns:
        The score and the reasons for each contradiction.
    """
    facts = dataset_facts(root)
    sources = [_source(root, rel) for rel in sample_paths[:_HEADERS_READ]]
    read = [s for s in sources if s is not None and s.ok]
    found: list[tuple[float, str]] = []
    task = str(plan.get("task_type") or "")
    if why := _task_contradiction(facts, root, sample_paths, task, read):
        found.append((TASK_WEIGHT, why))
    if why := _modality_contradiction(str(plan.get("modality") or ""), read):
        found.append((MODALITY_WEIGHT, why))
    if why := _dimension_contradiction(str(plan.get("dimension") or ""), read):
        found.append((DIMENSION_WEIGHT, why))
    classes = plan.get("classes")
    if isinstance(classes, list | tuple) and classes and not facts.opaque:
        unsupported = [str(c) for c in classes if str(c).strip() and not _mentioned(facts, str(c))]
        if unsupported:
            share = len(unsupported) / len(classes)
            found.append(
                (
                    CLASSES_WEIGHT * share,
                    f"classes {unsupported} appear in no file or folder name, table or README",
                )
            )
    score = max(0.0, 1.0 - sum(w for w, _ in found))
    return PlanSupport(score, tuple(why for _, why in found))


def reads_as(root: Path, rel: str) -> str | None:
    """How a sample's file reads, in the plan's terms: ``2D``, ``3D``, ``video`` or a choice of them
    (``2D or 3D or video`` for one frame of a multi-frame file), with its shape; None when it cannot be read.

    The same reading the plan's dimension is checked against: a model shown ``shape [96, 96, 3]`` alone takes
    an RGB image for a volume.

    Args:
        root: The dataset root.
        rel: The sample's path (``data/...``).

    Returns:
        One line, e.g. ``2D (shape [96, 96, 3], axes YXC)``.
    """
    source = _source(root, rel)
    if source is None or not source.shape:
        return None
    dims = " or ".join(d.upper() if d != "video" else d for d in sorted(_source_dims(source)))
    axes = f", axes {source.axes}" if source.axes else ""
    return f"{dims} (shape {list(source.shape)}{axes})"


def _source(root: Path, rel: str) -> _raw.SourceFacts | None:
    path = safe_join(root, rel)
    return _raw.source_facts(path, {}) if path is not None else None


def _task_contradiction(
    facts: DatasetFacts, root: Path, paths: Sequence[str], task: str, read: Sequence[_raw.SourceFacts]
) -> str | None:
    masks = facts.annotation_files()
    if task == "segmentation":
        members = any(_raw.is_label_member(k) for s in read for k in s.keys)
        if not masks and not members:
            return "segmentation, but the data has no mask-like file and no label member in the sources"
    elif task == "detection":
        if not _BOX_WORDS & set(facts.corpus.split()) and not _box_table(root):
            return "detection, but no file, folder or table column names boxes (bbox, xmin ...)"
    elif task == "classification" and masks and not _has_label_source(root, paths):
        return (
            f"classification, but there is no label table or class folder and {len(masks)} mask-like files "
            f"(e.g. {masks[0]}) lie beside the images"
        )
    return None


def _box_table(root: Path) -> bool:
    """A table whose header names box columns as the validator reads them (`_payload.box_columns`:
    ``x_min, y_min, x_max, y_max``, ``x, y, width, height`` ...); the words alone split ``x_min`` in two."""
    return any(_payload.box_columns(row) is not None for row in _tables.label_tables(root) if len(row) >= 4)


def _has_label_source(root: Path, paths: Sequence[str]) -> bool:
    """A label table names a sample or has a class-like column, or the samples sit in class folders."""
    if _tables.label_codes(root).columns:
        return True
    if any(rows_naming_sample(root, sample_keys(rel)) for rel in paths[:_HEADERS_READ]):
        return True
    # Folder classes: the samples' parent folders repeat (several samples a folder), with more than one name.
    parents = [PurePosixPath(rel).parent.name for rel in paths]
    return 1 < len(set(parents)) < len(parents)


def _modality_contradiction(modality: str, read: Sequence[_raw.SourceFacts]) -> str | None:
    if not modality:
        return None
    for source in read:
        code = (source.modality or "").upper()
        evidence = _DICOM_MODALITY.get(code)
        if evidence is None:
            continue
        named = {evidence} | _MODALITY_SYNONYMS.get(evidence, set())
        if _modality_matches(modality, evidence) or named & set(words(modality).split()):
            return None
        return f"modality {modality!r}, but the DICOM header says Modality {code} ({evidence})"
    return None


def _dimension_contradiction(dimension: str, read: Sequence[_raw.SourceFacts]) -> str | None:
    # A volume planned as 2D is one slice of it (the benchmark's usual reading): only the reverse contradicts.
    if dimension.lower() not in ("3d", "video") or not read:
        return None
    if all(_source_dims(s) == {"2d"} for s in read):
        shape = list(read[0].shape)
        return f"dimension {dimension}, but the samples are 2D images (shape {shape})"
    return None


def _mentioned(facts: DatasetFacts, name: str) -> bool:
    return words(name) in _CONVENTIONAL or _label_supported(facts, name)

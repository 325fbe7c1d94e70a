"""The labels contract: ``<candidate out_dir>/mistakes.json`` and the per-mistake miss rate of a selection.

``mistakes.json`` sits next to ``agent1_data_organization/``::

    {"samples": {"<index>": ["<mistake type>", ...]},        # [] for a clean sample
     "meta": [{"index", "mistake", "seed", "category", "raw_evidence", "fields"}, ...]}

Other tools (selector leaderboards, run reports) read it through `read_mistakes` and score selections with
`miss_rates`; keep both names and signatures.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core.atomic import atomic_write_json

__all__ = ["MISTAKES_FILE", "miss_rates", "read_mistake_meta", "read_mistakes", "write_mistakes"]

MISTAKES_FILE = "mistakes.json"


def write_mistakes(out_dir: Path, labels: Mapping[int, Sequence[Any]]) -> Path:
    """Write ``out_dir/mistakes.json`` from per-index applied mistakes (`testbed.perturb.Applied`)."""
    doc = {
        "samples": {str(i): [a.name for a in labels[i]] for i in sorted(labels)},
        "meta": [a.to_dict() for i in sorted(labels) for a in labels[i]],
    }
    path = Path(out_dir) / MISTAKES_FILE
    atomic_write_json(path, doc, durable=False)  # beside the perturbed folder's files, regenerated with them
    return path


def _load(out_dir: Path) -> dict[str, Any] | None:
    path = Path(out_dir) / MISTAKES_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("samples"), dict):
        raise ValueError(f'{path}: expected {{"samples": {{"<index>": [...]}}, "meta": [...]}}')
    return doc


def read_mistakes(out_dir: Path) -> dict[int, frozenset[str]]:
    """The mistake types of every labelled sample of one candidate.

    Args:
        out_dir: The candidate folder (the one holding ``agent1_data_organization/`` and ``mistakes.json``).

    Returns:
        Per index, the set of mistake types (empty for a clean sample); ``{}`` for a candidate without labels.

    Raises:
        ValueError: ``mistakes.json`` exists but is not the documented shape.
    """
    doc = _load(out_dir)
    if doc is None:
        return {}
    return {int(k): frozenset(str(m) for m in v) for k, v in doc["samples"].items()}


def read_mistake_meta(out_dir: Path) -> list[dict[str, Any]]:
    """The ``meta`` list of ``mistakes.json`` (one entry per applied mistake); ``[]`` without labels."""
    doc = _load(out_dir)
    return list(doc.get("meta") or []) if doc else []


def miss_rates(
    chosen: Mapping[int, int], mistakes: Sequence[Mapping[int, frozenset[str]]]
) -> dict[str, tuple[int, int]]:
    """How often a selection kept a mistake although a candidate without it existed.

    Args:
        chosen: Per sample index, the position of the selected candidate in ``mistakes``.
        mistakes: Per candidate (same positions), its labels as `read_mistakes` returns them.

    Returns:
        Per mistake type, ``(misses, opportunities)``: an opportunity is a sample where some labelled
        candidate lacks that mistake while another has it; a miss is an opportunity where the chosen one
        has it. Samples whose chosen candidate carries no labels are left out.
    """
    out: dict[str, list[int]] = {}
    for index, k in chosen.items():
        if k is None or not 0 <= k < len(mistakes) or index not in mistakes[k]:
            continue
        labelled = [m[index] for m in mistakes if index in m]
        for kind in sorted(set().union(*labelled)):
            if all(kind in s for s in labelled):
                continue  # every candidate has it: no selector could avoid it
            tally = out.setdefault(kind, [0, 0])
            tally[1] += 1
            tally[0] += int(kind in mistakes[k][index])
    return {kind: (m, n) for kind, (m, n) in sorted(out.items())}

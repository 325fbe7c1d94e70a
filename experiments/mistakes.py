"""Selectors measured per kind of mistake on simulated candidates (issue 12, item 5).

When a run's candidates carry ``mistakes.json`` labels (the ``simulated`` agent), every S3/S4 run reports, per
mistake type, how often the selection kept a candidate with that mistake although one without it existed
(`benchmark.perturb.miss_rates`), next to two reference selectors computed on the same candidates: the
paper's validator (``validator_max`` over the ``mdsbench`` profile) and ``random``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.base import Candidate, Task
from benchmark.perturb import MISTAKES, miss_rates, read_mistakes
from strategies.selectors import choose, random, validator_max
from validator.report import Report
from validator.validate import validate

__all__ = [
    "REFERENCE_SELECTORS",
    "add_counts",
    "candidate_labels",
    "format_miss_table",
    "miss_document",
    "reference_choices",
]

log = logging.getLogger(__name__)

REFERENCE_SELECTORS = ("mdsbench", "random")
"""The selections every simulated S3/S4 run is compared with (the paper's validator, chance)."""

Counts = dict[str, tuple[int, int]]


def candidate_labels(candidates: Sequence[Candidate | Path]) -> list[dict[int, frozenset[str]]] | None:
    """Each candidate's labels (`read_mistakes` of its folder); None when no candidate is labelled."""
    labels = [read_mistakes(Path(c.output_dir if isinstance(c, Candidate) else c).parent) for c in candidates]
    return labels if any(labels) else None


def reference_choices(
    task: Task, candidates: Sequence[Candidate], mdsbench_reports: Sequence[Report] | None = None
) -> dict[str, dict[int, int]]:
    """What the reference selectors keep on these candidates: ``{"mdsbench": ..., "random": ...}``.

    Args:
        task: The dataset task (``random`` is seeded by its seed and name).
        candidates: The candidates.
        mdsbench_reports: Their reports under the ``mdsbench`` profile (computed when None).

    Returns:
        Per reference selector, per index, the chosen position (samples no candidate wrote are left out).
    """
    reports = mdsbench_reports or [validate(c.output_dir, task.root, profile="mdsbench") for c in candidates]
    out: dict[str, dict[int, int]] = {}
    for name, sel in (("mdsbench", validator_max), ("random", random)):
        decisions = choose(sel, task, candidates, reports)
        out[name] = {i: d.candidate for i, d in decisions.items() if d.candidate is not None}
    return out


def add_counts(total: dict[str, list[int]], counts: Mapping[str, tuple[int, int]]) -> None:
    """Pool ``(misses, opportunities)`` counts into ``total`` (in place)."""
    for kind, (misses, chances) in counts.items():
        tally = total.setdefault(kind, [0, 0])
        tally[0] += misses
        tally[1] += chances


def miss_document(pooled: Mapping[str, Mapping[str, Sequence[int]]]) -> dict[str, Any]:
    """The ``miss_rates`` block of ``metrics.json``.

    Args:
        pooled: Per selection label, per mistake type, ``[misses, opportunities]`` summed over datasets.

    Returns:
        ``{"selectors": {label: {type: {"misses", "opportunities", "rate"}}}, "types": {type: {"category",
        "raw_evidence"}}}``.
    """
    kinds = sorted({k for counts in pooled.values() for k in counts})
    return {
        "selectors": {
            label: {
                k: {"misses": m, "opportunities": n, "rate": round(m / n, 4) if n else None}
                for k, (m, n) in sorted(counts.items())
            }
            for label, counts in pooled.items()
        },
        "types": {
            k: {"category": MISTAKES[k].category, "raw_evidence": MISTAKES[k].raw_evidence}
            for k in kinds
            if k in MISTAKES
        },
    }


def format_miss_table(doc: Mapping[str, Any]) -> str:
    """The terminal table: one row per mistake type, one column per selection (misses/opportunities)."""
    selectors = doc.get("selectors") or {}
    if not selectors:
        return ""
    labels = list(selectors)
    kinds = sorted({k for counts in selectors.values() for k in counts})
    width = max([len(k) for k in kinds] + [12]) + 2
    head = f"{'mistake (raw evidence)':{width + 4}s}" + "".join(f"{lbl[:16]:>18s}" for lbl in labels)
    rows = ["SIMULATION: miss rate per mistake type (kept it although a candidate without it existed)", head]
    for kind in kinds:
        evidence = "y" if (doc.get("types") or {}).get(kind, {}).get("raw_evidence") else "n"
        cells = ""
        for lbl in labels:
            cell = selectors[lbl].get(kind)
            cells += f"{'—':>18s}" if cell is None else f"{cell['misses']:>7d}/{cell['opportunities']:<4d}"
            if cell is not None:
                cells += f"{100 * cell['misses'] / cell['opportunities']:5.1f}% "
        rows.append(f"{kind:{width}s}({evidence}) " + cells)
    return "\n".join(rows)


def run_counts(chosen: Mapping[int, int], labels: Sequence[Mapping[int, frozenset[str]]] | None) -> Counts:
    """`miss_rates` guarded for unlabelled runs (empty when there are no labels)."""
    return miss_rates(chosen, labels) if labels else {}

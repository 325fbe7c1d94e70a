"""Selectors measured per kind of mistake on simulated candidates (issue 12, item 5).

When a run's candidates carry ``mistakes.json`` labels (the ``simulated`` agent), every S3/S4 run reports, per
mistake type, how often the selection kept a candidate with that mistake although one without it existed
(`testbed.perturb.miss_rates`), next to two reference selectors computed on the same candidates: the
paper's validator (``validator_max`` over the ``mdsbench`` profile) and ``random``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.base import Candidate, Task
from benchmark.discover import Dataset
from strategies.selectors import choose, random, validator_max
from testbed.perturb import MISTAKES, miss_rates, read_mistakes
from validator.validate import validate

__all__ = [
    "REFERENCE_SELECTORS",
    "RunMistakes",
    "add_counts",
    "candidate_labels",
    "format_miss_table",
    "miss_document",
    "reference_choices",
    "run_mistakes",
]

log = logging.getLogger(__name__)

REFERENCE_SELECTORS = ("mdsbench", "random")
"""The selections every simulated S3/S4 run is compared with (the paper's validator, chance)."""

Counts = dict[str, tuple[int, int]]


def candidate_labels(candidates: Sequence[Candidate | Path]) -> list[dict[int, frozenset[str]]] | None:
    """Each candidate's labels (`read_mistakes` of its folder); None when no candidate is labelled."""
    labels = [read_mistakes(Path(c.output_dir if isinstance(c, Candidate) else c).parent) for c in candidates]
    return labels if any(labels) else None


def reference_choices(task: Task, candidates: Sequence[Candidate]) -> dict[str, dict[int, int]]:
    """What the reference selectors keep on these candidates: ``{"mdsbench": ..., "random": ...}``.

    Args:
        task: The dataset task (``random`` is seeded by its seed and name).
        candidates: The candidates (validated here under the ``mdsbench`` profile).

    Returns:
        Per reference selector, per index, the chosen position (samples no candidate wrote are left out).
    """
    reports = [validate(c.output_dir, task.root, profile="mdsbench") for c in candidates]
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
    """The terminal table: one row per mistake type, one column per selection (``misses/opportunities``)."""
    selectors = doc.get("selectors") or {}
    kinds = sorted({k for counts in selectors.values() for k in counts})
    if not kinds:
        return ""
    labels = list(selectors)
    width = max(len(k) for k in kinds) + 6
    rows = [
        "SIMULATION · miss rate per mistake type: kept it although a candidate without it existed "
        "(misses/opportunities; (y) = evidence in the raw data)",
        f"{'mistake':{width}s}" + "".join(f"{lbl[:18]:>20s}" for lbl in labels),
    ]
    for kind in kinds:
        evidence = "y" if (doc.get("types") or {}).get(kind, {}).get("raw_evidence") else "n"
        cells = []
        for lbl in labels:
            cell = selectors[lbl].get(kind)
            text = (
                "—"
                if cell is None
                else f"{cell['misses']}/{cell['opportunities']} {100 * (cell['rate'] or 0):.0f}%"
            )
            cells.append(f"{text:>20s}")
        rows.append(f"{kind + f' ({evidence})':{width}s}" + "".join(cells))
    return "\n".join(rows)


@dataclass
class RunMistakes:
    """What a run on labelled candidates reports.

    Attributes:
        document: The ``miss_rates`` block of ``metrics.json`` (`miss_document`).
        samples: Per ``(dataset, index)``, the chosen candidate's mistakes and every candidate's.
    """

    document: dict[str, Any]
    samples: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)


def run_mistakes(
    records: Mapping[str, Mapping[str, Any]],
    datasets: Sequence[Dataset],
    run_label: str,
    seed: int,
    out_root: Path,
) -> RunMistakes | None:
    """Miss rates of a finished run and of the reference selections on its candidates.

    Args:
        records: Per dataset, its strategy record (``StrategyResult.to_dict``).
        datasets: The run's datasets.
        run_label: The column name of the run's own selection (``s3/validator_max``).
        seed: ``run.seed`` (the ``random`` reference is seeded like the run's own ``random`` selector).
        out_root: Where the tasks' selected folders live (only their names matter here).

    Returns:
        The report, or None when no candidate of the run carries labels.
    """
    pooled: dict[str, dict[str, list[int]]] = {run_label: {}, **{r: {} for r in REFERENCE_SELECTORS}}
    samples: dict[tuple[str, int], dict[str, Any]] = {}
    labelled = False
    for ds in datasets:
        rec = records.get(ds.name) or {}
        cands = [Candidate(output_dir=Path(c["output_dir"])) for c in rec.get("candidates", [])]
        labels = candidate_labels(cands) if cands else None
        if labels is None:
            continue
        labelled = True
        chosen = {
            int(i): int(d["candidate"])
            for i, d in rec.get("decisions", {}).items()
            if d.get("candidate") is not None
        }
        add_counts(pooled[run_label], miss_rates(chosen, labels))
        task = Task.from_dataset(ds, out_root / ds.name, seed=seed)
        try:
            for name, picks in reference_choices(task, cands).items():
                add_counts(pooled[name], miss_rates(picks, labels))
        except Exception as exc:  # a reference column is analysis; it must not lose the run's results
            log.warning("no reference miss rates for %s: %s", ds.name, exc)
        for index, k in chosen.items():
            samples[(ds.name, index)] = {
                "chosen": sorted(labels[k].get(index, ())),
                "candidates": {str(j): sorted(lab.get(index, ())) for j, lab in enumerate(labels)},
            }
    if not labelled:
        return None
    doc = miss_document({k: {m: tuple(v) for m, v in c.items()} for k, c in pooled.items()})
    return RunMistakes(doc, samples)

"""What a run leaves behind: the export in the benchmark layout, the scores, ``metrics*.json``,
``samples.jsonl``, ``usage.json``, and the terminal table.

The export is ``export/<dataset>/VLM/{random.txt, ground_truth*.json, gt_geometry}`` (symlinks to the dataset)
plus ``export/<dataset>/VLM/<run-name>/agent1_data_organization`` (a copy of the selected folder), so
``medstrat score --root export --models <run-name>`` reads it unchanged. The run's own metrics are
computed from that same export, so both agree by construction.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.base import OUTPUT_SUBDIR, Usage
from benchmark.discover import Dataset
from benchmark.score.aggregate import macro
from benchmark.score.constants import METRIC_NAMES
from benchmark.score.dataset import e2e_pass
from benchmark.score.evaluate import score_dataset
from benchmark.score.forked import map_forked, processes_for
from benchmark.score.profiles import ScoringRules
from core.atomic import atomic_write_json, atomic_write_text
from core.cli_errors import one_line
from experiments.stored.run_folder import METRICS

if TYPE_CHECKING:
    from experiments.run.mistakes import RunMistakes

__all__ = [
    "METRIC_LEGEND",
    "PROFILES",
    "coverage_line",
    "export_dataset",
    "format_table",
    "metrics_document",
    "score_exports",
    "selector_fallbacks",
    "unwritten_line",
    "write_outputs",
]

log = logging.getLogger(__name__)

PROFILES = ("official", "strict")
_SCORES = ("pair_valid", "source_score", "schema_valid_score", "semantic_score", "content_fidelity_score")
"""The scorer's per-sample values ``samples.jsonl`` keeps (with ``e2e``)."""


def export_dataset(dataset: Dataset, selected: Path, export_root: Path, run_name: str) -> Path:
    """Lay out one dataset's selected output in the benchmark layout; return its folder."""
    out = export_root / dataset.name
    vlm = out / "VLM"
    vlm.mkdir(parents=True, exist_ok=True)
    cut: set[str] = set()
    if dataset.sample_limit is not None:
        # A pilot (benchmark.samples): the manifest and the ground truth of its samples only, so the scorer
        # (and the report) judge the run on the samples it was given, never the rest as missing.
        from benchmark.score.subset import write_subset

        cut = set(write_subset(dataset.vlm_dir, vlm, [e.index for e in dataset.entries()]))
    for item in sorted(dataset.vlm_dir.iterdir()):
        if (item / OUTPUT_SUBDIR).is_dir() or item.name.startswith("eval_results") or item.name in cut:
            continue  # other runs and scorer outputs are not part of the task
        link = vlm / item.name
        if not link.is_symlink() and not link.exists():
            os.symlink(item.resolve(), link)
    target = vlm / run_name / OUTPUT_SUBDIR
    # Copy beside the target and swap it in, so a kill mid-export never leaves a half-copied file where the
    # scorer (or a reader of the run folder) looks; a leftover ".partial" from an earlier kill is discarded.
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    if selected.is_dir():
        # Hard links where possible: the export is the selected folder unchanged, and every write of a run
        # replaces a file rather than rewriting it, so the two never see each other's later writes.
        shutil.copytree(selected, partial, copy_function=_link_or_copy)
    if target.exists():
        shutil.rmtree(target)
    if partial.exists():
        os.replace(partial, target)
    return out


def _link_or_copy(source: str, target: str) -> str:
    try:
        os.link(source, target)
    except OSError:  # another file system, or one without hard links
        shutil.copy2(source, target)
    return target


def score_exports(
    exports: Mapping[str, Path], run_name: str, metrics: tuple[str, ...] = (), *, workers: int | None = None
) -> dict[str, dict[str, Any]]:
    """Score every exported dataset under both profiles: ``{profile: {dataset: score_dataset(...)}}``.

    The (profile, dataset) pairs are independent and deterministic, so they are shared between this process
    and forks of it (`benchmark.score.forked`; none when another thread is alive or the platform cannot
    fork): the result is the serial loop's, in the same order.

    Args:
        exports: Dataset name → its export folder.
        run_name: The model folder name in the export.
        metrics: Registered metrics scored after the eleven (``scorer.metrics``).
        workers: Processes sharing the pairs, this one included; None = one per core; 1 = this one only.
    """
    rules = {p: ScoringRules.named(p).with_metrics(metrics) for p in PROFILES}
    items = [(p, name) for p in PROFILES for name in exports]

    def score(item: tuple[str, str]) -> dict[str, Any]:
        profile, name = item
        return score_dataset(exports[name], models=[run_name], profile=rules[profile])

    done = map_forked(score, items, processes_for(len(items), workers))
    out: dict[str, dict[str, Any]] = {p: {} for p in PROFILES}
    for (profile, name), result in zip(items, done, strict=True):
        out[profile][name] = result
    return out


def metrics_document(
    results: Mapping[str, Any],
    run_name: str,
    profile: str,
    *,
    incomplete: bool = False,
    upper_bound: bool = False,
    simulation: bool = False,
) -> dict[str, Any]:
    """``{"profile", "macro": {the eleven}, "datasets": {name: {the eleven}}}`` (+ flags when set).

    Datasets the scorer could not score (no output) are left out, as the reference main table does. Extra
    metrics (``scorer.metrics``) follow the eleven.
    """
    agg = macro(results, [run_name])["models"][run_name]
    names = [*METRIC_NAMES, *(k for k in agg["metrics"] if k not in METRIC_NAMES)]
    datasets = {}
    for name, res in results.items():
        model = res.get("models", {}).get(run_name) or {}
        if model.get("metrics") and not model.get("error"):
            datasets[name] = {k: float(model["metrics"][k]) for k in names}
    flags = {"incomplete": incomplete, "upper_bound": upper_bound, "simulation": simulation}
    return {
        "profile": profile,
        "macro": {k: (float(agg["metrics"][k]) if agg["metrics"] else None) for k in names},
        "datasets": datasets,
        **{flag: True for flag, on in flags.items() if on},
    }


def _per_sample(results: Mapping[str, Any], dataset: str, run_name: str) -> dict[str, dict[str, Any]]:
    model = results.get(dataset, {}).get("models", {}).get(run_name) or {}
    return {
        str(ps["index"]): {**{k: ps[k] for k in _SCORES}, "e2e": e2e_pass(ps)}
        for ps in model.get("per_sample", [])
    }


def write_outputs(
    run_dir: Path,
    run_name: str,
    records: Mapping[str, dict[str, Any]],
    scores: Mapping[str, Mapping[str, Any]],
    usage: Mapping[str, Usage],
    *,
    incomplete: bool,
    upper_bound: bool,
    extra_usage: Mapping[str, Any],
    simulation: bool = False,
    mistakes: RunMistakes | None = None,
) -> dict[str, dict[str, Any]]:
    """Write ``metrics.json``, ``metrics_strict.json``, ``samples.jsonl`` and ``usage.json``.

    Args:
        run_dir: The run folder.
        run_name: The model folder name in the export.
        records: Per dataset, its strategy result dict (``StrategyResult.to_dict``) or ``{"error": ...}``.
        scores: ``{profile: {dataset: score_dataset result}}``.
        usage: Per dataset, the usage summed over its calls.
        incomplete: The run stopped early (budget) or a dataset failed.
        upper_bound: Ground truth influenced selection (oracle).
        simulation: The candidates came from a simulation built from ground truth (the simulated agent).
        mistakes: Miss rates per mistake type (labelled candidates): ``miss_rates`` in both metrics files,
            per-sample ``mistakes`` in ``samples.jsonl``.
        extra_usage: Further keys for usage.json (budget state, candidate counts).

    Returns:
        ``{profile: metrics document}``.
    """
    docs = {
        p: metrics_document(
            scores[p], run_name, p, incomplete=incomplete, upper_bound=upper_bound, simulation=simulation
        )
        for p in PROFILES
    }
    if mistakes is not None:
        for doc in docs.values():
            doc["miss_rates"] = mistakes.document
    fallbacks = selector_fallbacks(records)
    if fallbacks is not None:
        for doc in docs.values():
            doc["selector_fallbacks"] = fallbacks
    for p in PROFILES:
        atomic_write_json(run_dir / METRICS[p], docs[p])
    lines = []
    for dataset, rec in records.items():
        per = {p: _per_sample(scores[p], dataset, run_name) for p in PROFILES}
        for key, decision in sorted(rec.get("decisions", {}).items(), key=lambda kv: int(kv[0])):
            row = {
                "dataset": dataset,
                "index": int(key),
                "strategy": rec.get("strategy"),
                "decision": decision,
                "validator_total": decision.get("score"),
                "scores": {p: per[p].get(key) for p in PROFILES},
            }
            if decision.get("fallback"):
                row["selector_fallback"] = True  # the configured selector raised; validator_max chose
            stopped_short = [
                k
                for k, c in enumerate(rec.get("candidates", []))
                if c.get("status") == "incomplete" and int(key) in (c.get("missing") or ())
            ]
            if stopped_short:
                # Candidates (positions in the record) that a limit or the budget stopped before this sample.
                row["missing_in_candidates"] = stopped_short
            if upper_bound:
                row["upper_bound"] = True
            if simulation:
                row["simulation"] = True
            if mistakes is not None and (dataset, int(key)) in mistakes.samples:
                row["mistakes"] = mistakes.samples[(dataset, int(key))]
            lines.append(json.dumps(row, sort_keys=True))
    atomic_write_text(run_dir / "samples.jsonl", "".join(line + "\n" for line in lines))
    atomic_write_json(
        run_dir / "usage.json",
        {
            "total": sum(usage.values(), Usage()).to_dict(),
            "datasets": {k: u.to_dict() for k, u in usage.items()},
            **extra_usage,
        },
    )
    return docs


def selector_fallbacks(records: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """Samples where the configured selector raised and ``validator_max`` chose (``on_error=fallback``).

    Args:
        records: Per dataset, its strategy result dict.

    Returns:
        ``{"total": n, "datasets": {name: n}}`` over every dataset (zeros included), or None when no sample
        fell back.
    """
    counts = {
        name: sum(1 for d in (rec.get("decisions") or {}).values() if d.get("fallback"))
        for name, rec in records.items()
    }
    total = sum(counts.values())
    return {"total": total, "datasets": counts} if total else None


METRIC_LEGEND = (
    "SV schema validity · SSC schema × semantic · SC semantic correctness · IC information completeness · "
    "IV information validity · INR information non-redundancy · CF content fidelity · MSC dataset-meta "
    "semantic correctness · MSJ dataset-meta joint × CF · SCJ source × content · E2E end-to-end success "
    "(docs/scoring.md)"
)
"""The one line under every metric table that says what its columns are."""


def coverage_line(doc: Mapping[str, Any], datasets: Sequence[str], failed: Mapping[str, str]) -> str | None:
    """``macro over k of N datasets; failed: ...`` when the macro mean does not cover every dataset.

    Args:
        doc: A metrics document (its ``datasets`` are the ones the macro mean covers).
        datasets: Every dataset of the run.
        failed: Dataset -> why it failed (the ones absent from ``doc`` without a reason say "no output").

    Returns:
        The line, or None when every dataset is covered.
    """
    covered = set(doc.get("datasets") or {})
    missing = [d for d in datasets if d not in covered]
    if not missing:
        return None
    reasons = ", ".join(
        f"{d} ({one_line(failed[d])[:120]})" if d in failed else f"{d} (no output)" for d in missing
    )
    k, n = len(datasets) - len(missing), len(datasets)
    return f"INCOMPLETE: macro over {k} of {n} datasets; failed: {reasons}"


def unwritten_line(records: Mapping[str, Mapping[str, Any]]) -> str | None:
    """``NOT WRITTEN: k of N samples (...); first: <dataset> #<i>: <why>`` when selected outputs lack samples.

    A file no reader could open fails its sample only (the dataset is scored without it); this line puts that
    on the terminal beside the table, with the first sample's reason (every reason is in ``samples.jsonl``).

    Args:
        records: Per dataset, its strategy result dict (``decisions`` with ``candidate`` None where no
            candidate wrote the sample).

    Returns:
        The line, or None when every sample of every dataset has an output.
    """
    missing = {
        name: sorted(
            (int(k), str(d.get("reason") or "no output"))
            for k, d in (rec.get("decisions") or {}).items()
            if d.get("candidate") is None
        )
        for name, rec in records.items()
    }
    total = sum(len(rows) for rows in missing.values())
    if not total:
        return None
    every = sum(len(rec.get("decisions") or {}) for rec in records.values())
    per = ", ".join(f"{name} {len(rows)}" for name, rows in missing.items() if rows)
    name, rows = next((n, r) for n, r in missing.items() if r)
    index, why = rows[0]
    return f"NOT WRITTEN: {total} of {every} samples ({per}); first: {name} #{index}: {one_line(why)[:300]}"


def format_table(
    docs: Mapping[str, Mapping[str, Any]],
    title: str,
    headline: str = "official",
    *,
    datasets: Sequence[str] | None = None,
    failed: Mapping[str, str] | None = None,
) -> str:
    """The eleven macro metrics, one row per scoring profile, as a fixed-width text table.

    Args:
        docs: ``{profile: metrics document}``.
        title: First line of the table.
        headline: The profile shown first and marked with ``*`` (``scorer.profile``).
        datasets: Every dataset of the run: when the headline's macro mean covers fewer, a line says
            ``macro over k of N datasets; failed: ...``.
        failed: Dataset -> why its strategy failed (for that line).

    Raises:
        ValueError: If ``headline`` is not one of the profiles in ``docs`` (the message lists them).
    """
    if headline not in docs:
        raise ValueError(f"unknown scorer.profile {headline!r}; valid: {', '.join(docs)}")
    head = f"{'profile':10s}" + "".join(f"{k:>7s}" for k in METRIC_NAMES)
    rows = [title, head, "-" * len(head)]
    ordered = [headline, *(p for p in docs if p != headline)]
    for profile in ordered:
        doc = docs[profile]
        values = doc["macro"]
        cells = "".join(
            f"{values[k]:7.4f}" if values[k] is not None else f"{'n/a':>7s}" for k in METRIC_NAMES
        )
        label = f"{profile}*" if profile == headline else profile
        rows.append(f"{label:10s}{cells}")
    flags = [f for f in ("incomplete", "upper_bound", "simulation") if any(d.get(f) for d in docs.values())]
    fallbacks = docs[headline].get("selector_fallbacks")
    if flags:
        rows.append(
            "NOTE: "
            + ", ".join(
                {
                    "incomplete": "INCOMPLETE (budget or limit hit, or failures: partial results)",
                    "upper_bound": "UPPER BOUND (oracle selector used ground truth)",
                    "simulation": "SIMULATION (simulated agent: oracle output with sampled mistakes)",
                }[f]
                for f in flags
            )
        )
    if fallbacks:
        per = ", ".join(f"{d} {n}" for d, n in fallbacks["datasets"].items() if n)
        rows.append(
            f"SELECTOR FALLBACK: the selector raised on {fallbacks['total']} samples ({per}); validator_max "
            "chose there (selector.on_error=fallback)"
        )
    coverage = coverage_line(docs[headline], datasets, failed or {}) if datasets is not None else None
    if coverage is not None:
        rows.append(coverage)
    return "\n".join(rows)

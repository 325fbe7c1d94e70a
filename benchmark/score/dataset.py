"""Scoring one prediction folder against one GT: per-sample records and the eleven metrics (SPEC §3.7)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.score._io import JsonRead, read_json
from benchmark.score.fields import MatchOptions
from benchmark.score.images import MAX_IMAGE_PIXELS, check_image
from benchmark.score.metadata import ImageCounts, MetaScores, meta_scores
from benchmark.score.metrics import MetricInputs, compute, e2e_pass
from benchmark.score.normalize import as_dict, mean, round4
from benchmark.score.profiles import Profile, resolve
from benchmark.score.sample import DatasetContext, SampleScore, score_sample
from benchmark.score.semantic import expected_task
from benchmark.score.source import derive_source_stem, expected_sources, match_annotations

log = logging.getLogger(__name__)

__all__ = ["DatasetScore", "compute_metrics", "e2e_pass", "gt_samples", "make_context", "score_prediction"]


@dataclass
class DatasetScore:
    """One model on one dataset.

    Attributes:
        metrics: The eleven metrics (empty when ``error`` is set).
        per_sample: One record per GT index.
        dimensions: The evaluator's 4-decimal dimensions (SSA, coverage, MSV, MCF, ... and, in strict,
            Dice/BoxF1/SliceOK).
        breakdown: Counts.
        error: Why the model could not be scored (then it is skipped in the macro mean), else None.
    """

    metrics: dict[str, float] = field(default_factory=dict)
    per_sample: list[SampleScore] = field(default_factory=list)
    dimensions: dict[str, float | None] = field(default_factory=dict)
    breakdown: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The eval_results-style dict for this model."""
        return {
            "metrics": dict(self.metrics),
            "dimensions": dict(self.dimensions),
            "breakdown": dict(self.breakdown),
            "error": self.error,
            "n_samples": len(self.per_sample),
            "per_sample": [s.to_dict() for s in self.per_sample],
        }


def _name(path: Path) -> str:
    return path.name


def _index_key(s: str) -> tuple[int, int, str]:
    return (0, int(s), s) if s.isdigit() else (1, 0, s)


def gt_samples(gt: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """GT samples by index (``samples``, else ``source_to_truth``); {} when absent."""
    samples = gt.get("samples")
    if not isinstance(samples, dict):
        samples = gt.get("source_to_truth")
    return {str(k): as_dict(v) for k, v in samples.items()} if isinstance(samples, dict) else {}


def make_context(gt: dict[str, Any], profile: Profile, dataset_root: Path) -> DatasetContext:
    """Parse the GT parts per-sample scoring needs."""
    samples = gt_samples(gt)
    content = as_dict(gt.get("content"))
    return DatasetContext(
        gt=gt,
        samples=samples,
        fmt=as_dict(gt.get("format")),
        content=content,
        expected=expected_task(gt, samples),
        opts=MatchOptions.from_content(content),
        profile=profile,
        dataset_root=dataset_root,
    )


def _main_stem(ctx: DatasetContext, ann: dict[str, Any]) -> str | None:
    return ctx.remember(ann, "main stem", lambda: derive_source_stem(ann))


def _expected(ctx: DatasetContext, index: str) -> set[str]:
    sample = ctx.samples[index]
    return ctx.remember(sample, "expected sources", lambda: expected_sources(sample))


def _gated(records: list[SampleScore], attr: str, profile: Profile) -> float:
    passing = [getattr(r, attr) or 0.0 for r in records if r.source_score > 0]
    extra_zeros = sum(1 for r in records if not r.json_valid) if profile.missing_samples_zero else 0
    n = len(passing) + extra_zeros
    return round4(sum(passing) / n) if n else 0.0


def compute_metrics(
    records: list[SampleScore], meta: MetaScores, expected_count: int, profile: Profile
) -> tuple[dict[str, float], dict[str, float | None]]:
    """The eleven metrics (then the rules' extra ones) and the evaluator dimensions from per-sample records.

    Args:
        records: One record per GT index.
        meta: Metadata scores.
        expected_count: N for SV (GT ``expected_count``, else the number of GT samples).
        profile: Scoring profile (gated-mean rule).

    Returns:
        ``(metrics, dimensions)``.
    """
    n = len(records)
    cf = _gated(records, "content_fidelity_score", profile)
    dims: dict[str, float | None] = {
        "source_selection_accuracy": round4(sum(r.source_score for r in records) / n) if n else 0.0,
        "coverage": round4(
            min(
                sum(r.image_exists for r in records),
                sum(r.image_valid for r in records),
                sum(r.json_present for r in records),
                sum(r.json_valid for r in records),
                sum(r.pair_valid for r in records),
            )
            / expected_count
        )
        if expected_count
        else 0.0,
        "schema_validity": round4(sum(r.schema_valid_score for r in records) / expected_count)
        if expected_count
        else 0.0,
        "semantic": _gated(records, "semantic_score", profile),
        "information_completeness": _gated(records, "completeness", profile),
        "information_validity": _gated(records, "validity", profile),
        "information_non_redundancy": _gated(records, "non_redundancy", profile),
        "content_fidelity": cf,
        "meta_schema_validity": meta.msv,
        "meta_semantic_correctness": meta.msc,
        "meta_content_fidelity": meta.mcf,
    }
    # The eleven (and any extra metric the rules name) come from the metric registry, in the paper's order.
    metrics = compute(MetricInputs(records, meta, expected_count, profile, dims), profile.metrics)
    if profile.geometry:
        for name, attr in (("Dice", "dice"), ("BoxF1", "box_f1"), ("SliceOK", "slice_ok")):
            values = [getattr(r.geometry, attr) for r in records]
            present = [v for v in values if v is not None]
            dims[name] = round4(mean(present)) if present else None
    return metrics, dims


def score_prediction(
    pred_dir: str | Path,
    gt: dict[str, Any],
    *,
    profile: str | Profile = "official",
    dataset_root: str | Path | None = None,
    context: DatasetContext | None = None,
) -> DatasetScore:
    """Score one ``agent1_data_organization`` folder against a raw GT dict. Never raises on bad input.

    Args:
        pred_dir: The ``agent1_data_organization`` folder.
        gt: The GT dict exactly as loaded from ``ground_truth_*.json``.
        profile: ``official``, ``strict`` or a :class:`Profile`.
        dataset_root: Dataset root for GT geometry files (default: three levels above ``pred_dir``).
        context: A `make_context` of this ``gt``, profile and root, shared by the models of one dataset so
            that what they have in common (identical annotation files) is parsed and scored once.

    Returns:
        The dataset score; ``error`` is set (and ``metrics`` empty) when the model cannot be scored at all.

    Raises:
        ValueError: ``context`` was made for another GT, profile or root (a programming error).
    """
    prof = resolve(profile)
    pred_root = Path(pred_dir)
    root = Path(dataset_root) if dataset_root is not None else pred_root.parent.parent.parent
    if not isinstance(gt, dict):
        return DatasetScore(error="ground truth is not a JSON object")
    if context is not None and (
        context.gt is not gt or context.profile != prof or context.dataset_root != root
    ):
        raise ValueError("score_prediction: the context was made for another ground truth, profile or root")
    ctx = context or make_context(gt, prof, root)
    if not ctx.samples:
        return DatasetScore(error="ground truth has no samples")
    ann_dir = pred_root / "standardized_annotations"
    reads: dict[str, JsonRead] = {}
    if ann_dir.is_dir():
        # Sorted by name, which is the order of the paths (one folder) without pathlib's slow comparisons.
        for path in sorted(ann_dir.glob("*.json"), key=_name):
            reads[path.stem] = read_json(path, ctx.parsed)
    for stem, one in reads.items():
        if (
            one.ok
            and one.value is not None
            and not isinstance(one.value, dict)
            and not prof.non_object_json_invalid
        ):
            # The reference scorer dies with AttributeError on such a file (SPEC §6 bug 12); we record
            # that as a per-model error, so the model is skipped in the macro mean like the reference table.
            kind = type(one.value).__name__
            return DatasetScore(
                error=f"standardized_annotations/{stem}.json top level is a JSON {kind}, not an object"
            )
    anns = {s: (r.value if r.ok and isinstance(r.value, dict) else None) for s, r in reads.items()}
    stems = {s: (_main_stem(ctx, a) if a is not None else None) for s, a in anns.items()}
    indices = sorted(ctx.samples, key=_index_key)
    expected = {i: _expected(ctx, i) for i in indices}
    matches = match_annotations(indices, expected, stems)
    images_dir = pred_root / "images"
    try:
        names = frozenset(p.name for p in images_dir.iterdir()) if images_dir.is_dir() else frozenset()
    except OSError:
        names = frozenset()
    records: list[SampleScore] = []
    for idx in indices:
        matched = matches[idx]
        read = reads.get(matched) if matched is not None else None
        image = check_image(
            images_dir,
            matched if matched is not None else idx,
            names,
            max_pixels=MAX_IMAGE_PIXELS if prof.image_size_cap else None,
        )
        reason = None
        if read is not None and not read.ok:
            reason = read.reason
        elif read is not None and not isinstance(read.value, dict):
            reason = (
                "annotation is JSON null" if read.value is None else "annotation top level is not an object"
            )
        records.append(
            score_sample(
                ctx,
                idx,
                matched,
                anns.get(matched) if matched is not None else None,
                read is not None,
                reason,
                image,
                expected[idx],
                stems.get(matched) if matched is not None else None,
                pred_root,
            )
        )
    counts = ImageCounts(
        n_image_exists=sum(r.image_exists for r in records),
        n_image_valid=sum(r.image_valid for r in records),
        n_pair_valid=sum(r.pair_valid for r in records),
    )
    meta_read = read_json(pred_root / "data_meta.json")
    meta = meta_scores(
        meta_read.value if meta_read.ok else None, gt, ctx.expected.task, counts, reason=meta_read.reason
    )
    expected_count = gt.get("expected_count")
    n_expected = (
        int(expected_count) if isinstance(expected_count, int) and expected_count > 0 else len(indices)
    )
    metrics, dims = compute_metrics(records, meta, n_expected, prof)
    breakdown: dict[str, Any] = {
        "n_expected": n_expected,
        "n_annotation_files": len(reads),
        "n_img": counts.n_image_exists,
        "n_img_valid": counts.n_image_valid,
        "n_json_present": sum(r.json_present for r in records),
        "n_json_valid": sum(r.json_valid for r in records),
        "n_pair_valid": counts.n_pair_valid,
        "source_pass": sum(r.source_score > 0 for r in records),
        "expected_task_type": ctx.expected.task,
        "expected_dimension": ctx.expected.dim,
        "data_meta_reason": meta.reason,
        "profile": prof.name,
        "corrections": list(prof.corrections),
    }
    if not reads:
        breakdown["note"] = "no annotation files in standardized_annotations/"
    return DatasetScore(metrics=metrics, per_sample=records, dimensions=dims, breakdown=breakdown)

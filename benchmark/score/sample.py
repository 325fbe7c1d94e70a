"""Per-sample record: coverage flags and the scores s_i, g_i, sem_i, f_i, c_i, d_i, r_i of one GT index."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from benchmark.score.content import content_blocks, content_fidelity, information_scores
from benchmark.score.fields import MatchOptions
from benchmark.score.geometry import GeometryScores, geometry_scores
from benchmark.score.images import ImageCheck
from benchmark.score.normalize import norm_full_path
from benchmark.score.profiles import Profile
from benchmark.score.schema import schema_checks, schema_score
from benchmark.score.semantic import ExpectedTask, semantic_score
from benchmark.score.source import source_score

_T = TypeVar("_T")


@dataclass(frozen=True)
class DatasetContext:
    """Everything about one GT that per-sample scoring needs, parsed once and shared by the dataset's models.

    Attributes:
        gt: The raw GT dict.
        samples: GT samples by index.
        fmt: GT ``format`` block.
        content: GT ``content`` block.
        expected: Expected task and dimension.
        opts: Field-matcher options.
        profile: The scoring profile.
        dataset_root: Dataset root (for GT geometry files).
        parsed: Annotation text → parsed JSON, so identical files of several models are parsed once and give
            the same (never modified) object.
        memo: Results that depend only on such an object (and the GT index), keyed by the object's identity;
            each entry keeps its object alive, so an identity is never reused while the context lives.
    """

    gt: dict[str, Any]
    samples: dict[str, dict[str, Any]]
    fmt: dict[str, Any]
    content: dict[str, Any]
    expected: ExpectedTask
    opts: MatchOptions
    profile: Profile
    dataset_root: Path
    parsed: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    memo: dict[tuple[int, str], tuple[Any, Any]] = field(default_factory=dict, compare=False, repr=False)

    def remember(self, obj: Any, key: str, compute: Callable[[], _T]) -> _T:
        """``compute()``, once per (``obj``, ``key``) for this context.

        Args:
            obj: The annotation object the value depends on (by identity).
            key: What else it depends on (e.g. the GT index), as a string.
            compute: Computes the value.

        Returns:
            The remembered or newly computed value.
        """
        entry = self.memo.get((id(obj), key))
        if entry is not None and entry[0] is obj:
            return entry[1]  # type: ignore[no-any-return]
        value = compute()
        self.memo[id(obj), key] = (obj, value)
        return value


@dataclass(frozen=True)
class AnnotationScores:
    """The scores of one annotation that depend only on it and its GT sample (not on images or files).

    Attributes:
        source_score: s_i.
        schema_checks: The 14 booleans.
        schema_valid_score: g_i.
        semantic_score: sem_i.
        content_blocks: Content-fidelity blocks (without geometry).
        completeness: c_i.
        validity: d_i.
        non_redundancy: r_i.
    """

    source_score: float
    schema_checks: dict[str, bool]
    schema_valid_score: float
    semantic_score: float
    content_blocks: dict[str, float]
    completeness: float
    validity: float
    non_redundancy: float


def annotation_scores(
    ctx: DatasetContext, index: str, ann: dict[str, Any], expected_stems: set[str], main_stem: str | None
) -> AnnotationScores:
    """Score the parts of one annotation that need nothing but the annotation and the GT sample ``index``
    (whose accepted source stems are ``expected_stems``)."""
    gt_sample = ctx.samples.get(index) or {}
    checks = schema_checks(ann, ctx.fmt)
    info = information_scores(ann, gt_sample, ctx.content)
    global_blocks = ctx.content.get("global_expected_blocks") or {}
    return AnnotationScores(
        source_score=source_score(ann, main_stem, expected_stems, ctx.profile),
        schema_checks=checks,
        schema_valid_score=schema_score(checks),
        semantic_score=semantic_score(ann, gt_sample, ctx.expected, ctx.content, ctx.opts),
        content_blocks=content_blocks(ann, gt_sample, global_blocks, ctx.opts),
        completeness=info.completeness,
        validity=info.validity,
        non_redundancy=info.non_redundancy,
    )


@dataclass
class SampleScore:
    """Missing or invalid annotations keep every score at 0 and say why (``reason``)."""

    index: str
    matched_annotation_index: str | None = None
    image_exists: bool = False
    image_valid: bool = False
    json_present: bool = False
    json_valid: bool = False
    path_consistent: bool = False
    pair_valid: bool = False
    source_score: float = 0.0
    schema_valid_score: float = 0.0
    schema_checks: dict[str, bool] = field(default_factory=dict)
    semantic_score: float = 0.0
    content_fidelity_score: float = 0.0
    completeness: float | None = None
    validity: float | None = None
    non_redundancy: float | None = None
    content_blocks: dict[str, float] = field(default_factory=dict)
    geometry: GeometryScores = field(default_factory=GeometryScores)
    reason: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The evaluator-style per-sample dict (plus ``reason`` and, when scored, the geometry columns)."""
        out: dict[str, Any] = {
            "index": self.index,
            "matched_annotation_index": self.matched_annotation_index,
            "image_exists": self.image_exists,
            "image_valid": self.image_valid,
            "json_present": self.json_present,
            "json_valid": self.json_valid,
            "path_consistent": self.path_consistent,
            "pair_valid": self.pair_valid,
            "source_score": self.source_score,
            "schema_valid_score": self.schema_valid_score,
            "schema_checks": dict(self.schema_checks),
            "semantic_score": self.semantic_score,
            "content_fidelity_score": self.content_fidelity_score,
            "information_quality_details": {
                "completeness": self.completeness,
                "validity": self.validity,
                "non_redundancy": self.non_redundancy,
            },
            "content_blocks": dict(self.content_blocks),
            "reason": "; ".join(self.reason) or None,
        }
        if self.geometry != GeometryScores():
            out.update(dice=self.geometry.dice, box_f1=self.geometry.box_f1, slice_ok=self.geometry.slice_ok)
        return out


def score_sample(
    ctx: DatasetContext,
    index: str,
    matched: str | None,
    ann: Any,
    json_present: bool,
    json_reason: str | None,
    image: ImageCheck,
    expected_stems: set[str],
    main_stem: str | None,
    pred_root: Path,
) -> SampleScore:
    """Score one GT index against its matched annotation.

    Args:
        ctx: Dataset context.
        index: The GT index.
        matched: The matched annotation stem (None when nothing matched).
        ann: The parsed annotation (a dict when valid; anything else is treated as invalid).
        json_present: Whether an annotation file was matched.
        json_reason: Why the annotation could not be read, if it could not.
        image: The image check for this sample.
        expected_stems: Accepted source stems.
        main_stem: The annotation's main stem.
        pred_root: The ``agent1_data_organization`` folder.

    Returns:
        The per-sample record.
    """
    rec = SampleScore(index=index, matched_annotation_index=matched)
    rec.image_exists, rec.image_valid = image.exists, image.valid
    if image.reason:
        rec.reason.append(image.reason)
    rec.json_present = json_present
    valid = isinstance(ann, dict)
    rec.json_valid = valid
    if not json_present:
        rec.reason.append("no annotation matched")
    elif not valid:
        rec.reason.append(json_reason or "annotation is not a JSON object")
    gt_sample = ctx.samples.get(index) or {}
    if ctx.profile.geometry:
        rec.geometry = geometry_scores(
            ann if valid else None, gt_sample.get("geometry"), pred_root, ctx.dataset_root
        )
    if not valid:
        return rec
    record = ann.get("record") if isinstance(ann.get("record"), dict) else {}
    actual_name = f"images/{image.path.name}" if image.path is not None else None
    rec.path_consistent = (
        image.valid
        and actual_name is not None
        and norm_full_path(record.get("image_path")) == actual_name.lower()
    )
    rec.pair_valid = image.valid and rec.path_consistent
    # The same annotation text in several models of a dataset is parsed into one object: score it once.
    scores = ctx.remember(
        ann, f"{index}\0{main_stem}", lambda: annotation_scores(ctx, index, ann, expected_stems, main_stem)
    )
    rec.source_score = scores.source_score
    rec.schema_checks = dict(scores.schema_checks)
    rec.schema_valid_score = scores.schema_valid_score
    rec.semantic_score = scores.semantic_score
    blocks = dict(scores.content_blocks)
    blocks.update(rec.geometry.blocks())
    rec.content_blocks = blocks
    rec.content_fidelity_score = content_fidelity(blocks)
    rec.completeness, rec.validity, rec.non_redundancy = (
        scores.completeness,
        scores.validity,
        scores.non_redundancy,
    )
    if rec.source_score < 1:
        rec.reason.append("source not identified")
    return rec

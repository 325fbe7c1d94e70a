"""The paper's S3 selection and S4 narrow field vote (SPEC §4), on top of validator reports.

`select_reference` picks, per manifest index, one complete candidate by the reference sort key
``(score, image valid, image_path score, -len(name))`` (full ties keep discovery order), and keeps the
metadata of the candidate with the best ``meta_score``, patched with mechanical counts. `vote_reference`
starts from that choice and votes ``task_type``/``dimension``/``annotation_type`` by summed scores, takes the
task and spatial branches from the best-ranked candidate that agrees, majority-votes four source-trace
fields, and falls back to the best candidate when the merge validates worse by more than ``margin``. Use the
``mdsbench`` profile's reports to reproduce the paper.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.fields import TASK_TYPE
from benchmark.layout import AGENT_DIR, ANNOTATIONS_DIR, DATA_META_NAME, IMAGES_DIR
from benchmark.manifest import ManifestEntry
from strategies.paper.vote import VoteResult, vote_index
from validator.registry import Profile
from validator.report import Report, SampleReport
from validator.sample import MetaView, SampleView, image_facts
from validator.values import ALLOWED_TASKS, get_path, nonmissing, norm_text

__all__ = [
    "CandidateRef",
    "MetaChoice",
    "SampleChoice",
    "Selection",
    "VoteResult",
    "Voting",
    "choose_meta",
    "discover_candidates",
    "patch_meta",
    "select_reference",
    "vote_reference",
]


@dataclass(frozen=True)
class CandidateRef:
    """One candidate output: a display name and its ``agent1_data_organization`` folder."""

    name: str
    root: Path


def discover_candidates(runs_root: str | Path) -> list[CandidateRef]:
    """The reference S3 discovery: non-dot children (alphabetical) holding outputs here or one level down."""
    found: list[CandidateRef] = []
    for child in sorted(Path(runs_root).iterdir(), key=lambda p: p.name):
        if child.name.startswith(".") or not child.is_dir():
            continue
        for root in (child, child / AGENT_DIR):
            if any((root / n).exists() for n in (ANNOTATIONS_DIR, IMAGES_DIR, DATA_META_NAME)):
                found.append(CandidateRef(child.name, root))
                break
    return found


def _annotation(report: Report, index: int) -> dict[str, Any] | None:
    return SampleView(index, report.candidate_dir).annotation


def _score(sample: SampleReport | None) -> float:
    return round(sample.total, 6) if sample is not None else 0.0


def _image_facts(sample: SampleReport) -> tuple[bool, float]:
    outcome = sample.checks.get("image_path")
    if outcome is None:
        return False, 0.0
    d = outcome.result.details
    return bool(d.get("record_image_valid") or d.get("index_image_valid")), outcome.score


@dataclass
class SampleChoice:
    """S3's choice for one index: the candidate kept, its score, and every candidate's scores."""

    index: int
    selected: str | None
    score: float
    scores: dict[str, float] = field(default_factory=dict)
    check_scores: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """``selected`` or ``missing`` (no candidate has a JSON object for this index)."""
        return "selected" if self.selected is not None else "missing"


@dataclass
class MetaChoice:
    """Which candidate's ``data_meta.json`` is kept, its pre-patch meta score, and the patched result."""

    mode: str
    selected_from: str | None
    pre_patch_score: float
    data_meta: dict[str, Any]


@dataclass
class Selection:
    """The S3 result: a choice per index and the metadata choice."""

    per_index: dict[int, SampleChoice]
    meta: MetaChoice


def _valid_names(candidates: Sequence[CandidateRef], reports: Mapping[str, Report], index: int) -> list[str]:
    out = []
    for c in candidates:
        rep = reports.get(c.name)
        if rep is not None and index in rep.samples and _annotation(rep, index) is not None:
            out.append(c.name)
    return out


def select_reference(
    candidates: Sequence[CandidateRef],
    manifest_indices: Sequence[int],
    reports: Mapping[str, Report],
    *,
    meta_mode: str = "best_then_patch",
) -> Selection:
    """Reference S3: per index, the best complete candidate; metadata from the best meta, count-patched.

    Args:
        candidates: In discovery order (alphabetical by name); order breaks full ties.
        manifest_indices: The indices to fill.
        reports: Candidate name → validator report (``mdsbench`` profile to reproduce the paper).
        meta_mode: ``best_then_patch`` (default) or ``best`` (no count patch).

    Returns:
        The selection.
    """
    per_index: dict[int, SampleChoice] = {}
    for index in manifest_indices:
        names = _valid_names(candidates, reports, index)
        choice = SampleChoice(index, None, 0.0)
        keyed = []
        for name in names:
            sample = reports[name].samples[index]
            choice.scores[name] = _score(sample)
            choice.check_scores[name] = sample.scores()
            valid, path_score = _image_facts(sample)
            keyed.append(((choice.scores[name], valid, path_score, -len(name)), name))
        if keyed:
            # sorted() is stable, so full ties keep discovery order, as in the reference.
            best = sorted(keyed, key=lambda kv: kv[0], reverse=True)[0][1]
            choice.selected, choice.score = best, choice.scores[best]
        per_index[index] = choice
    chosen = {i: _annotation(reports[c.selected], i) for i, c in per_index.items() if c.selected is not None}
    images = {i: _image_valid(reports[c.selected].samples[i]) for i, c in per_index.items() if c.selected}
    return Selection(per_index, choose_meta(candidates, reports, chosen, images, meta_mode))


def _image_valid(sample: SampleReport) -> bool:
    return _image_facts(sample)[0]


def choose_meta(
    candidates: Sequence[CandidateRef],
    reports: Mapping[str, Report],
    annotations: Mapping[int, dict[str, Any] | None],
    images_valid: Mapping[int, bool],
    mode: str = "best_then_patch",
) -> MetaChoice:
    """The candidate meta with the top meta score (first discovered on ties), patched with counts.

    Args:
        candidates: In discovery order.
        reports: Candidate name → report (its ``data_meta`` part is the meta score).
        annotations: The final annotation per index.
        images_valid: Whether each final image opens.
        mode: ``best_then_patch`` or ``best``.

    Returns:
        The meta choice.
    """
    best_name, best_score, best_meta = None, -1.0, None
    for c in candidates:
        rep = reports.get(c.name)
        if rep is None:
            continue
        meta = _read_meta(rep.candidate_dir)
        score = round(rep.data_meta.total, 6) if meta is not None else 0.0
        if meta is not None and score > best_score:
            best_name, best_score, best_meta = c.name, score, meta
    data = (
        copy.deepcopy(best_meta)
        if best_meta is not None
        else {"dataset_name": "NA", "modality_primary": ["NA"]}
    )
    if mode != "best" or best_meta is None:
        data = patch_meta(data, annotations, images_valid)
    return MetaChoice(mode, best_name, max(best_score, 0.0), data)


def _read_meta(root: Path) -> dict[str, Any] | None:
    return MetaView(root, [], {}).meta


def patch_meta(
    meta: dict[str, Any], annotations: Mapping[int, dict[str, Any] | None], images_valid: Mapping[int, bool]
) -> dict[str, Any]:
    """Set data_volume.total/label, valid_image_n.total and task_type from the final outputs (counts)."""
    final = [a for a in annotations.values() if isinstance(a, dict)]
    tasks = sorted({norm_text(get_path(a, TASK_TYPE)) for a in final} & set(ALLOWED_TASKS))
    labeled = sum(1 for a in final if nonmissing(get_path(a, f"tasks.{norm_text(get_path(a, TASK_TYPE))}")))
    out = dict(meta)
    volume = dict(out["data_volume"]) if isinstance(out.get("data_volume"), dict) else {}
    volume["total"], volume["label"] = len(final), labeled
    out["data_volume"] = volume
    valid = dict(out["valid_image_n"]) if isinstance(out.get("valid_image_n"), dict) else {}
    valid["total"] = sum(1 for v in images_valid.values() if v)
    out["valid_image_n"] = valid
    out["task_type"] = tasks
    return out


@dataclass
class Voting:
    """The S4 result: a vote per index and the metadata choice over the final outputs."""

    per_index: dict[int, VoteResult]
    meta: MetaChoice


def vote_reference(
    candidates: Sequence[CandidateRef],
    manifest_indices: Sequence[int],
    reports: Mapping[str, Report],
    selection: Selection | None = None,
    *,
    entries: Mapping[int, ManifestEntry] | None = None,
    dataset_root: Path | None = None,
    profile: Profile | str = "mdsbench",
    margin: float = 0.05,
    force_vote: bool = False,
) -> Voting:
    """Reference S4: S3's choice as base, a score-weighted vote of three media fields, branch from the best
    agreeing candidate, a majority vote of four trace fields, and a fallback when the merge validates worse.

    Args:
        candidates: In discovery order.
        manifest_indices: The indices to fill.
        reports: Candidate name → report (same profile as ``profile``).
        selection: The S3 selection (computed when None).
        entries: Manifest entries by index (for re-validating the merge's source trace).
        dataset_root: The dataset folder (for evidence profiles).
        profile: Profile used to re-validate the merge.
        margin: Keep the merge unless it scores more than this below the best candidate.
        force_vote: Keep the merge even when it scores worse.

    Returns:
        The voting result.
    """
    selection = selection or select_reference(candidates, manifest_indices, reports)
    per_index: dict[int, VoteResult] = {}
    for index in manifest_indices:
        per_index[index] = vote_index(
            index,
            candidates,
            reports,
            selection.per_index[index].selected,
            entry=(entries or {}).get(index),
            dataset_root=dataset_root,
            profile=profile,
            margin=margin,
            force_vote=force_vote,
        )
    annotations = {i: v.annotation for i, v in per_index.items() if v.annotation is not None}
    images = {
        i: bool(v.image_path and (f := image_facts(v.image_path)) and f.valid)
        for i, v in per_index.items()
        if v.annotation is not None
    }
    meta = choose_meta(candidates, reports, annotations, images, "best_then_patch")
    return Voting(per_index, meta)

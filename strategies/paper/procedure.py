"""The ``paper`` profile of S3/S4: the reference selection and voting of `strategies.paper` (SPEC §4), wired
to our candidates and written with our `write_selected`, so the two profiles differ only in the procedure."""

from __future__ import annotations

from collections.abc import Sequence

from agents.base import Candidate, Task
from benchmark.discover import Dataset
from benchmark.layout import MASKS_DIR
from strategies.base import SampleDecision
from strategies.mechanics import SampleSource, read_annotation, write_selected
from strategies.paper.reference import CandidateRef, select_reference, vote_reference
from validator.report import Report

__all__ = ["candidate_name", "select_paper", "vote_paper"]


def candidate_name(k: int) -> str:
    """Zero-padded, so the reference's alphabetical discovery order is the candidate order."""
    return f"{k:03d}"


def _refs(
    candidates: Sequence[Candidate], reports: Sequence[Report]
) -> tuple[list[CandidateRef], dict[str, Report]]:
    refs = [CandidateRef(candidate_name(k), c.output_dir) for k, c in enumerate(candidates)]
    return refs, {r.name: rep for r, rep in zip(refs, reports, strict=True)}


def select_paper(
    task: Task, candidates: Sequence[Candidate], reports: Sequence[Report]
) -> dict[int, SampleDecision]:
    """Reference S3 over the candidates; writes ``task.output_dir`` and returns the decisions."""
    refs, by_name = _refs(candidates, reports)
    selection = select_reference(refs, list(task.indices), by_name)
    sources: dict[int, SampleSource] = {}
    decisions: dict[int, SampleDecision] = {}
    for index, choice in selection.per_index.items():
        k = int(choice.selected) if choice.selected is not None else None
        src = SampleSource.of(candidates[k].output_dir, index) if k is not None else None
        if src is not None:
            sources[index] = src
        reason = f"paper S3 sort key: candidate {k}" if k is not None else "no candidate wrote this sample"
        decisions[index] = SampleDecision(index, k, reason, choice.score, details={"totals": choice.scores})
    write_selected(task.output_dir, sources, [], meta_override=selection.meta.data_meta)
    return decisions


def vote_paper(
    task: Task, candidates: Sequence[Candidate], reports: Sequence[Report], margin: float, profile: str
) -> dict[int, SampleDecision]:
    """Reference S4 over the candidates; writes ``task.output_dir`` and returns the decisions."""
    refs, by_name = _refs(candidates, reports)
    entries = {e.index: e for e in Dataset.from_root(task.root).entries()}
    voting = vote_reference(
        refs,
        list(task.indices),
        by_name,
        entries=entries,
        dataset_root=task.root,
        profile=profile,
        margin=margin,
    )
    sources: dict[int, SampleSource] = {}
    decisions: dict[int, SampleDecision] = {}
    for index, vote in voting.per_index.items():
        donor = vote.branch_selection.get("branch_source") or vote.image_from or vote.base_candidate
        k = int(donor) if donor is not None else None
        if vote.annotation is not None:
            mask = candidates[k].output_dir / MASKS_DIR / f"{index}.png" if k is not None else None
            sources[index] = SampleSource(
                vote.annotation, vote.image_path, mask if mask and mask.is_file() else None
            )
        elif k is not None and read_annotation(candidates[k].output_dir, index) is not None:
            sources[index] = SampleSource.of(candidates[k].output_dir, index)  # type: ignore[assignment]
        decisions[index] = SampleDecision(
            index,
            k,
            f"paper S4: {vote.decision}",
            vote.final_score,
            details={"field_votes": vote.field_votes, "branch": vote.branch_selection},
        )
    write_selected(task.output_dir, sources, [], meta_override=voting.meta.data_meta)
    return decisions

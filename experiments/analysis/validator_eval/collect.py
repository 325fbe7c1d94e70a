"""The evidence a validator is judged on: per stored candidate and sample, the truth (official E2E, the strict
content score, from the scorer) beside every check's score and whether it abstained, per validator profile."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmark.score.dataset import e2e_pass
from benchmark.score.evaluate import score_candidate
from experiments.selection.leaderboard import StoredDataset, load_stored
from strategies.base import DONE_MARKER, REPORTS_DIR
from validator.registry import Profile
from validator.report import Report
from validator.report_store import validate_stored
from validator.validate import get_profile, validate

__all__ = ["ABSTAIN_KEY", "Evidence", "SampleRow", "abstained", "collect", "profile_label"]

log = logging.getLogger(__name__)

ABSTAIN_KEY = "skipped"
"""A check that had nothing to judge says why in ``details["skipped"]`` (and passes): it abstained."""


def abstained(details: dict[str, object]) -> bool:
    """Whether a check result is an abstention (see `ABSTAIN_KEY`)."""
    return ABSTAIN_KEY in details


def profile_label(profile: Profile, spec: str) -> str:
    """How a profile is named in tables: its name, with ``(fitted)`` for a profile `--fit` wrote."""
    name = profile.name or Path(spec).stem
    return f"{name} (fitted)" if profile.fitted else name


@dataclass
class SampleRow:
    """One candidate's sample: the truth and, per profile, the checks' verdicts.

    Attributes:
        cluster: ``<run>/<dataset>`` (runs pooled: one cluster per stored dataset).
        dataset: The dataset name (the unit of leave-one-dataset-out).
        candidate: The candidate's position.
        index: The manifest index.
        e2e: Official E2E pass (ground truth).
        content: The strict profile's content-fidelity score (ground truth).
        totals: Per profile, the validator total.
        scores: Per profile, check name → score.
        abstain: Per profile, the checks that abstained.
    """

    cluster: str
    dataset: str
    candidate: int
    index: int
    e2e: bool
    content: float
    totals: dict[str, float] = field(default_factory=dict)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    abstain: dict[str, set[str]] = field(default_factory=dict)


@dataclass
class Evidence:
    """Everything `validator_eval` reads.

    Attributes:
        rows: One per (stored dataset, candidate, manifest index).
        stored: The stored datasets (their tasks and candidates, for re-selection).
        reports: Per profile label, per cluster, the candidates' reports (candidate order).
        profiles: Profile label → the loaded profile.
        validations: Validations run (0 when every report was stored).
    """

    rows: list[SampleRow]
    stored: list[StoredDataset]
    reports: dict[str, dict[str, list[Report]]]
    profiles: dict[str, Profile]
    validations: int = 0


def _truth(stored: StoredDataset, k: int) -> tuple[dict[int, bool], dict[int, float]]:
    cand = stored.candidates[k]
    e2e: dict[int, bool] = {}
    content: dict[int, float] = {}
    for profile in ("official", "strict"):
        scored = score_candidate(
            cand.output_dir, stored.task.root, profile=profile, unreadable_as_missing=True
        )
        if scored.error:
            log.warning("%s candidate %s (%s): %s (counted as failing)", stored.key, k, profile, scored.error)
            continue
        for s in scored.per_sample:
            if profile == "official":
                e2e[int(s.index)] = e2e_pass(s.to_dict())
            else:
                content[int(s.index)] = float(s.content_fidelity_score)
    return e2e, content


def _report(stored: StoredDataset, k: int, profile: Profile) -> tuple[Report, bool]:
    folder = Path(stored.candidates[k].output_dir)
    if (folder.parent / DONE_MARKER).is_file():
        return validate_stored(folder, stored.task.root, profile, folder.parent / REPORTS_DIR)
    return validate(folder, stored.task.root, profile=profile), False


def collect(runs: Sequence[Path], profiles: Sequence[str]) -> Evidence:
    """Score every stored candidate against the truth and read (or run) every profile's checks on it.

    Args:
        runs: Finished S3/S4 run folders (pooled).
        profiles: Validator profile names or YAML paths.

    Returns:
        The evidence.

    Raises:
        ReselectError: A run holds no finished candidates.
        ProfileError: An unknown profile.
    """
    loaded = {}
    for spec in profiles:
        prof = get_profile(spec)
        loaded[profile_label(prof, spec)] = prof
    rows: list[SampleRow] = []
    reports: dict[str, dict[str, list[Report]]] = {label: {} for label in loaded}
    stored_all: list[StoredDataset] = []
    validations = 0
    for run in runs:
        for stored in load_stored(Path(run)):
            stored_all.append(stored)
            for label, prof in loaded.items():
                reps = []
                for k in range(len(stored.candidates)):
                    rep, reused = _report(stored, k, prof)
                    validations += not reused
                    reps.append(rep)
                reports[label][stored.key] = reps
            for k in range(len(stored.candidates)):
                e2e, content = _truth(stored, k)
                for index in stored.task.indices:
                    row = SampleRow(
                        stored.key, stored.task.name, k, index, e2e.get(index, False), content.get(index, 0.0)
                    )
                    for label in loaded:
                        sample = reports[label][stored.key][k].samples.get(index)
                        if sample is None:
                            continue
                        row.totals[label] = sample.total
                        row.scores[label] = sample.scores()
                        row.abstain[label] = {
                            n for n, o in sample.checks.items() if abstained(o.result.details)
                        }
                    rows.append(row)
    return Evidence(rows, stored_all, reports, loaded, validations)

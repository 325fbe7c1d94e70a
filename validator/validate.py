"""Run a profile's checks over a candidate folder: ``validate(candidate_dir, dataset) -> Report``."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmark.discover import Dataset
from benchmark.errors import ManifestError
from benchmark.layout import AGENT_DIR, ANNOTATIONS_DIR, IMAGES_DIR, MASKS_DIR
from benchmark.manifest import ManifestEntry
from validator import _raw, _tables, dataset_facts
from validator.registry import CheckSpec, Profile, load_profile
from validator.report import CheckOutcome, CheckResult, Report, SampleReport, weighted_total
from validator.sample import (
    DATA_META,
    IMAGE_EXTS,
    MetaView,
    SampleView,
    clear_file_caches,
    file_signature,
    stat_cache,
)

log = logging.getLogger(__name__)

_CACHE: dict[tuple[Any, ...], SampleReport] = {}
_CACHE_LIMIT = 200_000
_PROFILES: dict[str, Profile] = {}


def resolve_candidate_dir(path: str | Path) -> Path:
    """The ``agent1_data_organization`` folder given it or its parent (a run or model folder)."""
    p = Path(path)
    return p / AGENT_DIR if (p / AGENT_DIR).is_dir() else p


def get_profile(profile: str | Path | Profile) -> Profile:
    """A profile object from a name, a YAML path or a profile (loaded once per name)."""
    if isinstance(profile, Profile):
        return profile
    key = str(profile)
    if key not in _PROFILES:
        _PROFILES[key] = load_profile(profile)
    return _PROFILES[key]


def dataset_root_and_entries(
    dataset: Dataset | str | Path | None,
) -> tuple[Path | None, list[ManifestEntry] | None]:
    """The dataset root and its manifest entries (None when there is no readable manifest)."""
    if dataset is None:
        return None, None
    ds = dataset if isinstance(dataset, Dataset) else Dataset.from_root(dataset)
    try:
        return ds.root, list(ds.entries())
    except ManifestError as exc:
        log.warning("no usable manifest for %s: %s", ds.root, exc)
        return ds.root, None


def run_checks(view: Any, checks: Iterable[tuple[CheckSpec, float]], index: int) -> SampleReport:
    """The report of ``(spec, weight)`` checks on a ``SampleView`` or ``MetaView`` (``index`` -1 for
    data_meta), with the weighted-mean total; a check that raises becomes a failed result, never an exception.
    """
    outcomes = {spec.name: _run_check(spec, weight, view, index) for spec, weight in checks}
    return SampleReport(index, weighted_total(outcomes), outcomes)


def run_checks_by_check(
    views: dict[int, SampleView], checks: Iterable[tuple[CheckSpec, float]]
) -> dict[int, SampleReport]:
    """`run_checks` on many views, one check across all views at a time.

    Same results as calling `run_checks` per view (checks are independent and what they memoise is lazy), but
    running one check's code over every sample in a row keeps it warm in the CPU caches, which is measurably
    faster than cycling through two dozen checks, pydantic, PIL and NumPy for each sample. Check outcomes
    stay in profile order.
    """
    outcomes: dict[int, dict[str, CheckOutcome]] = {i: {} for i in views}
    for spec, weight in checks:
        for index, view in views.items():
            outcomes[index][spec.name] = _run_check(spec, weight, view, index)
    return {i: SampleReport(i, weighted_total(o), o) for i, o in outcomes.items()}


def _run_check(spec: CheckSpec, weight: float, view: Any, index: int) -> CheckOutcome:
    try:
        result = spec.fn(view)
    except Exception as exc:  # a user check must not stop a run; record it as a failure instead
        log.exception("check %s crashed on index %s", spec.name, index)
        result = CheckResult.fail(f"check {spec.name} crashed: {type(exc).__name__}: {exc}", spec.fields)
    if not result.fields and spec.fields:
        result = CheckResult(result.score, result.message, spec.fields, result.details)
    return CheckOutcome(spec.name, weight, spec.high_risk, result)


def validate_sample(view: SampleView, profile: str | Path | Profile = "evidence") -> SampleReport:
    """Validate one sample view (no caching; S4 uses it for merged annotations).

    Args:
        view: The sample.
        profile: Profile name, YAML path or object.

    Returns:
        The sample report.
    """
    prof = get_profile(profile)
    view.options = {**prof.options, **view.options}
    return run_checks(view, prof.checks, view.index)


def _sample_key(
    root: Path,
    index: int,
    prof: Profile,
    dataset_root: Path | None,
    entry: ManifestEntry | None,
    candidate_sig: tuple[Any, ...],
) -> tuple[Any, ...]:
    files = [root / MASKS_DIR / f"{index}.png", *(root / IMAGES_DIR / f"{index}{ext}" for ext in IMAGE_EXTS)]
    return (
        str(root),
        index,
        prof.name,
        id(prof),
        str(dataset_root),
        entry.relpath if entry else None,
        tuple(file_signature(f) for f in files),
        candidate_sig,
    )


def _candidate_signature(root: Path) -> tuple[Any, ...]:
    """Stats of every annotation and of data_meta.json: consistency checks depend on all of them."""
    folder = root / ANNOTATIONS_DIR
    names = sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []
    return (file_signature(root / DATA_META), tuple((n, file_signature(folder / n)) for n in names))


def validate(
    candidate_dir: str | Path,
    dataset: Dataset | str | Path | None,
    *,
    profile: str | Path | Profile = "evidence",
    indices: Iterable[int] | None = None,
    use_cache: bool = True,
) -> Report:
    """Validate a candidate output folder against its dataset, never reading ground truth.

    Args:
        candidate_dir: An ``agent1_data_organization`` folder or its parent.
        dataset: The dataset (``benchmark.discover.Dataset`` or its root folder); None validates without raw
            data or manifest (indices then come from the annotation file names).
        profile: ``"evidence"`` (default), ``"mdsbench"``, a YAML path, or a `Profile`.
        indices: Restrict to these indices (default: the manifest's).
        use_cache: Reuse results per (candidate, sample) while the files are unchanged.

    Returns:
        The report: per-sample totals and check outcomes, and the data_meta checks.
    """
    root = resolve_candidate_dir(candidate_dir).absolute()
    prof = get_profile(profile)
    dataset_root, entries = dataset_root_and_entries(dataset)
    with stat_cache():  # one snapshot of the files per call: each path is stat'ed once
        return _validate(root, prof, dataset_root, entries, indices, use_cache)


def _validate(
    root: Path,
    prof: Profile,
    dataset_root: Path | None,
    entries: list[ManifestEntry] | None,
    indices: Iterable[int] | None,
    use_cache: bool,
) -> Report:
    by_index = {e.index: e for e in entries} if entries is not None else {}
    manifest_indices = sorted(by_index) if entries is not None else _annotation_indices(root)
    wanted = sorted(set(indices)) if indices is not None else manifest_indices
    samples: dict[int, SampleReport] = {}
    meta_view = MetaView(root, manifest_indices, {}, dict(prof.options))
    modalities = _modalities(meta_view.meta)
    candidate_sig = _candidate_signature(root) if use_cache else ()
    views = {
        i: SampleView(
            i,
            root,
            dataset_root,
            by_index.get(i),
            dict(prof.options),
            manifest_known=entries is not None,
            dataset_modalities=modalities,
        )
        for i in sorted(set(wanted) | set(manifest_indices))
    }
    peers = [views[i] for i in manifest_indices if i in views]
    pending: dict[int, SampleView] = {}
    keys: dict[int, tuple[Any, ...]] = {}
    for index in wanted:
        view = views[index]
        view.peers = peers
        if use_cache:
            keys[index] = _sample_key(root, index, prof, dataset_root, view.entry, candidate_sig)
            cached = _CACHE.get(keys[index])
            if cached is not None:
                samples[index] = cached
                continue
        pending[index] = view
    for index, report in run_checks_by_check(pending, prof.checks).items():
        samples[index] = report
        if use_cache:
            if len(_CACHE) > _CACHE_LIMIT:
                _CACHE.clear()
            _CACHE[keys[index]] = report
    samples = {i: samples[i] for i in wanted}  # manifest order, cached or not
    meta_view.samples = {i: views[i] for i in manifest_indices}
    meta = run_checks(meta_view, prof.meta_checks, -1)
    return Report(prof.name, root, samples, meta)


def _modalities(meta: dict[str, Any] | None) -> list[str]:
    value = meta.get("modality_primary") if meta else None
    items = value if isinstance(value, list) else [value]
    return [str(v) for v in items if isinstance(v, str) and v.strip()]


def _annotation_indices(root: Path) -> list[int]:
    folder = root / ANNOTATIONS_DIR
    if not folder.is_dir():
        return []
    return sorted(int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit())


def clear_cache(*, evidence: bool = False) -> None:
    """Forget cached sample results (tests and long-lived processes).

    Args:
        evidence: Also forget what is cached about files: source headers and renders, written-image facts and
            grey copies, label tables, dataset listings and documents, and resolved paths (a cold start).
    """
    _CACHE.clear()
    if evidence:
        _raw.clear_caches()
        _tables.clear_caches()
        clear_file_caches()
        dataset_facts.clear()

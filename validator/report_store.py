"""Validator reports stored beside a candidate and reused while neither the candidate nor the checks changed.

A stored report holds every check's raw result (score, message, field paths, details) for every sample and for
``data_meta.json``, not the weighted totals: the totals are recomputed from the weights of the profile that
loads it, so a profile with the same checks and options but other weights (a weight override, a fitted
profile, ``experiments.analysis.validator_eval --fit``) reuses the same file.

The file is ``<store>/<fingerprint>.json``. The fingerprint covers what a check's result depends on besides
the candidate: the check names, the profile's options, and the source bytes of the modules the checks are
defined in plus the ``validator`` and ``medio`` packages and the benchmark's format modules (a code change
re-validates). Inside, the file
records the candidate's signature (relative path, size and modification time of every file of the
candidate folder: a rewritten file invalidates it) and the dataset's (its root and the manifest's size and
modification time). The raw data under ``data/`` is read-only by contract and not re-stat'ed: 20k files
would cost more than the validation saved.

A folder that is rewritten on every run (the selected or merged output of S0-S4, which S4 validates) has no
stable signature by modification time; `validate_by_content` stores its report under the hash of its files'
bytes instead (``<store>/<fingerprint>-<content>.json``), so that a reselection writing the same merged
folder again reads the report back instead of validating it again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmark.discover import Dataset
from core.atomic import atomic_write_json, read_json_or_none
from validator.registry import CheckSpec, Profile
from validator.report import CheckOutcome, CheckResult, Report, SampleReport, weighted_total
from validator.validate import validate

__all__ = [
    "STORE_VERSION",
    "candidate_signature",
    "check_fingerprint",
    "content_signature",
    "load_by_content",
    "load_report",
    "report_document",
    "report_from_document",
    "save_report",
    "store_path",
    "validate_by_content",
    "validate_stored",
]

log = logging.getLogger(__name__)

STORE_VERSION = 1
"""Bumped when the file layout changes (older files are then ignored, never misread)."""

_SOURCE_HASHES: dict[str, str] = {}
_PACKAGE_HASH: list[str] = []
_FINGERPRINTS: dict[int, tuple[Profile, str]] = {}


def _file_hash(path: str) -> str:
    cached = _SOURCE_HASHES.get(path)
    if cached is None:
        try:
            cached = hashlib.blake2b(Path(path).read_bytes(), digest_size=16).hexdigest()
        except OSError:
            cached = "unreadable"
        _SOURCE_HASHES[path] = cached
    return cached


# What every check's helpers run: ``validator`` and ``medio`` whole, and the benchmark's format modules (its
# top level: normalize, source_stem, fields, manifest ...; the scorer below it reads ground truth, which no
# check does). A package is hashed whether or not this process imported it: a run and a reselection agree.
_HASHED = (("validator", "**/*.py"), ("medio", "**/*.py"), ("benchmark", "*.py"))


def _packages_hash() -> str:
    """The source of what every check's helpers run (`_HASHED`), hashed once per process."""
    if not _PACKAGE_HASH:
        digest = hashlib.blake2b(digest_size=16)
        for package, pattern in _HASHED:
            spec = importlib.util.find_spec(package)
            folder = Path(str(spec.origin if spec is not None else "")).parent
            for path in sorted(folder.glob(pattern)) if spec is not None else []:
                digest.update(str(path.relative_to(folder)).encode() + _file_hash(str(path)).encode())
        _PACKAGE_HASH.append(digest.hexdigest())
    return _PACKAGE_HASH[0]


def _spec_code(spec: CheckSpec) -> str:
    module = sys.modules.get(getattr(spec.fn, "__module__", "") or "")
    path = getattr(module, "__file__", None)
    return _file_hash(path) if path else f"qualname:{getattr(spec.fn, '__qualname__', spec.name)}"


def check_fingerprint(profile: Profile) -> str:
    """What a profile's check results depend on besides the candidate, as a short hex string.

    Weights are left out on purpose (totals are recomputed on load); the check names, their scope, the
    options and the code are in.

    Args:
        profile: The loaded profile.

    Returns:
        20 hex digits.
    """
    cached = _FINGERPRINTS.get(id(profile))
    if cached is not None and cached[0] is profile:
        return cached[1]
    digest = hashlib.blake2b(digest_size=10)
    specs = (*profile.checks, *profile.meta_checks)
    parts = {
        "version": STORE_VERSION,
        "checks": sorted((s.name, s.scope, _spec_code(s)) for s, _ in specs),
        "options": profile.options,
        "packages": _packages_hash(),
    }
    digest.update(json.dumps(parts, sort_keys=True, default=str).encode())
    _FINGERPRINTS[id(profile)] = (profile, digest.hexdigest())  # profiles are frozen: one key per object
    return digest.hexdigest()


def candidate_signature(folder: Path) -> str:
    """Relative path, size and modification time of every file under ``folder``, hashed (no file is read)."""
    entries: list[str] = []

    def walk(path: str, prefix: str) -> None:
        try:
            items = list(os.scandir(path))
        except OSError:
            return
        for item in items:
            try:
                if item.is_dir(follow_symlinks=False):
                    walk(item.path, f"{prefix}{item.name}/")
                    continue
                st = item.stat()
            except OSError:
                continue
            entries.append(f"{prefix}{item.name}\0{st.st_size}\0{st.st_mtime_ns}")

    walk(str(folder), "")
    entries.sort()
    text = "\n".join(entries)
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def content_signature(folder: Path) -> str | None:
    """Relative path and bytes of every file under ``folder``, hashed; None when the folder holds a link.

    A symbolic link is refused because what it reaches (and whether the validator accepts it, `safe_join`)
    depends on more than the bytes; hard links are plain files here.
    """
    digest = hashlib.blake2b(digest_size=16)
    pending = [(str(folder), "")]
    files: list[tuple[str, str]] = []
    while pending:
        path, prefix = pending.pop()
        try:
            items = list(os.scandir(path))
        except OSError:
            return None
        for item in items:
            if item.is_symlink():
                return None
            if item.is_dir(follow_symlinks=False):
                pending.append((item.path, f"{prefix}{item.name}/"))
            else:
                files.append((f"{prefix}{item.name}", item.path))
    for rel, path in sorted(files):
        try:
            data = Path(path).read_bytes()
        except OSError:
            return None
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return digest.hexdigest()


def _dataset_signature(dataset_root: Dataset | Path | None) -> str:
    if dataset_root is None:
        return "none"
    if isinstance(dataset_root, Dataset):
        # A dataset cut to its first samples (benchmark.samples) is another task than the whole one.
        limit = dataset_root.sample_limit
        return _dataset_signature(dataset_root.root) + (f"\0first {limit}" if limit is not None else "")
    root = Path(dataset_root).resolve()
    try:
        st = os.stat(root / "VLM" / "random.txt")
        manifest = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        manifest = "no manifest"
    return f"{root}\0{manifest}"


def _result_json(result: CheckResult, spec: CheckSpec | None) -> dict[str, Any]:
    # Compact: the defaults are left out (no message, the check's registered fields, no details), which keeps
    # a report of ten samples under ~15 kB and its reading a small part of a reselection.
    doc: dict[str, Any] = {"s": result.score}
    if result.message:
        doc["m"] = result.message
    if spec is None or result.fields != spec.fields:
        doc["f"] = list(result.fields)
    if result.details:
        doc["d"] = result.details
    return doc


def _sample_json(sample: SampleReport, specs: Mapping[str, CheckSpec]) -> dict[str, Any]:
    return {name: _result_json(o.result, specs.get(name)) for name, o in sample.checks.items()}


def report_document(
    report: Report, profile: Profile, dataset_root: Dataset | Path | None, *, content: str | None = None
) -> dict[str, Any]:
    """The stored form of ``report``: raw check results and the signatures that make it reusable.

    Args:
        report: A report of ``profile`` on a candidate folder.
        profile: The profile it was made with.
        dataset_root: The dataset it was validated against.
        content: The folder's `content_signature` when the report is stored by content; the document then
            records it instead of the folder's `candidate_signature`.

    Returns:
        A JSON-able document.
    """
    specs = {spec.name: spec for spec, _ in (*profile.checks, *profile.meta_checks)}
    signature = {"content": content} if content else {"candidate": candidate_signature(report.candidate_dir)}
    return {
        "version": STORE_VERSION,
        "profile": report.profile,
        "fingerprint": check_fingerprint(profile),
        **signature,
        "dataset": _dataset_signature(dataset_root),
        "samples": {str(i): _sample_json(s, specs) for i, s in sorted(report.samples.items())},
        "data_meta": _sample_json(report.data_meta, specs),
    }


def _rebuild(
    stored: Mapping[str, Any], checks: tuple[tuple[CheckSpec, float], ...], index: int
) -> SampleReport | None:
    outcomes: dict[str, CheckOutcome] = {}
    for spec, weight in checks:
        raw = stored.get(spec.name)
        if not isinstance(raw, dict):
            return None  # a check the stored file lacks: not reusable
        fields = raw.get("f")
        result = CheckResult(
            float(raw["s"]),
            raw.get("m", ""),
            spec.fields if fields is None else tuple(fields),
            raw.get("d") or {},
        )
        outcomes[spec.name] = CheckOutcome(spec.name, weight, spec.high_risk, result)
    return SampleReport(index, weighted_total(outcomes), outcomes)


def report_from_document(doc: Mapping[str, Any], profile: Profile, candidate_dir: Path) -> Report | None:
    """A report of ``profile`` rebuilt from a stored document, totals from the profile's weights.

    Args:
        doc: What `report_document` wrote.
        profile: The profile asking (its weights and check order are used).
        candidate_dir: The candidate folder the report is for (recorded in the report).

    Returns:
        The report, or None when the document lacks a check of the profile.
    """
    try:
        samples: dict[int, SampleReport] = {}
        for key, stored in doc["samples"].items():
            rebuilt = _rebuild(stored, profile.checks, int(key))
            if rebuilt is None:
                return None
            samples[int(key)] = rebuilt
        meta = _rebuild(doc["data_meta"], profile.meta_checks, -1)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if meta is None:
        return None
    return Report(profile.name, candidate_dir, samples, meta)


def store_path(store: Path, profile: Profile) -> Path:
    """Where ``profile``'s report of a candidate is stored in the candidate's ``store`` folder."""
    return store / f"{check_fingerprint(profile)}.json"


def load_report(
    store: Path, candidate_dir: Path, dataset_root: Dataset | Path | None, profile: Profile
) -> Report | None:
    """The stored report of ``candidate_dir`` under ``profile``, or None when absent or out of date.

    Args:
        store: The candidate's report folder.
        candidate_dir: The candidate's ``agent1_data_organization`` folder.
        dataset_root: The dataset it is validated against.
        profile: The profile.

    Returns:
        The report (totals from ``profile``'s weights), or None.
    """
    path = store_path(store, profile)
    doc = read_json_or_none(path)
    if not isinstance(doc, dict) or doc.get("version") != STORE_VERSION:
        return None
    if doc.get("dataset") != _dataset_signature(dataset_root):
        return None
    if doc.get("candidate") != candidate_signature(candidate_dir):
        log.debug("stored report %s is out of date (the candidate changed)", path)
        return None
    return report_from_document(doc, profile, candidate_dir)


def save_report(
    store: Path, report: Report, dataset_root: Dataset | Path | None, profile: Profile
) -> Path | None:
    """Store ``report`` in ``store`` for reuse; a folder that refuses writes is logged, never raised.

    Args:
        store: The candidate's report folder (created).
        report: The report.
        dataset_root: The dataset it was validated against.
        profile: The profile it was made with.

    Returns:
        The file written, or None when it could not be.
    """
    path = store_path(store, profile)
    try:
        atomic_write_json(path, report_document(report, profile, dataset_root), indent=None, durable=False)
    except (OSError, TypeError, ValueError) as exc:
        # A cache that cannot be written costs a validation next time; it must not fail a run.
        log.warning("cannot store the validator report %s: %s", path, exc)
        return None
    return path


def validate_stored(
    candidate_dir: Path, dataset_root: Dataset | Path | None, profile: Profile, store: Path
) -> tuple[Report, bool]:
    """The candidate's report under ``profile``: the stored one when still valid, else validated and stored.

    Args:
        candidate_dir: The candidate's ``agent1_data_organization`` folder.
        dataset_root: The dataset root.
        profile: The profile.
        store: The candidate's report folder.

    Returns:
        The report, and whether it was read from the store (True) or validated now.
    """
    folder = Path(candidate_dir).absolute()
    stored = load_report(store, folder, dataset_root, profile)
    if stored is not None:
        return stored, True
    report = validate(folder, dataset_root, profile=profile)
    save_report(store, report, dataset_root, profile)
    return report, False


def load_by_content(
    folder: Path,
    dataset_root: Dataset | Path | None,
    profile: Profile,
    store: Path,
    content: str | None = None,
) -> Report | None:
    """The report `validate_by_content` stored for a folder holding exactly ``folder``'s bytes, or None.

    Args:
        folder: An ``agent1_data_organization`` folder.
        dataset_root: The dataset root.
        profile: The profile (totals from its weights).
        store: The folder of such reports.
        content: ``folder``'s `content_signature` when the caller has it.

    Returns:
        The report (recorded for ``folder``), or None when none is stored, or the folder holds a link.
    """
    folder = Path(folder).absolute()
    content = content or content_signature(folder)
    if content is None:
        return None
    doc = read_json_or_none(store / f"{check_fingerprint(profile)}-{content}.json")
    if (
        not isinstance(doc, dict)
        or doc.get("version") != STORE_VERSION
        or doc.get("content") != content
        or doc.get("dataset") != _dataset_signature(dataset_root)
    ):
        return None
    return report_from_document(doc, profile, folder)


def validate_by_content(
    folder: Path, dataset_root: Dataset | Path | None, profile: Profile, store: Path
) -> tuple[Report, bool]:
    """The report of a folder rewritten on every run, stored under the hash of its files' bytes.

    Args:
        folder: An ``agent1_data_organization`` folder (a selected or merged output).
        dataset_root: The dataset root.
        profile: The profile.
        store: The folder of such reports (shared by every output of one dataset).

    Returns:
        The report, and whether it was read from the store (True) or validated now.
    """
    folder = Path(folder).absolute()
    content = content_signature(folder)
    if content is None:
        return validate(folder, dataset_root, profile=profile), False
    stored = load_by_content(folder, dataset_root, profile, store, content)
    if stored is not None:
        return stored, True
    report = validate(folder, dataset_root, profile=profile)
    path = store / f"{check_fingerprint(profile)}-{content}.json"
    try:
        atomic_write_json(
            path, report_document(report, profile, dataset_root, content=content), indent=None, durable=False
        )
    except (OSError, TypeError, ValueError) as exc:
        log.warning("cannot store the validator report %s: %s", path, exc)
    return report, False

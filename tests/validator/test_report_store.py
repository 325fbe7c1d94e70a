"""Stored validator reports: read back equal to a fresh validation, reweighted by the profile that loads them,
and ignored once the candidate or the checks' options change; a folder rewritten on every run (a selected or
merged output) is found again by the bytes it holds."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from validator.registry import Profile
from validator.report_store import (
    check_fingerprint,
    content_signature,
    load_report,
    store_path,
    validate_by_content,
    validate_stored,
)
from validator.validate import clear_cache, get_profile, validate

DATASET = "synth-kidney-ct-nifti"


def _reweighted(profile: Profile, factor: dict[str, float]) -> Profile:
    checks = tuple((spec, w * factor.get(spec.name, 1.0)) for spec, w in profile.checks)
    return Profile("reweighted", checks, profile.meta_checks, dict(profile.options))


def test_stored_report_reads_back_equal_to_a_fresh_validation(oracle_copy: Any, tmp_path: Path) -> None:
    cand = oracle_copy(DATASET)
    ann = cand.load(0)
    ann["context"]["sample"]["extra"]["source_file"] = "data/nowhere.nii.gz"  # some check must fail
    cand.save(0, ann)
    profile = get_profile("evidence")
    store = tmp_path / "reports"
    _, reused = validate_stored(cand.root, cand.dataset, profile, store)
    assert not reused and store_path(store, profile).is_file()
    clear_cache()
    again, reused = validate_stored(cand.root, cand.dataset, profile, store)
    assert reused
    fresh = validate(cand.root, cand.dataset, profile=profile, use_cache=False)
    assert again.samples == fresh.samples and again.data_meta == fresh.data_meta
    assert again.samples[0].total < 1.0  # the failing check travelled through the file
    assert again.samples[0].failed() == fresh.samples[0].failed()


def test_other_weights_reuse_the_file_and_recompute_totals(oracle_copy: Any, tmp_path: Path) -> None:
    cand = oracle_copy(DATASET)
    ann = cand.load(1)
    ann["context"]["sample"]["extra"]["source_file"] = "data/nowhere.nii.gz"
    cand.save(1, ann)
    evidence = get_profile("evidence")
    store = tmp_path / "reports"
    validate_stored(cand.root, cand.dataset, evidence, store)
    heavy = _reweighted(evidence, {"source_in_dataset": 50.0})
    assert check_fingerprint(heavy) == check_fingerprint(evidence)  # weights are not part of the key
    loaded = load_report(store, cand.root.absolute(), cand.dataset, heavy)
    assert loaded is not None
    fresh = validate(cand.root, cand.dataset, profile=heavy, use_cache=False)
    assert abs(loaded.samples[1].total - fresh.samples[1].total) < 1e-12
    assert loaded.samples[1].total < validate(cand.root, cand.dataset, profile=evidence).samples[1].total


def test_a_changed_candidate_is_validated_again(oracle_copy: Any, tmp_path: Path) -> None:
    cand = oracle_copy(DATASET)
    profile = get_profile("evidence")
    store = tmp_path / "reports"
    before, _ = validate_stored(cand.root, cand.dataset, profile, store)
    ann = cand.load(2)
    ann["context"]["sample"]["extra"]["source_file"] = "data/nowhere.nii.gz"
    cand.save(2, ann)
    path = cand.ann_path(2)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a new mtime even on coarse clocks
    assert load_report(store, cand.root.absolute(), cand.dataset, profile) is None
    after, reused = validate_stored(cand.root, cand.dataset, profile, store)
    assert not reused
    assert after.samples[2].total < before.samples[2].total


def test_other_options_use_another_file(oracle_copy: Any, tmp_path: Path) -> None:
    cand = oracle_copy(DATASET)
    evidence = get_profile("evidence")
    stricter = Profile(
        "stricter", evidence.checks, evidence.meta_checks, {**evidence.options, "ncc_threshold": 0.99}
    )
    assert check_fingerprint(stricter) != check_fingerprint(evidence)
    store = tmp_path / "reports"
    validate_stored(cand.root, cand.dataset, evidence, store)
    assert load_report(store, cand.root.absolute(), cand.dataset, stricter) is None


def test_a_tampered_store_is_what_gets_reused(oracle_copy: Any, tmp_path: Path) -> None:
    """Reuse is real: a stored score edited by hand comes back (while the candidate's files are unchanged)."""
    cand = oracle_copy(DATASET)
    profile = get_profile("evidence")
    store = tmp_path / "reports"
    validate_stored(cand.root, cand.dataset, profile, store)
    path = store_path(store, profile)
    doc = json.loads(path.read_text())
    doc["samples"]["0"]["source_in_dataset"]["s"] = 0.0
    path.write_text(json.dumps(doc))
    loaded, reused = validate_stored(cand.root, cand.dataset, profile, store)
    assert reused and loaded.samples[0].checks["source_in_dataset"].score == 0.0


def test_every_benchmark_module_the_validator_imports_is_in_the_fingerprint() -> None:
    # A stored report is reused while its fingerprint holds, so the code of every helper a check runs must be
    # in it: a benchmark module the validator imports (benchmark.source_stem ...) that were not hashed would
    # leave reports of the old code in use after an edit.
    import ast
    import importlib.util

    from validator.report_store import _HASHED

    root = Path(__file__).resolve().parents[2]
    hashed = {
        path.resolve()
        for package, pattern in _HASHED
        for path in (root / package).glob(pattern)
        if importlib.util.find_spec(package) is not None
    }
    imported = set()
    for path in (root / "validator").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("benchmark"):
                imported.add(node.module)
    assert "benchmark.source_stem" in imported
    files = {(root / Path(*m.split("."))).with_suffix(".py") for m in imported}
    files = {f if f.is_file() else f.with_suffix("") / "__init__.py" for f in files}
    assert files <= hashed, sorted(str(f) for f in files - hashed)


def _rewrite(folder: Path, target: Path) -> None:
    """Write ``folder``'s files again at ``target``: the same bytes, new files with new modification times."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        out = target / path.relative_to(folder)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(path.read_bytes())


def test_an_output_written_again_with_the_same_bytes_reuses_its_report(
    oracle_copy: Any, tmp_path: Path
) -> None:
    cand = oracle_copy(DATASET)
    ann = cand.load(0)
    ann["context"]["sample"]["extra"]["source_file"] = "data/nowhere.nii.gz"  # some check must fail
    cand.save(0, ann)
    profile = get_profile("evidence")
    store = tmp_path / "reports"
    first, reused = validate_by_content(cand.root, cand.dataset, profile, store)
    assert not reused and len(list(store.glob("*.json"))) == 1
    again_dir = tmp_path / "next-run" / "agent1_data_organization"  # another run's folder, same bytes
    _rewrite(cand.root, again_dir)
    assert content_signature(again_dir) == content_signature(cand.root)
    clear_cache()
    again, reused = validate_by_content(again_dir, cand.dataset, profile, store)
    assert reused
    fresh = validate(again_dir, cand.dataset, profile=profile, use_cache=False)
    assert again.samples == fresh.samples and again.data_meta == fresh.data_meta
    assert again.candidate_dir == again_dir.absolute()
    assert again.samples[0].total < 1.0 and again.samples[0].failed() == first.samples[0].failed()


def test_an_output_with_one_changed_byte_is_validated_again(oracle_copy: Any, tmp_path: Path) -> None:
    cand = oracle_copy(DATASET)
    profile = get_profile("evidence")
    store = tmp_path / "reports"
    before, _ = validate_by_content(cand.root, cand.dataset, profile, store)
    ann = cand.load(2)
    ann["context"]["sample"]["extra"]["source_file"] = "data/nowhere.nii.gz"
    cand.save(2, ann)
    after, reused = validate_by_content(cand.root, cand.dataset, profile, store)
    assert not reused
    assert after.samples[2].total < before.samples[2].total
    assert len(list(store.glob("*.json"))) == 2  # one report per content


def test_an_output_holding_a_symbolic_link_is_never_stored(oracle_copy: Any, tmp_path: Path) -> None:
    """Whether a link is followed depends on where it leads, not on bytes: such a folder is validated."""
    cand = oracle_copy(DATASET)
    image = next((cand.root / "images").glob("0.*"))
    moved = tmp_path / image.name
    image.rename(moved)
    image.symlink_to(moved)
    assert content_signature(cand.root) is None
    store = tmp_path / "reports"
    _, reused = validate_by_content(cand.root, cand.dataset, get_profile("evidence"), store)
    _, again = validate_by_content(cand.root, cand.dataset, get_profile("evidence"), store)
    assert not reused and not again and not store.exists()

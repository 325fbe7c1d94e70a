"""Broken candidates become failed checks with messages, never exceptions; escaping source paths are never
opened."""

from __future__ import annotations

import builtins
import json
import os
from pathlib import Path
from typing import Any

import pytest

import medio
from validator.validate import validate

CLS = "synth-histology-png"


def _failed_messages(report: Any, index: int) -> str:
    return " | ".join(f"{o.name}: {o.result.message}" for o in report.samples[index].failed())


def test_missing_image_is_a_failed_check_naming_the_image(oracle_copy: Any) -> None:
    c = oracle_copy(CLS)
    (c.root / "images" / "0.png").unlink()
    report = validate(c.root, c.dataset)
    assert report.samples[0].checks["image_path"].score == 0.0
    assert "images/0.png" in _failed_messages(report, 0)


def test_corrupt_png_is_a_failed_check(oracle_copy: Any) -> None:
    c = oracle_copy(CLS)
    (c.root / "images" / "1.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    report = validate(c.root, c.dataset)
    assert report.samples[1].checks["image_path"].score == 0.0
    assert report.samples[1].checks["source_renders_like_image"].score == 0.0


@pytest.mark.parametrize("payload", ["[1, 2]", '"text"', "0", "null", "{not json"])
def test_non_object_or_unparsable_json_fails_every_check_without_raising(
    oracle_copy: Any, payload: str
) -> None:
    c = oracle_copy(CLS)
    c.ann_path(2).write_text(payload)
    for profile in ("evidence", "mdsbench"):
        report = validate(c.root, c.dataset, profile=profile)
        assert report.samples[2].total < 0.2
        assert "2.json" in _failed_messages(report, 2)


def test_absent_data_meta_fails_the_meta_checks_with_a_message(oracle_copy: Any) -> None:
    c = oracle_copy(CLS)
    (c.root / "data_meta.json").unlink()
    report = validate(c.root, c.dataset)
    assert report.data_meta.total == 0.0
    assert all("data_meta.json is missing" in o.result.message for o in report.data_meta.failed())


def _spy_opens(monkeypatch: pytest.MonkeyPatch, forbidden: Path) -> list[str]:
    """Record any attempt to open ``forbidden`` through builtins.open, os.open or medio.read."""
    seen: list[str] = []
    real_open, real_os_open, real_read = builtins.open, os.open, medio.read

    def check(path: Any) -> None:
        if isinstance(path, str | Path) and Path(path).resolve() == forbidden.resolve():
            seen.append(str(path))

    def spy_open(file: Any, *a: Any, **k: Any) -> Any:
        check(file)
        return real_open(file, *a, **k)

    def spy_os_open(path: Any, *a: Any, **k: Any) -> int:
        check(path)
        return real_os_open(path, *a, **k)

    def spy_read(path: Any, *a: Any, **k: Any) -> Any:
        check(path)
        return real_read(path, *a, **k)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(os, "open", spy_os_open)
    monkeypatch.setattr(medio, "read", spy_read)
    return seen


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_source_path_escaping_the_dataset_fails_and_is_never_opened(
    oracle_copy: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    c = oracle_copy(CLS)
    outside = tmp_path / "outside.png"
    outside.write_bytes((c.root / "images" / "0.png").read_bytes())
    if kind == "dotdot":
        declared = os.path.relpath(outside, c.dataset)
    elif kind == "absolute":
        declared = str(outside)
    else:
        # A private copy of the dataset, so the shared one stays untouched.
        import shutil

        ds = tmp_path / "ds"
        shutil.copytree(c.dataset, ds, ignore=shutil.ignore_patterns("VLM"))
        (ds / "VLM").mkdir()
        shutil.copy(c.dataset / "VLM" / "random.txt", ds / "VLM" / "random.txt")
        (ds / "data" / "link.png").symlink_to(outside)
        c.dataset = ds
        declared = "data/link.png"
    doc = c.load(0)
    doc["context"]["sample"]["extra"]["source_file"] = declared
    c.save(0, doc)
    seen = _spy_opens(monkeypatch, outside)
    report = validate(c.root, c.dataset, use_cache=False)
    result = report.samples[0].checks["source_in_dataset"].result
    assert result.score == 0.0
    assert "outside the dataset" in result.message
    assert seen == []


def test_ground_truth_files_are_never_opened(suite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from validator.validate import clear_cache

    clear_cache()
    real_open, real_os_open = builtins.open, os.open
    real_path_open = Path.open

    def guard(path: Any) -> None:
        if isinstance(path, str | Path | bytes) and "ground_truth" in Path(os.fsdecode(path)).name:
            raise PermissionError(f"validator tried to open ground truth {path}")

    def g_open(file: Any, *a: Any, **k: Any) -> Any:
        guard(file)
        return real_open(file, *a, **k)

    def g_os_open(path: Any, *a: Any, **k: Any) -> int:
        guard(path)
        return real_os_open(path, *a, **k)

    def g_path_open(self: Path, *a: Any, **k: Any) -> Any:
        guard(self)
        return real_path_open(self, *a, **k)

    monkeypatch.setattr(builtins, "open", g_open)
    monkeypatch.setattr(io, "open", g_open)
    monkeypatch.setattr(os, "open", g_os_open)
    monkeypatch.setattr(Path, "open", g_path_open)
    for name in ("synth-histology-png", "synth-kidney-ct-nifti"):
        assert list((suite / name / "VLM").glob("ground_truth*.json"))
        with pytest.raises(PermissionError):
            json.loads((suite / name / "VLM" / f"ground_truth_{name}.json").read_text())
        report = validate(suite / name / "VLM" / "oracle", suite / name)
        assert report.mean_total == pytest.approx(1.0)

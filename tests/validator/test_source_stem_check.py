"""``source_stem_matchable`` (evidence profile): a source whose extension the official scorer keeps in its
stem needs ``extra.source_stem``; the check flags the missing or wrong stem with the fix, passes the fixed
output, and leaves every total unchanged where the scorer strips the source's extension."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from benchmark.source_stem import add_source_stem
from validator.registry import Profile
from validator.report import CheckOutcome, CheckResult, weighted_total
from validator.validate import validate

CHECK = "source_stem_matchable"
SOURCES = {
    0: "data/raw/P001.dat",
    1: "data/raw/case_2.dcm.gz",
    2: "data/raw/slide_4.jp2",
    3: "data/case_7/segmentation.nrrd",
    4: "data/raw/img_5.png",
}


def _dataset(root: Path) -> Path:
    for rel in SOURCES.values():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".png"):
            Image.fromarray(np.full((8, 8), 90, np.uint8)).save(root / rel)
        else:
            (root / rel).write_bytes(bytes(range(64)))
    (root / "VLM").mkdir(parents=True)
    lines = "".join(f"{i} /authors/stems/{rel}\n" for i, rel in SOURCES.items())
    (root / "VLM" / "random.txt").write_text(lines, encoding="utf-8")
    return root


def _annotation(index: int, **extra: Any) -> dict[str, Any]:
    rel = SOURCES[index]
    return {
        "record": {"schema_version": "1.0.1", "dataset_name": "stems", "image_path": f"images/{index}.png"},
        "context": {
            "sample": {
                "subject_id": "NA",
                "sex": "unknown",
                "race_ethnicity": "NA",
                "site_id": "NA",
                "modality_primary": "CT",
                "extra": {"source_file": rel, "original_filename": rel.rsplit("/", 1)[-1], **extra},
            }
        },
        "media_geometry": {
            "media": {"task_type": "classification", "dimension": "2D"},
            "spatial": {"common": {"pixel_size_px": [8, 8]}, "three_d": {}, "video": {}},
        },
        "tasks": {
            "classification": {"schema_variant": "multiclass", "class_names": {"0": "a"}, "label": 0},
            "segmentation": {},
            "detection": {},
        },
    }


def _folder(out: Path, annotations: dict[int, dict[str, Any]]) -> Path:
    (out / "standardized_annotations").mkdir(parents=True)
    (out / "images").mkdir()
    for index, doc in annotations.items():
        (out / "standardized_annotations" / f"{index}.json").write_text(json.dumps(doc), encoding="utf-8")
        Image.fromarray(np.full((8, 8), 90, np.uint8)).save(out / "images" / f"{index}.png")
    return out


def _outcomes(out: Path, root: Path, profile: str | Profile = "evidence") -> dict[int, CheckOutcome]:
    report = validate(out, root, profile=profile, use_cache=False)
    return {i: s.checks[CHECK] for i, s in report.samples.items()}


def test_a_source_the_scorer_cannot_match_is_flagged_with_the_stem_to_add(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "stems")
    out = _folder(tmp_path / "raw", {i: _annotation(i) for i in SOURCES})
    outcomes = _outcomes(out, root)
    assert outcomes[0].result.message == (
        "source_file 'data/raw/P001.dat' ends in '.dat', an extension the official scorer does not strip, "
        "so it cannot match the sample by its file name; add extra.source_stem 'P001'"
    )
    assert outcomes[1].result.message.endswith(
        "ends in '.dcm.gz', an extension the official scorer does not strip, so it cannot match the sample "
        "by its file name; add extra.source_stem 'case_2'"
    )
    assert [outcomes[i].score for i in (0, 1, 2, 3)] == [0.0] * 4
    assert not outcomes[4].result.applies  # .png: the scorer strips it


def test_the_writers_stem_passes_and_a_stem_naming_the_samples_folder_is_accepted(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "stems")
    annotations = {i: _annotation(i) for i in SOURCES}
    for doc in annotations.values():
        add_source_stem(doc["context"]["sample"]["extra"])
    annotations[3] = _annotation(3, source_stem="case_7")  # the sample is its folder, as in kits23
    outcomes = _outcomes(_folder(tmp_path / "fixed", annotations), root)
    assert {i: o.score for i, o in outcomes.items()} == dict.fromkeys(SOURCES, 1.0)
    assert [o.result.applies for o in outcomes.values()] == [True, True, True, True, False]


def test_a_model_written_stem_that_names_neither_file_nor_folder_is_flagged(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "stems")
    out = _folder(
        tmp_path / "own", {0: _annotation(0, source_stem="raw_P001"), 2: _annotation(2, source_stem="x")}
    )
    outcomes = _outcomes(out, root)
    assert outcomes[0].score == 0.0
    assert outcomes[0].result.message.endswith(
        "and extra.source_stem 'raw_P001' names neither that file nor a folder on its path; "
        "set extra.source_stem 'P001'"
    )
    assert outcomes[2].result.details["stem"] == "slide_4"


def _without_the_check(tmp_path: Path) -> Path:
    path = tmp_path / "no_stem_check.yaml"
    path.write_text(f"defaults:\n  - evidence\n  - _self_\nprofile: no_stem\nchecks:\n  {CHECK}: 0.0\n")
    return path


def test_no_total_changes_where_the_scorer_strips_the_extension(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "stems")
    out = _folder(tmp_path / "raw", {i: _annotation(i) for i in SOURCES})
    with_check = validate(out, root, profile="evidence", use_cache=False)
    without = validate(out, root, profile=_without_the_check(tmp_path), use_cache=False)
    assert with_check.samples[4].total == without.samples[4].total < 1.0
    for i in (0, 1, 2, 3):  # the check weighs where it applies, and only a little
        assert with_check.samples[i].total < without.samples[i].total
        assert without.samples[i].total - with_check.samples[i].total < 0.03


def test_a_result_that_does_not_apply_carries_no_weight() -> None:
    def outcome(name: str, weight: float, result: CheckResult) -> CheckOutcome:
        return CheckOutcome(name, weight, False, result)

    half = outcome("a", 1.0, CheckResult(0.5))
    assert weighted_total({"a": half, "b": outcome("b", 3.0, CheckResult.not_applicable("n/a"))}) == 0.5
    assert weighted_total({"b": outcome("b", 3.0, CheckResult.not_applicable("n/a"))}) == 1.0
    assert weighted_total({"a": half, "b": outcome("b", 1.0, CheckResult.ok())}) == pytest.approx(0.75)


def test_the_paper_profile_does_not_run_the_check(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "stems")
    out = _folder(tmp_path / "raw", {0: _annotation(0)})
    assert CHECK not in validate(out, root, profile="mdsbench", use_cache=False).samples[0].checks

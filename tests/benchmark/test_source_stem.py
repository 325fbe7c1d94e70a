"""`benchmark.source_stem`: which sources the official scorer cannot match by name, the stem it needs, and the
scorer's own verdict (the official profile of `benchmark.score.source`, conformance-tested against the
reference) before and after the stem is recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.normalize import STEM_EXTENSIONS, normalize_source_stem
from benchmark.score.profiles import resolve
from benchmark.score.source import derive_source_stem, source_score
from benchmark.source_stem import add_source_stem, file_stem, source_stem_need, unstripped_extension

# Extensions the real benchmark's trees hold, or plausibly could, that the scorer's list lacks.
OUTSIDE = [".dcm.gz", ".raw", ".jp2", ".nrrd", ".mhd", ".dat", ".parquet", ".hdr", ".nrrd.gz", ".zip"]
# Extensions the list has (some look exotic: .mha, .czi, .svs are in it).
INSIDE = [".mha", ".czi", ".svs", ".nii.gz", ".ome.tif", ".dcm", ".png", ".avi", ".h5", ".img"]


def test_the_test_extensions_are_where_the_constants_put_them() -> None:
    assert not [e for e in OUTSIDE if e.endswith(STEM_EXTENSIONS)]
    assert all(e.endswith(STEM_EXTENSIONS) for e in INSIDE)


def _annotation(extra: dict[str, object]) -> dict[str, object]:
    return {"record": {"image_path": "images/0.png"}, "context": {"sample": {"extra": extra}}}


def _official(extra: dict[str, object], gt_stem: str) -> float:
    ann = _annotation(extra)
    expected = {s for s in [normalize_source_stem(gt_stem)] if s}
    return source_score(ann, derive_source_stem(ann), expected, resolve("official"))


@pytest.mark.parametrize("ext", OUTSIDE)
def test_a_source_outside_the_list_matches_the_official_scorer_only_once_its_stem_is_recorded(
    ext: str,
) -> None:
    source = f"data/Scans 1/Case-07_a{ext}"
    extra: dict[str, object] = {"source_file": source, "original_filename": source.rsplit("/", 1)[-1]}
    assert unstripped_extension(source) == ext
    gt_stem = "Case-07_a"  # the real benchmark's GT: the file name without its extension
    assert _official(extra, gt_stem) == 0.0
    need = add_source_stem(extra)
    assert need is not None and extra["source_stem"] == gt_stem == need.stem
    assert _official(extra, gt_stem) == 1.0
    assert add_source_stem(extra) is None  # recorded once; the second call finds nothing to do


def test_a_compressed_files_gt_stem_may_keep_its_inner_extension() -> None:
    extra: dict[str, object] = {"source_file": "data/case_2.dcm.gz"}
    add_source_stem(extra)
    assert extra["source_stem"] == "case_2"
    assert _official(extra, "case_2.dcm") == _official(extra, "case_2") == 1.0


@pytest.mark.parametrize("ext", INSIDE)
def test_a_source_inside_the_list_is_never_touched(ext: str) -> None:
    extra: dict[str, object] = {"source_file": f"data/x/Case-07_a{ext}", "source_stem": "anything"}
    assert unstripped_extension(str(extra["source_file"])) is None
    assert add_source_stem(extra) is None and extra["source_stem"] == "anything"
    assert _official({"source_file": f"data/x/Case-07_a{ext}"}, "Case-07_a") == 1.0


@pytest.mark.parametrize(
    ("path", "stem"),
    [
        ("data/P001.dat", "P001"),
        ("data/a/b.NRRD", "b"),
        ("v.nrrd.gz", "v"),
        ("x.ome.tif", "x"),
        (
            "data/1.2.840.113619.2.55.3",
            "1.2.840.113619.2.55.3",
        ),  # DICOM-style: numeric parts are not extensions
        ("data/series_01/", "series_01"),  # a folder keeps its name
        ("noext", "noext"),
    ],
)
def test_the_file_stem_is_the_name_without_its_extension(path: str, stem: str) -> None:
    assert file_stem(path) == stem


def test_names_without_an_extension_need_nothing() -> None:
    for source in ("data/1.2.840.113619.2.55.3", "data/series_01/", "data/IM0001"):
        assert source_stem_need({"source_file": source}) is None


def test_a_scanned_value_that_already_names_the_file_is_enough() -> None:
    # case_id is scanned by the scorer (its key matches the scan pattern): nothing to add.
    assert source_stem_need({"source_file": "data/P001.dat", "case_id": "p001"}) is None
    # subject_id is not scanned: a stem is still needed.
    assert source_stem_need({"source_file": "data/P001.dat", "subject_id": "P001"}) is not None


def test_a_written_stem_is_kept_when_it_names_the_file_or_a_folder_and_replaced_otherwise() -> None:
    kept = {"source_file": "data/case_00286/segmentation.nrrd", "source_stem": "case_00286"}
    assert add_source_stem(kept) is None and kept["source_stem"] == "case_00286"
    own_case = {"source_file": "data/P001.dat", "source_stem": "p001"}
    assert add_source_stem(own_case) is None and own_case["source_stem"] == "p001"
    wrong = {"source_file": "data/P001.dat", "source_stem": "P002"}
    need = add_source_stem(wrong)
    assert need is not None and need.current == "P002" and wrong["source_stem"] == "P001"
    assert need.message().endswith(
        "names neither that file nor a folder on its path; set extra.source_stem 'P001'"
    )
    # "data" itself is not a folder that identifies a sample
    assert source_stem_need({"source_file": "data/P001.dat", "source_stem": "data"}) is not None


def test_the_source_falls_back_to_original_filename() -> None:
    extra: dict[str, object] = {"source_file": "NA", "original_filename": "scan_3.mhd"}
    add_source_stem(extra)
    assert extra["source_stem"] == "scan_3"


def test_no_conformance_annotation_is_changed(conformance_dir: Path) -> None:
    # Every source in the shared vectors has an extension the scorer strips (or none): nothing to record.
    files = sorted(
        (conformance_dir / "cases").glob("*/VLM/*/agent1_data_organization/standardized_annotations/*.json")
    )
    assert len(files) > 100
    changed = []
    for path in files:
        doc = json.loads(path.read_text(encoding="utf-8"))
        extra = (
            ((doc.get("context") or {}).get("sample") or {}).get("extra") if isinstance(doc, dict) else None
        )
        if isinstance(extra, dict) and add_source_stem(extra) is not None:
            changed.append(path)
    assert changed == []


@pytest.mark.parametrize(
    "more",
    [
        {},
        {"case_id": "P001"},
        {"sample_id": "p-001"},
        {"subject_id": "P001"},  # not scanned by the scorer
        {"label_text": "P001"},  # scanned (key "label")
        {"patient": "P001"},  # no scanned key word
        {"source_stem": "P001_t1"},  # the channel suffix is stripped: still P001
        {"source_stem": "x" * 90 + "P001"},  # too long and not path-like: not scanned
        {"image_id": "data/raw/P001.png"},
    ],
)
def test_the_need_agrees_with_the_official_scorer(more: dict[str, str]) -> None:
    # `source_stem_need` re-reads the scorer's scan rule: it must say "nothing needed" exactly when the
    # official gate already passes against the bare-stem ground truth.
    extra: dict[str, object] = {"source_file": "data/raw/P001.dat", **more}
    assert (source_stem_need(extra) is None) == (_official(extra, "P001") == 1.0)

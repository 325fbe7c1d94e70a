"""DICOM SEG, RTSTRUCT and SR: read as label maps on their referenced slices and as structured content,
resolved by UID to the images they describe; broken ones fail with one-line medio errors naming the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pydicom
import pytest
from dicom_derived_files import (
    COLUMNS,
    ORIGIN,
    PIXEL_SPACING,
    ROWS,
    CtSeries,
    Slice,
    write_ct_series,
    write_rtstruct,
    write_seg,
    write_sr,
)

import medio
from medio.dicom_sr import read_report
from medio.errors import CorruptFile, KeyNotFound, MedioError, MissingReference


def _box(top: int, left: int, bottom: int, right: int) -> np.ndarray:
    mask = np.zeros((ROWS, COLUMNS), dtype=bool)
    mask[top : bottom + 1, left : right + 1] = True
    return mask


@pytest.fixture
def study(tmp_path: Path) -> tuple[Path, CtSeries]:
    root = tmp_path / "data" / "P-001"
    return root, write_ct_series(root / "ct", 4)


def _one_line_naming(exc: MedioError, path: Path) -> None:
    assert str(path) in str(exc) and "\n" not in str(exc), str(exc)


# -- SEG -------------------------------------------------------------------------------------------------


def test_seg_is_a_label_map_of_segment_numbers_aligned_with_the_referenced_series(study):
    root, ct = study
    tumour, oedema = _box(2, 3, 5, 7), _box(8, 10, 11, 14)
    seg = write_seg(
        root / "seg" / "seg.dcm",
        ct,
        [(1, 1, tumour), (2, 1, oedema), (1, 2, tumour)],
        labels={1: "tumour", 2: "oedema"},
    )
    labels = medio.read(seg)
    volume = medio.read(
        root / "ct"
    )  # the series as read_series stacks it (file names are in reverse z order)
    assert labels.meta.format == "dicom_seg" and labels.array.shape == volume.array.shape == (
        4,
        ROWS,
        COLUMNS,
    )
    assert np.array_equal(labels.array[1], tumour * 1 + oedema * 2)
    assert np.array_equal(labels.array[2], tumour * 1)
    assert not labels.array[0].any() and not labels.array[3].any()
    # Slice 1 of the label map is slice 1 of the image volume: the SEG's referenced file is that slice.
    assert labels.meta.header["slice_files"][1] == str(ct.slices[1].path)
    assert int(volume.array[1, 0, 0]) == 1000 + 10 * 1 - 1024
    assert labels.meta.header["classes"] == {"0": "background", "1": "tumour", "2": "oedema"}
    assert labels.meta.header["segment_slices"] == {"1": [[1, 2]], "2": [[1, 1]]}


def test_seg_frames_without_a_source_image_land_on_the_series_slice_at_their_position(study):
    root, ct = study
    seg = write_seg(root / "seg.dcm", ct, [(1, 3, _box(2, 3, 5, 7))], derivation=False)
    labels = medio.read(seg)
    assert labels.array.shape == (4, ROWS, COLUMNS) and labels.array[3].sum() == 4 * 5


def test_fractional_seg_frames_count_from_half_the_maximum_value(study):
    root, ct = study
    probability = np.zeros((ROWS, COLUMNS), dtype=np.uint8)
    probability[4, 4], probability[4, 5], probability[4, 6] = 255, 128, 127
    seg = write_seg(root / "seg.dcm", ct, [(1, 0, probability)], fractional=True)
    labels = medio.read(seg)
    assert sorted(map(tuple, np.argwhere(labels.array[0]))) == [(4, 4), (4, 5)]


def test_seg_without_its_images_in_the_tree_is_ordered_by_its_own_plane_positions(study, tmp_path):
    _root, ct = study
    lone = tmp_path / "elsewhere" / "data" / "seg.dcm"  # the search never climbs above a `data` folder
    write_seg(lone, ct, [(1, 3, _box(1, 1, 2, 2)), (1, 0, _box(5, 5, 6, 6))])
    labels = medio.read(lone)
    assert labels.array.shape == (2, ROWS, COLUMNS)
    assert labels.array[0, 5, 5] == 1 and labels.array[1, 1, 1] == 1  # z 0.0 before z 7.5
    assert labels.meta.header["referenced_series_found"] is False


def test_inspect_lists_segments_frames_and_referenced_files_of_a_seg(study):
    root, ct = study
    seg = write_seg(root / "seg.dcm", ct, [(1, 1, _box(0, 0, 1, 1)), (1, 2, _box(0, 0, 1, 1))])
    info = medio.inspect(seg)
    assert info["format"] == "dicom_seg"
    assert info["segments"][0] == {
        "number": 1,
        "label": "segment 1",
        "category": "Morphologically Altered Structure",
        "type": "segment 1",
        "algorithm": "MANUAL",
        "frames": 2,
    }
    assert [r["file"] for r in info["referenced_images"]] == [str(ct.slices[1].path), str(ct.slices[2].path)]
    assert info["header"]["StudyInstanceUID"] == ct.study_uid  # what the rules agent joins studies by


def test_seg_without_segment_sequence_fails_as_corrupt_naming_the_file(study):
    root, ct = study
    seg = write_seg(root / "seg.dcm", ct, [(1, 1, _box(0, 0, 1, 1))], with_segments=False)
    with pytest.raises(CorruptFile, match="SegmentSequence") as caught:
        medio.read(seg)
    _one_line_naming(caught.value, seg)
    assert medio.inspect(seg)["error_type"] == "CorruptFile"


def test_seg_with_truncated_pixel_data_fails_as_corrupt_naming_the_file(study):
    root, ct = study
    frames = [(1, k, _box(0, 0, 3, 3)) for k in range(4)]
    seg = write_seg(root / "seg.dcm", ct, frames, truncate=True)
    with pytest.raises(CorruptFile) as caught:
        medio.read(seg)
    _one_line_naming(caught.value, seg)


# -- RTSTRUCT --------------------------------------------------------------------------------------------


def _mm(row: float, col: float) -> tuple[float, float]:
    """Patient (x, y) of a pixel centre of the test series (axial, identity orientation)."""
    return ORIGIN[0] + col * PIXEL_SPACING[1], ORIGIN[1] + row * PIXEL_SPACING[0]


def test_rtstruct_square_contour_fills_exactly_its_pixels_on_the_referenced_slice(study):
    root, ct = study
    square = [_mm(2, 3), _mm(2, 7), _mm(5, 7), _mm(5, 3)]
    rt = write_rtstruct(root / "rt" / "rt.dcm", ct, {"GTV": [(2, square)]})
    labels = medio.read(rt)
    assert labels.meta.format == "rtstruct" and labels.array.shape == (4, ROWS, COLUMNS)
    assert np.array_equal(labels.array[2], _box(2, 3, 5, 7).astype(np.uint8))
    assert not np.delete(labels.array, 2, axis=0).any()
    assert labels.meta.header["classes"] == {"0": "background", "1": "GTV"}
    assert labels.meta.header["slice_files"][2] == str(ct.slices[2].path)


def test_rtstruct_inner_contour_is_a_hole_and_a_smaller_roi_stays_on_top(study):
    root, ct = study
    outer = [_mm(1, 1), _mm(1, 12), _mm(12, 12), _mm(12, 1)]
    inner = [_mm(5, 5), _mm(5, 8), _mm(8, 8), _mm(8, 5)]
    rt = write_rtstruct(
        root / "rt.dcm", ct, {"Body": [(0, outer), (0, inner)], "Cord": [(1, inner), (1, inner)]}
    )
    body = medio.read(rt).array
    assert body[0, 6, 6] == 0 and body[0, 2, 2] == 1  # the inner contour of one ROI cuts a hole
    rt2 = write_rtstruct(root / "rt2.dcm", ct, {"Body": [(0, outer)], "Cord": [(0, inner)]})
    both = medio.read(rt2).array
    assert both[0, 6, 6] == 2 and both[0, 2, 2] == 1  # painted largest first: the cord is not hidden


def test_rtstruct_naming_only_its_series_puts_each_contour_on_the_slice_at_its_height(study):
    root, ct = study
    square = [_mm(2, 3), _mm(2, 7), _mm(5, 7), _mm(5, 3)]
    rt = write_rtstruct(root / "rt.dcm", ct, {"GTV": [(3, square)]}, image_refs=False)
    labels = medio.read(rt).array
    assert labels.shape == (4, ROWS, COLUMNS) and labels[3].sum() == 4 * 5 and labels[:3].sum() == 0


def test_rtstruct_referencing_a_missing_slice_fails_naming_the_file(study):
    root, ct = study
    square = [_mm(2, 3), _mm(2, 7), _mm(5, 7), _mm(5, 3)]
    rt = write_rtstruct(root / "rt.dcm", ct, {"GTV": [(2, square)]}, missing_image_uid="1.2.3.4.5.6.7")
    with pytest.raises(MissingReference, match=r"1\.2\.3\.4\.5\.6\.7") as caught:
        medio.read(rt)
    assert isinstance(caught.value, KeyNotFound)
    _one_line_naming(caught.value, rt)
    assert medio.inspect(rt)["rois"][0]["name"] == "GTV"  # inspect still shows what it holds


# -- SR --------------------------------------------------------------------------------------------------


def test_sr_box_is_resolved_by_uid_to_the_image_it_was_drawn_on(study):
    root, ct = study
    sr = write_sr(root / "sr" / "report.dcm", ct.slices[1], box=(4.0, 3.0, 6.0, 5.0), series=ct)
    report = read_report(sr)
    assert report.regions[0]["box"] == [4.0, 3.0, 6.0, 5.0]
    assert report.regions[0]["file"] == str(ct.slices[1].path)
    assert report.measurements == [
        {"group": "nodule 1 / Nodule", "concept": "Diameter", "value": 12.5, "unit": "mm"}
    ]
    image = medio.read(sr)  # never the SR "as an image": the image it describes
    assert image.meta.path == str(ct.slices[1].path)
    assert int(image.array[0, 0]) == 1000 + 10 * 1 - 1024
    assert "DICOM SR" in image.meta.header["read_note"]
    assert image.meta.header["structured_report"]["regions"][0]["box"] == [4.0, 3.0, 6.0, 5.0]


def test_sr_scoord3d_box_is_projected_onto_the_evidence_slice_whose_plane_holds_it(study):
    root, ct = study
    sr = write_sr(root / "report3d.dcm", ct.slices[2], box=(4.0, 3.0, 6.0, 5.0), series=ct, in_3d=True)
    region = read_report(sr).regions[0]
    assert region["graphic_type"] == "POLYGON" and region["projected"] is True
    assert region["file"] == str(ct.slices[2].path) and region["box"] == [4.0, 3.0, 6.0, 5.0]
    assert medio.read(sr).meta.path == str(ct.slices[2].path)


def test_cli_render_of_an_sr_says_which_image_it_shows(study, tmp_path, capsys):
    import json

    from medio.__main__ import main

    root, ct = study
    sr = write_sr(root / "report.dcm", ct.slices[2], series=ct)
    assert main(["render", str(sr), str(tmp_path / "out.png")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["source"] == str(ct.slices[2].path) and "DICOM SR" in printed["note"]


def test_sr_pointing_at_a_seg_shows_the_slice_under_its_largest_segment(study):
    root, ct = study
    seg = write_seg(root / "seg.dcm", ct, [(1, 0, _box(0, 0, 1, 1)), (1, 2, _box(0, 0, 5, 5))])
    seg_uid = str(pydicom.dcmread(seg, stop_before_pixels=True).SOPInstanceUID)
    sr = write_sr(root / "report.dcm", None, series=ct, segmentation=Slice(seg, seg_uid, 0.0))
    image = medio.read(sr)
    assert image.meta.path == str(ct.slices[2].path)
    assert "largest part of the SEG" in image.meta.header["read_note"]


def test_inspect_shows_an_sr_s_measurements_boxes_and_referenced_image(study):
    root, ct = study
    sr = write_sr(root / "report.dcm", ct.slices[3], series=ct)
    info = medio.inspect(sr)
    assert info["format"] == "dicom_sr" and info["title"] == "Imaging Measurement Report"
    assert info["measurements"][0]["value"] == 12.5 and info["regions"][0]["graphic_type"] == "POLYLINE"
    assert info["image_to_render"] == str(ct.slices[3].path)
    assert "shape" not in info  # nothing suggests pixels


def test_sr_with_an_empty_content_tree_fails_as_corrupt_naming_the_file(study):
    root, ct = study
    sr = write_sr(root / "empty.dcm", ct.slices[0], empty=True, series=ct)
    with pytest.raises(CorruptFile, match="empty content tree") as caught:
        medio.read(sr)
    _one_line_naming(caught.value, sr)
    assert medio.inspect(sr)["error_type"] == "CorruptFile"


def test_sr_whose_image_is_not_in_the_tree_fails_with_missing_reference(tmp_path):
    elsewhere = write_ct_series(tmp_path / "other" / "ct", 1)
    sr = write_sr(tmp_path / "data" / "P" / "report.dcm", elsewhere.slices[0])
    with pytest.raises(MissingReference, match="1 measurement") as caught:
        medio.read(sr)
    _one_line_naming(caught.value, sr)


# -- detection -------------------------------------------------------------------------------------------


def test_derived_objects_are_told_apart_by_sop_class_whatever_the_file_name(study):
    root, ct = study
    names = {"dicom_seg": "A0001", "rtstruct": "B0001.IMA", "dicom_sr": "C0001.DCM"}
    write_seg(root / "x" / names["dicom_seg"], ct, [(1, 0, _box(0, 0, 1, 1))])
    write_rtstruct(root / "x" / names["rtstruct"], ct, {"GTV": [(0, [_mm(1, 1), _mm(1, 3), _mm(3, 3)])]})
    write_sr(root / "x" / names["dicom_sr"], ct.slices[0], series=ct)
    assert {kind: medio.inspect(root / "x" / name)["format"] for kind, name in names.items()} == {
        kind: kind for kind in names
    }
    assert medio.inspect(ct.slices[0].path)["format"] == "dicom"


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydicom's notes on the invalid values it reads
def test_damaged_derived_objects_raise_only_medio_errors(study):
    import random

    root, ct = study
    square = [_mm(2, 3), _mm(2, 7), _mm(5, 7), _mm(5, 3)]
    originals = [
        write_seg(root / "seg.dcm", ct, [(1, 1, _box(2, 3, 5, 7)), (2, 2, _box(0, 0, 1, 1))]),
        write_rtstruct(root / "rt.dcm", ct, {"GTV": [(2, square)]}),
        write_sr(root / "sr.dcm", ct.slices[1], series=ct),
    ]
    rng = random.Random(30)
    damaged = root / "damaged.dcm"
    for original in originals:
        data = original.read_bytes()
        for trial in range(10):
            blob = bytearray(data)
            if trial % 2:
                blob = blob[: rng.randrange(132, len(blob))]  # truncated after the preamble
            else:
                for _ in range(rng.randrange(1, 6)):
                    blob[rng.randrange(132, len(blob))] = rng.randrange(256)
            damaged.write_bytes(bytes(blob))
            try:
                medio.read(damaged)
            except MedioError as exc:
                assert "\n" not in str(exc) and str(damaged) in str(exc)
            info = medio.inspect(damaged)
            assert "error" not in info or info["error_type"] in {
                "CorruptFile",
                "MissingReference",
                "KeyNotFound",
                "UnsupportedFormat",
                "UnsupportedTransferSyntax",
                "ImageTooLarge",
            }

"""DICOM series folders: grouping by SeriesInstanceUID, sorting by position, mixed series."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import medio


def _write_series(folder, make_dicom, uid, n, *, base, shape=(6, 5), shuffle=True):
    order = list(range(n))
    if shuffle:
        order = order[::-1]  # file names in reverse spatial order: sorting must use the position
    for name_i, z in enumerate(order):
        pixels = np.full(shape, base + z, dtype=np.int16)
        make_dicom(
            folder / f"s{uid.replace('.', '')[-4:]}_{name_i:03d}.dcm",
            pixels,
            series_uid=uid,
            ImagePositionPatient=[0.0, 0.0, 2.5 * z],
            ImageOrientationPatient=[1, 0, 0, 0, 1, 0],
            PixelSpacing=[0.5, 0.7],
            InstanceNumber=name_i + 1,
            RescaleIntercept=-1024,
            RescaleSlope=1,
        )


def test_series_folder_is_sorted_by_position_and_rescaled(tmp_path, make_dicom):
    uid = "1.2.826.0.1.3680043.8.498.1"
    _write_series(tmp_path, make_dicom, uid, 5, base=1000)
    image = medio.read(tmp_path)
    assert image.array.shape == (5, 6, 5) and image.meta.axes == "ZYX"
    assert image.array[:, 0, 0].tolist() == [-24, -23, -22, -21, -20]  # base + z - 1024, ascending z
    assert image.meta.spacing == pytest.approx((2.5, 0.5, 0.7))
    assert image.meta.format == "dicom_series" and image.meta.keys == [uid]
    shown = medio.render(image, slice_index=4)
    assert shown.info["slice_index"] == 4 and shown.info["method"].startswith("ct_preset")


def test_mixed_series_are_split_and_the_largest_read_by_default(tmp_path, make_dicom, caplog):
    big, small = "1.2.826.0.1.3680043.8.498.10", "1.2.826.0.1.3680043.8.498.20"
    _write_series(tmp_path, make_dicom, big, 4, base=2000)
    _write_series(tmp_path, make_dicom, small, 2, base=3000, shape=(3, 3))
    (tmp_path / "notes.txt").write_text("not dicom")
    with caplog.at_level(logging.INFO, logger="medio"):
        image = medio.read(tmp_path)
    assert image.array.shape == (4, 6, 5)
    assert "2 series" in caplog.text
    assert set(image.meta.keys or []) == {big, small}
    other = medio.read(tmp_path, series=small)
    assert other.array.shape == (2, 3, 3) and other.array[0, 0, 0] == 3000 - 1024
    assert medio.read(tmp_path, series=1).array.shape == (2, 3, 3)
    with pytest.raises(medio.KeyNotFound, match="not found"):
        medio.read(tmp_path, series="1.2.3")


def test_folder_without_dicom_is_unsupported(tmp_path):
    (tmp_path / "a.txt").write_text("hello")
    with pytest.raises(medio.UnsupportedFormat, match="no DICOM image files"):
        medio.read(tmp_path)


def test_inspect_lists_the_series_of_a_folder(tmp_path, make_dicom):
    _write_series(tmp_path, make_dicom, "1.2.3.4", 3, base=0)
    summary = medio.inspect(tmp_path)
    assert summary["format"] == "dicom_series", summary
    assert summary.get("series") == [{"key": "1.2.3.4", "description": None, "n_files": 3}]

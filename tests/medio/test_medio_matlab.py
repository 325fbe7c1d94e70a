"""MATLAB .mat: v5 via scipy.io and v7.3 (HDF5 with the MATLAB userblock) via h5py."""

from __future__ import annotations

import numpy as np
import pytest

import medio


def _write_v73(path, **variables):
    """Write what MATLAB's `save -v7.3` writes: a 512-byte text userblock, then HDF5 with reversed axes."""
    import h5py

    with h5py.File(path, "w", userblock_size=512) as h5:
        for name, value in variables.items():
            h5.create_dataset(name, data=np.asarray(value).T)  # column-major storage shows reversed axes
            h5[name].attrs["MATLAB_class"] = np.bytes_("double")
    header = (
        b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024 HDF5 schema 1.00 ."
    )
    with open(path, "r+b") as fh:
        fh.write(header.ljust(116, b" ") + b"\x00" * 8 + b"\x00\x02IM")


def test_v5_volume_rows_cols_slices_becomes_zyx(tmp_path):
    import scipy.io

    matlab_vol = np.random.default_rng(0).normal(size=(6, 5, 4))  # rows × cols × slices
    path = tmp_path / "v5.mat"
    scipy.io.savemat(path, {"vol": matlab_vol, "label": np.array([[1.0]]), "s": {"img": np.eye(4)}})
    image = medio.read(path)
    assert image.meta.header["key"] is None and image.meta.header["mat_version"] == "5"
    assert image.array.shape == (4, 6, 5) and image.meta.axes == "ZYX"
    np.testing.assert_allclose(image.array[2], matlab_vol[:, :, 2])
    assert "vol" in (image.meta.keys or [])
    np.testing.assert_array_equal(medio.read(path, key="s.img").array, np.eye(4))
    assert medio.render(image).info["slice_index"] == 2


def test_v73_is_read_with_h5py_and_axes_transposed_back(tmp_path):
    matlab_img = np.arange(12, dtype=np.float64).reshape(3, 4)  # 3 rows × 4 cols in MATLAB
    matlab_vol = np.arange(2 * 3 * 5, dtype=np.float64).reshape(2, 3, 5)
    path = tmp_path / "v73.mat"
    _write_v73(path, img=matlab_img, vol=matlab_vol)
    with open(path, "rb") as fh:
        assert fh.read(19) == b"MATLAB 7.3 MAT-file"
    image = medio.read(path, key="img")
    assert image.meta.header["mat_version"] == "7.3"
    np.testing.assert_array_equal(image.array, matlab_img)
    vol = medio.read(path, key="vol")
    assert vol.array.shape == (5, 2, 3)  # slices first
    np.testing.assert_array_equal(vol.array[4], matlab_vol[:, :, 4])
    shown = medio.render(image)
    assert shown.pixels.shape == (3, 4) and shown.info["size"] == [4, 3]
    summary = medio.inspect(path)
    assert summary["mat_version"] == "7.3" and summary["variables"]["img"]["shape"] == [3, 4]


def test_unknown_variable_lists_the_variables(tmp_path):
    import scipy.io

    path = tmp_path / "v5.mat"
    scipy.io.savemat(path, {"a": np.ones((2, 2))})
    with pytest.raises(medio.KeyNotFound, match=r"variables: \['a'\]"):
        medio.read(path, key="b")

"""HDF5 datasets by path, via h5py."""

from __future__ import annotations

import numpy as np
import pytest

import medio


def _write(path):
    import h5py

    vol = np.arange(4 * 6 * 5, dtype=np.int16).reshape(4, 6, 5)
    with h5py.File(path, "w") as h5:
        h5.create_dataset("meta/labels", data=np.array([1, 2, 3]))
        h5.create_dataset("scans/ct", data=vol)
        h5["scans/ct"].attrs["modality"] = "CT"
    return vol


def test_hdf5_dataset_by_path_and_index(tmp_path):
    path = tmp_path / "data.h5"
    vol = _write(path)
    image = medio.read(path, key="scans/ct")
    np.testing.assert_array_equal(image.array, vol)
    assert image.meta.header["attrs"] == {"modality": "CT"}
    assert image.meta.keys == ["meta/labels", "scans/ct"]
    np.testing.assert_array_equal(medio.read(path, key="scans/ct", index=3).array, vol[3])
    assert medio.read(path).meta.header["key"] == "scans/ct"  # first dataset with ≥ 2 dims
    shown = medio.render(image, slice_index=0, axis=1)
    assert shown.pixels.shape == (4, 5) and shown.info["axis"] == 1


def test_hdf5_missing_dataset_and_group_are_clear(tmp_path):
    path = tmp_path / "data.hdf5"
    _write(path)
    with pytest.raises(medio.KeyNotFound, match="'scans/mr' not found"):
        medio.read(path, key="scans/mr")
    with pytest.raises(medio.UnsupportedFormat, match="is a group"):
        medio.read(path, key="scans")


def test_inspect_hdf5_lists_the_tree(tmp_path):
    path = tmp_path / "data.h5"
    _write(path)
    summary = medio.inspect(path)
    assert summary["datasets"]["scans/ct"] == {"shape": [4, 6, 5], "dtype": "int16"}

"""NumPy .npy and .npz: keys, indexes, record arrays."""

from __future__ import annotations

import numpy as np
import pytest

import medio


def test_npy_volume_reads_and_renders_the_middle_slice(tmp_path):
    vol = np.arange(5 * 4 * 3, dtype=np.float32).reshape(5, 4, 3)
    path = tmp_path / "vol.npy"
    np.save(path, vol)
    image = medio.read(path)
    assert image.meta.axes == "ZYX" and image.array.shape == (5, 4, 3)
    shown = medio.render(image)
    assert shown.info["slice_index"] == 2 and shown.info["method"] == "percentile_0.5_99.5"
    np.testing.assert_array_equal(medio.read(path, index=4).array, vol[4])


def test_npz_by_key_and_by_index(tmp_path):
    images = np.random.default_rng(0).integers(0, 255, (3, 6, 5), dtype=np.uint8)
    path = tmp_path / "data.npz"
    np.savez(path, labels=np.array([0, 1, 1]), images=images)
    image = medio.read(path, key="images", index=1)
    np.testing.assert_array_equal(image.array, images[1])
    assert set(image.meta.keys or []) == {"labels", "images"}
    assert medio.read(path).meta.header["key"] == "images"  # default: first member with ≥ 2 dims
    with pytest.raises(medio.KeyNotFound, match="not in archive"):
        medio.read(path, key="masks")
    with pytest.raises(medio.KeyNotFound, match="index 7 out of range"):
        medio.read(path, key="images", index=7)
    np.testing.assert_array_equal(medio.render(image).pixels, images[1])


def test_npz_record_array_by_index_and_field(tmp_path):
    dtype = np.dtype([("image", np.uint16, (4, 4)), ("label", np.int64)])
    records = np.zeros(2, dtype=dtype)
    records[1]["image"] = np.arange(16).reshape(4, 4)
    path = tmp_path / "records.npz"
    np.savez(path, samples=records)
    image = medio.read(path, key="image", index=1)
    np.testing.assert_array_equal(image.array, np.arange(16).reshape(4, 4))


def test_pickled_object_array_is_refused(tmp_path):
    path = tmp_path / "obj.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(medio.UnsupportedFormat, match="pickle"):
        medio.read(path)


def test_inspect_npz_lists_members_without_loading(tmp_path):
    path = tmp_path / "data.npz"
    np.savez_compressed(path, a=np.zeros((2, 3)), b=np.ones(4, np.int8))
    summary = medio.inspect(path)
    assert summary["members"] == {
        "a": {"shape": [2, 3], "dtype": "float64"},
        "b": {"shape": [4], "dtype": "int8"},
    }


def test_arrays_above_the_memory_cap_are_refused_unless_indexed(tmp_path, monkeypatch):
    import medio._axes

    path = tmp_path / "big.npy"
    np.save(path, np.zeros((10, 8, 8), np.float32))
    monkeypatch.setattr(medio._axes, "MAX_BYTES", 1000)
    with pytest.raises(medio.ImageTooLarge, match="select a part"):
        medio.read(path)
    assert medio.read(path, index=3).array.shape == (8, 8)  # one item is 256 bytes

"""MATLAB files: every variable listed with its path and shape (structs, cells, v7.3 references), and the
image variable chosen by evidence, never an axis vector."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
import scipy.io

import medio
from medio.matlab import MatVar, choose_image


def _v73(path: Path) -> h5py.File:
    """An HDF5 file with MATLAB's 512-byte userblock (the text MATLAB writes before the HDF5 data)."""
    h5 = h5py.File(path, "w", userblock_size=512)
    return h5


def _mark_v73(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.write(
            b"MATLAB 7.3 MAT-file, Platform: GLNXA64, HDF5 schema 1.00 .".ljust(116)
            + b"\x00" * 8
            + b"\x00\x02IM"
        )


def _dataset(group: h5py.Group, name: str, value: np.ndarray, cls: str = "double") -> h5py.Dataset:
    dset = group.create_dataset(name, data=np.asarray(value).T)  # column-major storage: axes reversed
    dset.attrs["MATLAB_class"] = np.bytes_(cls)
    return dset


def test_v5_axis_vector_beside_the_volume_is_not_the_image(tmp_path: Path) -> None:
    vol = np.random.default_rng(0).random((64, 64, 5))
    path = tmp_path / "scan.mat"
    # The axis vector comes first and is the longest single dimension: the old rule's trap.
    scipy.io.savemat(path, {"x": np.arange(64.0)[None, :], "t": np.arange(500.0)[None, :], "scan": vol})
    image = medio.read(path)
    assert image.meta.header["variable"] == "scan"
    assert image.array.shape == (5, 64, 64)
    summary = medio.inspect(path)
    assert summary["variables"]["x"]["shape"] == [1, 64]
    assert summary["image_variable"]["path"] == "scan"


def test_v5_structs_and_cells_are_walked_and_readable_by_path(tmp_path: Path) -> None:
    img = np.arange(100.0).reshape(10, 10)
    cells = np.empty((1, 2), dtype=object)
    cells[0, 0] = np.ones((3, 1))
    cells[0, 1] = np.full((12, 9), 7.0)
    path = tmp_path / "nested.mat"
    scipy.io.savemat(path, {"s": {"meta": "scan 1", "image": img, "c": cells}})
    variables = medio.inspect(path)["variables"]
    assert variables["s"]["class"] == "struct"
    assert variables["s.image"]["shape"] == [10, 10]
    assert variables["s.c"]["class"] == "cell"
    assert variables["s.c{2}"]["shape"] == [12, 9]
    assert variables["s.meta"]["class"] == "char"
    np.testing.assert_array_equal(medio.read(path, key="s.c{2}").array, cells[0, 1])
    assert medio.read(path).meta.header["variable"] == "s.image"  # the name says image
    with pytest.raises(medio.KeyNotFound, match="field 'nope'"):
        medio.read(path, key="s.nope")


def test_v73_cells_follow_refs_and_structs_are_groups(tmp_path: Path) -> None:
    path = tmp_path / "v73.mat"
    with _v73(path) as h5:
        refs = h5.create_group("#refs#")
        a = _dataset(refs, "a", np.full((20, 30), 3.0))
        b = _dataset(refs, "b", np.arange(40.0)[None, :])
        cell = h5.create_dataset("frames", data=np.array([[a.ref], [b.ref]], dtype=h5py.ref_dtype))
        cell.attrs["MATLAB_class"] = np.bytes_("cell")
        s = h5.create_group("info")
        s.attrs["MATLAB_class"] = np.bytes_("struct")
        _dataset(s, "axis", np.arange(30.0)[None, :])
        _dataset(s, "mask", np.zeros((20, 30), np.uint8), "uint8")
    _mark_v73(path)
    summary = medio.inspect(path)
    assert summary["mat_version"] == "7.3"
    assert summary["variables"]["frames"]["class"] == "cell"
    assert summary["variables"]["frames{1}"]["shape"] == [20, 30]
    assert summary["variables"]["frames{2}"]["shape"] == [1, 40]
    assert summary["variables"]["info.mask"]["class"] == "uint8"
    assert not any(k.startswith("#") for k in summary["variables"])
    image = medio.read(path)
    # Same size as the mask; "frames{1}" is not a mask name, so it wins over "info.mask".
    assert image.meta.header["variable"] == "frames{1}"
    np.testing.assert_array_equal(image.array, np.full((20, 30), 3.0))
    assert medio.read(path, key="info.mask").array.dtype == np.uint8


def test_a_file_of_vectors_only_is_not_an_image(tmp_path: Path) -> None:
    path = tmp_path / "axes.mat"
    scipy.io.savemat(path, {"x": np.arange(64.0)[None, :], "y": np.arange(64.0)[:, None], "k": np.eye(3)})
    with pytest.raises(medio.NotAnImage, match=r"axes\.mat: no image-like variable.*x \(1x64 double\)"):
        medio.read(path)
    assert medio.inspect(path)["image_variable"]["path"] is None


def test_render_refuses_a_vector_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "vec.mat"
    scipy.io.savemat(path, {"x": np.arange(64.0)[None, :], "img": np.ones((8, 8))})
    row = medio.read(path, key="x")  # a 1×64 row is still a 2-D array; its squeezed form is a vector
    with pytest.raises(medio.NotAnImage, match="not an image"):
        medio.render(row.array.ravel())


def test_choice_prefers_image_names_only_among_comparable_sizes() -> None:
    big = MatVar("raw", (512, 512), "double")
    small = MatVar("img", (64, 64), "double")
    assert choose_image([small, big])[0] == big
    same = MatVar("label", (512, 512), "uint8")
    assert choose_image([same, big])[0] == big

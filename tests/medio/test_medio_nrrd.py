"""bzip2 NRRD and detached NRRD headers: valid files SimpleITK's NrrdIO cannot decode, read through pynrrd."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import medio
from medio.itk import needs_pynrrd

nrrd = pytest.importorskip("nrrd")


def _volume() -> np.ndarray:
    return np.arange(4 * 5 * 6, dtype=np.int16).reshape(4, 5, 6)


def test_bzip2_nrrd_reads_with_spacing_in_array_order(tmp_path: Path) -> None:
    path = tmp_path / "ball.nrrd"
    header = {
        "encoding": "bzip2",
        "space": "left-posterior-superior",
        "space directions": np.diag([0.5, 0.7, 2.0]),
    }
    nrrd.write(str(path), _volume(), header, index_order="C")
    assert needs_pynrrd(path)
    image = medio.read(path)
    assert np.array_equal(image.array, _volume())
    assert image.meta.axes == "ZYX"
    assert image.meta.spacing == pytest.approx((2.0, 0.7, 0.5))
    assert image.meta.header["reader"] == "pynrrd"
    assert medio.inspect(path)["shape"] == [4, 5, 6]


@pytest.mark.parametrize("encoding", ["gzip", "bzip2", "raw"])
def test_detached_header_reads_its_data_file(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "scan.nhdr"
    nrrd.write(str(path), _volume(), {"encoding": encoding}, detached_header=True, index_order="C")
    assert len(list(tmp_path.iterdir())) == 2  # the header and its data file
    assert np.array_equal(medio.read(path).array, _volume())


def test_gzip_nrrd_stays_with_simpleitk(tmp_path: Path) -> None:
    path = tmp_path / "plain.nrrd"
    nrrd.write(str(path), _volume(), {"encoding": "gzip"}, index_order="C")
    assert not needs_pynrrd(path)
    assert medio.read(path).meta.header.get("reader") != "pynrrd"


def test_missing_detached_data_file_is_one_clean_error(tmp_path: Path) -> None:
    path = tmp_path / "gone.nhdr"
    nrrd.write(str(path), _volume(), {"encoding": "bzip2"}, detached_header=True, index_order="C")
    (tmp_path / "gone.raw.bz2").unlink()
    with pytest.raises(medio.MedioError, match=r"gone\.nhdr"):
        medio.read(path)

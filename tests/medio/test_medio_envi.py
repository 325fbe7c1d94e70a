"""ENVI cubes (.hdr + .dat/.img): found from either file, all interleaves and byte orders, bands by rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import medio

pytest.importorskip("spectral")

LINES, SAMPLES, BANDS = 12, 16, 6


def _cube(seed: int = 0) -> np.ndarray:
    """(lines, samples, bands) float32; band 4 varies most."""
    rng = np.random.default_rng(seed)
    cube = rng.random((LINES, SAMPLES, BANDS)).astype(np.float32)
    cube[..., 4] *= 50.0
    return cube


def _write(
    folder: Path,
    cube: np.ndarray,
    *,
    interleave: str = "bsq",
    big_endian: bool = False,
    offset: int = 0,
    data_name: str = "scene.dat",
    header_name: str = "scene.hdr",
    extra: str = "",
    drop: str = "",
) -> Path:
    order = {"bsq": (2, 0, 1), "bil": (0, 2, 1), "bip": (0, 1, 2)}[interleave]
    raw = np.ascontiguousarray(cube.transpose(order)).astype(">f4" if big_endian else "<f4").tobytes()
    (folder / data_name).write_bytes(b"\x00" * offset + raw)
    fields = {
        "samples": SAMPLES,
        "lines": LINES,
        "bands": cube.shape[2],
        "header offset": offset,
        "file type": "ENVI Standard",
        "data type": 4,
        "interleave": interleave,
        "byte order": int(big_endian),
    }
    text = "ENVI\n" + "".join(f"{k} = {v}\n" for k, v in fields.items() if k != drop) + extra
    (folder / header_name).write_text(text)
    return folder / data_name


@pytest.mark.parametrize(
    ("interleave", "big_endian", "offset"), [("bsq", False, 0), ("bil", True, 128), ("bip", False, 7)]
)
def test_every_interleave_reads_the_same_band(
    tmp_path: Path, interleave: str, big_endian: bool, offset: int
) -> None:
    cube = _cube()
    data = _write(tmp_path, cube, interleave=interleave, big_endian=big_endian, offset=offset)
    band = medio.read(data, key="2")
    np.testing.assert_array_equal(band.array, cube[..., 2])
    info = medio.inspect(data)
    assert (info["format"], info["interleave"], info["bands"]) == ("envi", interleave, BANDS)
    assert (info["byte_order"], info["header_offset"]) == (int(big_endian), offset)


def test_pair_is_found_from_the_header_and_from_upper_case_names(tmp_path: Path) -> None:
    _write(tmp_path, _cube(), data_name="CUBE.IMG", header_name="CUBE.HDR")
    assert medio.inspect(tmp_path / "CUBE.HDR")["data_file"] == "CUBE.IMG"
    assert medio.inspect(tmp_path / "CUBE.IMG")["header_file"] == "CUBE.HDR"


def test_default_bands_win_and_give_rgb(tmp_path: Path) -> None:
    data = _write(tmp_path, _cube(), extra="default bands = {3, 2, 1}\n")
    image = medio.read(data)
    assert image.meta.header["bands_shown"] == [2, 1, 0]
    assert image.meta.header["band_rule"] == "default bands"
    assert image.array.shape == (LINES, SAMPLES, 3) and image.array.dtype == np.uint8


def test_wavelengths_in_micrometres_pick_the_visible_rgb_bands(tmp_path: Path) -> None:
    wavelengths = "{0.45, 0.46, 0.55, 0.64, 0.80, 0.90}"
    data = _write(tmp_path, _cube(), extra=f"wavelength units = Micrometers\nwavelength = {wavelengths}\n")
    image = medio.read(data)
    assert image.meta.header["band_rule"] == "nearest 640/550/460 nm"
    assert image.meta.header["bands_shown"] == [3, 2, 1]
    assert medio.inspect(data)["wavelength_nm"]["first"] == pytest.approx(450.0)


def test_without_hints_the_band_of_largest_variance_is_shown(tmp_path: Path) -> None:
    data = _write(tmp_path, _cube(), extra="wavelength = {1000, 1100, 1200, 1300, 1400, 1500}\n")
    image = medio.read(data)
    assert image.meta.header["band_rule"] == "largest variance"
    assert image.meta.header["bands_shown"] == [4]
    np.testing.assert_array_equal(image.array, _cube()[..., 4])
    assert medio.render(image).pixels.shape == (LINES, SAMPLES)


def test_header_without_bands_is_corrupt(tmp_path: Path) -> None:
    data = _write(tmp_path, _cube(), drop="bands")
    with pytest.raises(medio.CorruptFile, match=r"scene\.dat: ENVI header scene\.hdr lacks 'bands'"):
        medio.read(data)
    assert medio.inspect(tmp_path / "scene.hdr")["error_type"] == "CorruptFile"


def test_data_file_shorter_than_the_header_says_is_corrupt(tmp_path: Path) -> None:
    data = _write(tmp_path, _cube())
    data.write_bytes(data.read_bytes()[:1000])
    with pytest.raises(medio.CorruptFile, match=r"scene\.dat has 1000 bytes, the header needs 4608"):
        medio.read(data)


def test_header_without_data_file_is_corrupt(tmp_path: Path) -> None:
    data = _write(tmp_path, _cube())
    data.unlink()
    with pytest.raises(medio.CorruptFile, match=r"scene\.hdr: ENVI header scene\.hdr has no data file"):
        medio.read(tmp_path / "scene.hdr")


def test_data_file_without_extension_is_found_by_its_header(tmp_path: Path) -> None:
    cube = _cube()
    data = _write(tmp_path, cube, data_name="scene", header_name="scene.hdr")
    np.testing.assert_array_equal(medio.read(data, key="1").array, cube[..., 1])
    assert medio.inspect(tmp_path / "scene.hdr")["data_file"] == "scene"

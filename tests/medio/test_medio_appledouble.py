"""macOS AppleDouble stubs (._name, __MACOSX/) are recognised by their magic and read as their sibling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tifffile

import medio

# RFC 1740 header: magic 0x00051607, version 0x00020000, 16 filler bytes, zero entries.
STUB = b"\x00\x05\x16\x07\x00\x02\x00\x00" + b"Mac OS X        " + b"\x00\x00" + b"\x00" * 64


def _tiff(path: Path) -> np.ndarray:
    pixels = np.arange(20 * 30, dtype=np.uint16).reshape(20, 30)
    path.parent.mkdir(parents=True, exist_ok=True)
    tifffile.imwrite(path, pixels)
    return pixels


def test_stub_beside_its_image_reads_the_image_and_says_so(tmp_path: Path) -> None:
    pixels = _tiff(tmp_path / "slide 1.TIFF")
    (tmp_path / "._slide 1.TIFF").write_bytes(STUB)
    image = medio.read(tmp_path / "._slide 1.TIFF")
    np.testing.assert_array_equal(image.array, pixels)
    assert image.meta.path == str(tmp_path / "slide 1.TIFF")
    assert image.meta.header["appledouble"]["resolved_to"] == str(tmp_path / "slide 1.TIFF")
    info = medio.inspect(tmp_path / "._slide 1.TIFF")
    assert info["format"] == "appledouble"
    assert info["resolved"]["format"] == "tiff" and info["resolved"]["shape"] == [20, 30]
    assert "AppleDouble" in info["appledouble"]["note"]


def test_stub_under_macosx_resolves_outside_it(tmp_path: Path) -> None:
    pixels = _tiff(tmp_path / "data" / "case1" / "img.tif")
    stub = tmp_path / "data" / "__MACOSX" / "case1" / "._img.tif"
    stub.parent.mkdir(parents=True)
    stub.write_bytes(STUB)
    np.testing.assert_array_equal(medio.read(stub).array, pixels)


def test_stub_without_sibling_is_a_clear_error(tmp_path: Path) -> None:
    stub = tmp_path / "._gone.tiff"
    stub.write_bytes(STUB)
    with pytest.raises(medio.UnsupportedFormat, match=r"\._gone\.tiff: macOS AppleDouble stub .* missing"):
        medio.read(stub)
    assert medio.inspect(stub)["error_type"] == "UnsupportedFormat"


def test_a_dot_underscore_name_without_the_magic_is_read_as_what_it_is(tmp_path: Path) -> None:
    pixels = _tiff(tmp_path / "._real.tiff")
    np.testing.assert_array_equal(medio.read(tmp_path / "._real.tiff").array, pixels)

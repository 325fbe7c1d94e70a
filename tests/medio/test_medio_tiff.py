"""TIFF via tifffile: 16-bit and multi-page stacks, written by the test."""

from __future__ import annotations

import numpy as np
import pytest

import medio


def test_multipage_16bit_tiff_is_a_zhw_stack(tmp_path):
    import tifffile

    stack = (np.arange(3 * 8 * 6, dtype=np.uint16).reshape(3, 8, 6) * 300).astype(np.uint16)
    path = tmp_path / "stack.tif"
    tifffile.imwrite(path, stack, photometric="minisblack")
    image = medio.read(path)
    assert image.array.dtype == np.uint16 and image.array.shape == (3, 8, 6) and image.meta.axes == "ZYX"
    np.testing.assert_array_equal(image.array, stack)
    page = medio.read(path, index=2)
    np.testing.assert_array_equal(page.array, stack[2])
    shown = medio.render(image)
    assert shown.info["slice_index"] == 1 and shown.info["method"] == "minmax"
    # 16-bit data are scaled, never truncated: the slice's max maps to 255, not to value % 256.
    assert shown.pixels.max() == 255 and shown.pixels.min() == 0


def test_rgb_tiff_stays_rgb(tmp_path):
    import tifffile

    rgb = np.zeros((5, 7, 3), np.uint8)
    rgb[..., 1] = 200
    path = tmp_path / "rgb.tiff"
    tifffile.imwrite(path, rgb, photometric="rgb")
    image = medio.read(path)
    assert image.meta.axes == "YXC"
    assert medio.render(image).pixels[0, 0].tolist() == [0, 200, 0]


def test_three_page_grey_stack_is_not_mistaken_for_colour(tmp_path):
    import tifffile

    path = tmp_path / "three.tif"
    tifffile.imwrite(path, np.zeros((3, 4, 4), np.uint16), photometric="minisblack")
    image = medio.read(path)
    assert image.meta.axes == "ZYX" and image.array.shape == (3, 4, 4)


def test_planar_rgb_tiff_moves_samples_last(tmp_path):
    import tifffile

    planar = np.zeros((3, 4, 5), np.uint8)
    planar[0] = 255
    path = tmp_path / "planar.tif"
    tifffile.imwrite(path, planar, photometric="rgb", planarconfig="separate")
    image = medio.read(path)
    assert image.array.shape == (4, 5, 3) and image.meta.axes == "YXC"
    assert image.array[0, 0].tolist() == [255, 0, 0]


def test_truncated_tiff_is_corrupt(tmp_path):
    import tifffile

    path = tmp_path / "cut.tif"
    tifffile.imwrite(path, np.ones((64, 64), np.uint16))
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(medio.MedioError) as err:
        medio.read(path)
    assert "cut.tif" in str(err.value)

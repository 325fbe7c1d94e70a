"""Pillow formats: 16-bit PNG, JPEG, BMP, PGM, GIF, and the decompression-bomb limit."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import medio


def test_16bit_png_stays_16bit_and_is_scaled_not_truncated(tmp_path):
    values = np.array([[0, 1000], [30000, 65535]], dtype=np.uint16)
    path = tmp_path / "deep.png"
    Image.fromarray(values).save(path)
    image = medio.read(path)
    assert image.array.dtype == np.uint16
    np.testing.assert_array_equal(image.array, values)
    shown = medio.render(image)
    assert shown.info["method"] == "minmax"
    assert shown.pixels.tolist() == [[0, 4], [117, 255]]


@pytest.mark.parametrize(("suffix", "mode"), [(".jpg", "RGB"), (".bmp", "RGB"), (".pgm", "L"), (".gif", "L")])
def test_common_bitmaps_read_and_render(tmp_path, suffix, mode):
    arr = np.zeros((12, 10, 3), np.uint8) if mode == "RGB" else np.zeros((12, 10), np.uint8)
    arr[2:6] = 200
    path = tmp_path / f"img{suffix}"
    Image.fromarray(arr).save(path)
    image = medio.read(path)
    assert image.array.shape == arr.shape
    assert image.meta.axes == ("YXC" if mode == "RGB" else "YX")
    shown = medio.render(image)
    assert shown.pixels.shape == arr.shape and shown.info["size"] == [10, 12]
    assert abs(int(shown.pixels[3, 3].ravel()[0]) - 200) <= 3  # 8-bit data pass through (JPEG loss aside)


def test_uint8_grey_png_passes_through_unchanged(tmp_path):
    arr = np.random.default_rng(1).integers(0, 256, (9, 7), dtype=np.uint8)
    path = tmp_path / "grey.png"
    Image.fromarray(arr).save(path)
    shown = medio.render(medio.read(path))
    assert shown.info["method"] == "passthrough_uint8"
    np.testing.assert_array_equal(shown.pixels, arr)


def test_decompression_bomb_png_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "bomb.png"
    Image.fromarray(np.zeros((64, 64), np.uint8)).save(path)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    with pytest.raises(medio.ImageTooLarge) as err:
        medio.read(path)
    assert "bomb.png" in str(err.value) and "decompression-bomb" in err.value.reason
    # Just above the limit (Pillow only warns there) is refused too.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 64 * 64 - 1)
    with pytest.raises(medio.ImageTooLarge):
        medio.read(path)


def test_animated_gif_frame_is_selectable(tmp_path):
    frames = [Image.fromarray(np.full((4, 4), v, np.uint8)) for v in (10, 120, 240)]
    path = tmp_path / "anim.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:])
    image = medio.read(path, frame=2)
    assert image.meta.n_frames == 3 and image.meta.frame_index == 2
    assert int(image.array.mean()) == pytest.approx(240, abs=2)


def test_truncated_png_is_corrupt(tmp_path):
    path = tmp_path / "cut.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64), dtype=np.uint8)).save(path)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(medio.CorruptFile) as err:
        medio.read(path)
    assert "cut.png" in str(err.value)

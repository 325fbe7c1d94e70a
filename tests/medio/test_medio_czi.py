"""Zeiss CZI: scenes, channels and planes read one at a time; brightfield shown as RGB; damage is one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import medio
from testbed.synth.write_czi import write_czi

pytest.importorskip("aicspylibczi")


def _fluorescence(tmp_path: Path) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(0)
    stack = rng.integers(0, 4000, (2, 2, 3, 32, 40), dtype=np.uint16)  # S, C, Z, Y, X
    # Plane z=2 of scene 0 is the only one with structure (sharp edges); the others are flat.
    stack[0, :, :2] = 1000
    stack[0, :, 2, :, ::2] = 0
    path = write_czi(
        tmp_path / "cd31.czi",
        stack,
        axes="SCZYX",
        pixel_type="Gray16",
        channel_names=["DAPI", "CD31"],
        scaling_um=(0.5, 0.5, 2.0),
    )
    return path, stack


def test_inspect_lists_scenes_channels_planes_without_pixels(tmp_path: Path) -> None:
    path, _ = _fluorescence(tmp_path)
    info = medio.inspect(path)
    assert info["format"] == "czi"
    assert info["dims"] == {"S": 2, "C": 2, "Z": 3}
    assert info["channels"] == ["DAPI", "CD31"]
    assert info["pixel_type"] == "gray16"
    assert len(info["scenes"]) == 2 and info["scenes"][0][2:] == [40, 32]
    assert info["scaling_um"]["X"] == pytest.approx(0.5)


def test_one_channel_plane_scene_is_read_exactly(tmp_path: Path) -> None:
    path, stack = _fluorescence(tmp_path)
    image = medio.read(path, series=1, key="CD31", index=1)
    np.testing.assert_array_equal(image.array, stack[1, 1, 1])
    assert image.meta.spacing == pytest.approx((0.0005, 0.0005))
    with pytest.raises(medio.KeyNotFound, match="channel 'GFP' not found"):
        medio.read(path, key="GFP")
    with pytest.raises(medio.KeyNotFound, match="scene 5 out of range"):
        medio.read(path, series=5)


def test_default_view_is_the_sharpest_plane_as_a_channel_composite(tmp_path: Path) -> None:
    path, _ = _fluorescence(tmp_path)
    image = medio.read(path)
    assert image.meta.header["z"] == 2 and image.meta.header["z_rule"] == "sharpest"
    assert image.array.shape == (32, 40, 3) and image.array.dtype == np.uint8
    assert medio.render(image).pixels.shape == (32, 40, 3)


def test_brightfield_tiles_become_one_rgb_scene(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    slide = rng.integers(0, 255, (2, 40, 56, 3), dtype=np.uint8)
    slide[1, :, :, 0] = 255  # scene 2 is red
    path = write_czi(tmp_path / "HE.CZI", slide, axes="SYX", pixel_type="Bgr24", tile=16)
    assert medio.inspect(path)["mosaic"] is True
    first = medio.read(path)
    np.testing.assert_array_equal(first.array, slide[0])
    second = medio.read(path, series=1)
    assert (second.array[..., 0] == 255).all() and second.meta.photometric == "RGB"


def test_large_scene_is_composed_at_a_reduced_scale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import medio.czi

    path = write_czi(tmp_path / "wsi.czi", np.zeros((1, 64, 64, 3), np.uint8), axes="SYX", pixel_type="Bgr24")
    monkeypatch.setattr(medio.czi, "MAX_PIXELS", 32 * 32)
    image = medio.read(path)
    assert image.array.shape[:2] == (32, 32) and image.meta.header["scale_factor"] == pytest.approx(0.5)


def test_truncated_czi_is_a_corrupt_file_naming_it(tmp_path: Path) -> None:
    path, _ = _fluorescence(tmp_path)
    cut = tmp_path / "cut.czi"
    cut.write_bytes(path.read_bytes()[:3000])
    with pytest.raises(medio.CorruptFile, match=r"cut\.czi: "):
        medio.read(cut)
    assert medio.inspect(cut)["error_type"] == "CorruptFile"


def test_czi_with_wrong_magic_is_refused(tmp_path: Path) -> None:
    path, _ = _fluorescence(tmp_path)
    bad = tmp_path / "bad.czi"
    bad.write_bytes(b"NOTZISRAW!" + path.read_bytes()[10:])
    with pytest.raises(medio.UnsupportedFormat, match=r"bad\.czi: not a CZI file"):
        medio.read(bad)


def test_scenes_that_overlap_on_the_slide_are_still_read_apart(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    planes = rng.integers(0, 255, (2, 20, 24), dtype=np.uint8)
    path = write_czi(tmp_path / "overlap.czi", planes, axes="SYX", scene_gap=-24)  # both scenes at x = 0
    np.testing.assert_array_equal(medio.read(path, series=0).array, planes[0])
    np.testing.assert_array_equal(medio.read(path, series=1).array, planes[1])

"""Rendering conventions on in-memory images (no files)."""

from __future__ import annotations

import numpy as np
import pytest

import medio
from medio import MedImage, Meta


def _image(arr, **meta) -> MedImage:
    from medio._axes import guess_axes

    meta.setdefault("axes", guess_axes(arr.shape, arr.dtype))
    return MedImage(np.asarray(arr), Meta(format="test", path="mem", **meta))


def test_constant_image_renders_to_zeros_without_warnings():
    with np.errstate(all="raise"):
        for arr in (
            np.full((4, 4), 7, np.int16),
            np.full((4, 4), 2.5, np.float32),
            np.full((3, 4, 4), 9, np.uint16),
        ):
            shown = medio.render(_image(arr))
            assert shown.pixels.dtype == np.uint8 and not shown.pixels.any()


def test_nan_pixels_become_black_and_do_not_poison_the_scale():
    arr = np.array([[0.0, 1.0], [np.nan, 2.0]], dtype=np.float32)
    shown = medio.render(_image(arr))
    assert shown.pixels[1, 0] == 0 and shown.pixels[1, 1] == 255
    assert shown.info["nonfinite_pixels"] == 1
    assert not medio.render(_image(np.full((2, 2), np.nan))).pixels.any()


def test_16bit_without_modality_is_min_max_scaled_never_clipped():
    arr = np.array([[100, 200], [300, 60000]], dtype=np.uint16)
    shown = medio.render(_image(arr))
    assert shown.info["method"] == "minmax" and shown.info["range"] == [100.0, 60000.0]
    assert shown.pixels[0, 0] == 0 and shown.pixels[1, 1] == 255 and 0 < shown.pixels[1, 0] < 5


def test_mr_uses_percentile_clipping():
    arr = np.arange(1000, dtype=np.int16).reshape(25, 40)
    arr[0, 0] = 30000  # one hot pixel must not squash the rest
    shown = medio.render(_image(arr, modality="MR"))
    assert shown.info["method"] == "percentile_0.5_99.5"
    assert shown.pixels[0, 0] == 255 and shown.pixels[12, 20] > 100


def test_ct_body_part_selects_the_preset():
    arr = np.linspace(-1200, 1200, 100).reshape(10, 10)
    assert medio.render(_image(arr, modality="CT", body_part="CHEST")).info["window"] == [-600.0, 1500.0]
    assert medio.render(_image(arr, modality="CT", body_part="HEAD")).info["method"] == "ct_preset:brain"
    explicit = medio.render(_image(arr, modality="CT"), window=(0.0, 100.0))
    assert explicit.info["method"] == "window" and explicit.info["window"] == [0.0, 100.0]


def test_dicom_window_formula_matches_ps3_3():
    arr = np.array([[-200.0, 39.5, 40.0, 239.0, 240.0, 300.0]])
    shown = medio.render(_image(arr, window_center=40.0, window_width=400.0))
    assert shown.pixels[0, 0] == 0 and shown.pixels[0, -1] == 255
    assert shown.pixels[0, 1] == 128  # (0/399 + 0.5) * 255 rounded
    assert shown.pixels[0, 4] == 255


def test_rgb_stays_rgb_and_uint8_passes_through():
    rgb = np.random.default_rng(0).integers(0, 256, (5, 6, 3), dtype=np.uint8)
    shown = medio.render(_image(rgb))
    assert shown.pixels.shape == (5, 6, 3)
    np.testing.assert_array_equal(shown.pixels, rgb)


def test_label_map_keeps_ids_and_is_never_scaled_or_inverted():
    labels = np.zeros((3, 6, 6), np.int32)
    labels[2, 1:3, 1:3] = 3
    labels[2, 4, 4] = 7
    shown = medio.render(_image(labels, photometric="MONOCHROME1"), label=True, mask=labels)
    assert shown.info["slice_index"] == 2 and shown.info["method"] == "label"
    assert sorted(np.unique(shown.pixels).tolist()) == [0, 3, 7]
    with pytest.raises(medio.InvalidLabelMap, match=r"0\.\.255"):
        medio.render(_image(np.array([[0, 300]], np.int32)), label=True)
    with pytest.raises(medio.InvalidLabelMap, match="non-integer"):
        medio.render(_image(np.array([[0.5, 1.0]])), label=True)


def test_choose_slice_explicit_mask_middle():
    assert medio.choose_slice((10, 4, 4), 0) == 5
    assert medio.choose_slice((10, 4, 4), 0, index=-1) == 9
    mask = np.zeros((10, 4, 4), bool)
    mask[:, 1, :] = True  # along axis 1, slice 1 has all the foreground
    assert medio.choose_slice((10, 4, 4), 1, mask=mask) == 1
    assert medio.choose_slice((10, 4, 4), 0, mask=np.zeros((10, 4, 4))) == 5  # empty mask → middle
    with pytest.raises(IndexError):
        medio.choose_slice((10, 4, 4), 0, index=10)
    with pytest.raises(ValueError, match="does not match"):
        medio.choose_slice((10, 4, 4), 0, mask=np.zeros((9, 4, 4)))


def test_render_along_other_axes_and_bare_arrays():
    vol = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    assert medio.render(vol, axis=2, slice_index=1).pixels.shape == (4, 5)
    assert medio.render(vol, axis=1).info["slice_index"] == 2


def test_info_is_json_serialisable():
    import json

    shown = medio.render(_image(np.arange(12, dtype=np.uint16).reshape(3, 4)))
    assert json.loads(json.dumps(shown.info))["size"] == [4, 3]

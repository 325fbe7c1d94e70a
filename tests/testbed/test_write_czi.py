"""The synthetic CZI writer produces files Zeiss's libCZI and czifile read back pixel for pixel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from testbed.synth.write_czi import write_czi

aicspylibczi = pytest.importorskip("aicspylibczi")


def test_scenes_channels_and_planes_read_back_exactly(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    stack = rng.integers(0, 255, (2, 3, 2, 24, 30), dtype=np.uint8)
    path = write_czi(tmp_path / "f.czi", stack, axes="SCZYX", channel_names=["DAPI", "CD31", "GFP"])
    czi = aicspylibczi.CziFile(path)
    assert czi.get_dims_shape()[0]["S"] == (0, 2)
    assert czi.get_dims_shape()[0]["C"] == (0, 3)
    plane, _ = czi.read_image(S=1, C=2, Z=1)
    np.testing.assert_array_equal(plane.squeeze(), stack[1, 2, 1])
    names = [c.get("Name") for c in czi.meta.iter("Channel")]
    assert names == ["DAPI", "CD31", "GFP"]


def test_tiled_brightfield_mosaic_is_rgb_after_bgr_swap(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    slide = rng.integers(0, 255, (2, 50, 70, 3), dtype=np.uint8)
    path = write_czi(
        tmp_path / "he.czi", slide, axes="SYX", pixel_type="Bgr24", tile=16, scaling_um=(0.25, 0.25)
    )
    czi = aicspylibczi.CziFile(path)
    assert czi.is_mosaic()
    for scene in range(2):
        box = czi.get_mosaic_scene_bounding_box(index=scene)
        mosaic = czi.read_mosaic(region=(box.x, box.y, box.w, box.h), C=0, scale_factor=1.0)
        np.testing.assert_array_equal(mosaic.squeeze()[..., ::-1], slide[scene])
    value = czi.meta.find(".//Scaling/Items/Distance[@Id='X']/Value")
    assert value is not None and float(value.text) == pytest.approx(0.25e-6)


def test_gray16_reads_back_with_czifile_too(tmp_path: Path) -> None:
    czifile = pytest.importorskip("czifile")
    rng = np.random.default_rng(3)
    planes = rng.integers(0, 65535, (2, 12, 9), dtype=np.uint16)
    path = write_czi(tmp_path / "g.czi", planes, axes="CYX", pixel_type="Gray16")
    with czifile.CziFile(path) as czi:
        data = czi.asarray()
    np.testing.assert_array_equal(data.reshape(planes.shape), planes)


def test_writer_refuses_axes_that_do_not_match_the_array(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not match"):
        write_czi(tmp_path / "x.czi", np.zeros((4, 4), np.uint8), axes="CYX")
    with pytest.raises(ValueError, match="must be letters"):
        write_czi(tmp_path / "x.czi", np.zeros((2, 4, 4), np.uint8), axes="QYX")

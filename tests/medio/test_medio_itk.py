"""MetaImage and NRRD via SimpleITK, written by the test."""

from __future__ import annotations

import numpy as np
import pytest

import medio


@pytest.mark.parametrize("suffix", [".mha", ".mhd", ".nrrd"])
def test_itk_formats_read_in_zyx_with_spacing(tmp_path, suffix):
    import SimpleITK as sitk

    arr = np.arange(3 * 4 * 5, dtype=np.int16).reshape(3, 4, 5)
    img = sitk.GetImageFromArray(arr)
    img.SetSpacing((0.5, 0.6, 2.0))
    img.SetOrigin((1.0, 2.0, 3.0))
    path = tmp_path / f"vol{suffix}"
    sitk.WriteImage(img, str(path))
    if suffix == ".mhd":
        assert list(tmp_path.glob("*.raw")) or list(tmp_path.glob("*.zraw"))
    image = medio.read(path)
    np.testing.assert_array_equal(image.array, arr)
    assert image.meta.axes == "ZYX" and image.meta.spacing == pytest.approx((2.0, 0.6, 0.5))
    assert image.meta.origin == pytest.approx((1.0, 2.0, 3.0))
    shown = medio.render(image)
    assert shown.info["slice_index"] == 1 and shown.info["method"] == "minmax"
    # min–max of slice 1 (values 20..39): the darkest pixel is 0, the brightest 255.
    assert shown.pixels.min() == 0 and shown.pixels.max() == 255
    assert medio.inspect(path)["shape"] == [3, 4, 5]


def test_mhd_without_its_raw_file_is_a_clear_error(tmp_path):
    import SimpleITK as sitk

    path = tmp_path / "lonely.mhd"
    sitk.WriteImage(sitk.GetImageFromArray(np.zeros((2, 3, 4), np.uint8)), str(path))
    for raw in tmp_path.glob("*raw"):
        raw.unlink()
    with pytest.raises(medio.CorruptFile) as err:
        medio.read(path)
    assert "lonely.mhd" in str(err.value)

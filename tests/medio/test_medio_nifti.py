"""NIfTI: nibabel's bundled files and test-written 3D/4D images."""

from __future__ import annotations

import numpy as np
import pytest

import medio


def test_example4d_reads_volume_zero_by_default(nibabel_data):
    import nibabel as nib

    path = nibabel_data / "example4d.nii.gz"
    on_disk = np.asanyarray(nib.load(path).dataobj)  # (X, Y, Z, T)
    image = medio.read(path)
    assert image.meta.n_frames == on_disk.shape[3] and image.meta.frame_index == 0
    assert image.array.shape == on_disk.shape[:3][::-1] and image.meta.axes == "ZYX"
    np.testing.assert_array_equal(image.array, on_disk[..., 0].T)
    np.testing.assert_array_equal(medio.read(path, volume=1).array, on_disk[..., 1].T)


def test_anatomical_reads_as_zyx_with_reversed_spacing(nibabel_data):
    import nibabel as nib

    path = nibabel_data / "anatomical.nii"
    img = nib.load(path)
    image = medio.read(path)
    assert image.array.shape == tuple(reversed(img.shape))
    assert image.meta.spacing == pytest.approx(tuple(reversed(img.header.get_zooms())))
    shown = medio.render(image)
    assert shown.info["slice_index"] == img.shape[2] // 2 and shown.info["method"] == "minmax"


def test_written_4d_nifti_transposes_and_selects_volumes(tmp_path):
    import nibabel as nib

    data = np.arange(4 * 3 * 2 * 3, dtype=np.int16).reshape(4, 3, 2, 3)  # X, Y, Z, T
    path = tmp_path / "vol4d.nii.gz"
    nib.save(nib.Nifti1Image(data, np.diag([0.8, 0.9, 2.0, 1.0])), path)
    image = medio.read(path, volume=2)
    assert image.array.shape == (2, 3, 4)
    assert image.array[1, 2, 3] == data[3, 2, 1, 2]  # array[z, y, x] == data[x, y, z, t]
    assert image.meta.spacing == pytest.approx((2.0, 0.9, 0.8))
    with pytest.raises(medio.KeyNotFound, match="volume 3 out of range"):
        medio.read(path, volume=3)


def test_nifti_render_picks_the_largest_mask_slice(tmp_path):
    import nibabel as nib

    data = np.random.default_rng(0).normal(size=(8, 8, 5)).astype(np.float32)
    path = tmp_path / "float.nii"
    nib.save(nib.Nifti1Image(data, np.eye(4)), path)
    image = medio.read(path)
    mask = np.zeros(image.array.shape, dtype=np.uint8)
    mask[3, 2:6, 2:6] = 1
    mask[1, 0, 0] = 1
    shown = medio.render(image, mask=mask)
    assert shown.info["slice_index"] == 3 and shown.info["method"] == "percentile_0.5_99.5"
    assert shown.pixels.shape == (8, 8)


def test_nifti_extension_sniffed_from_gzip_content(tmp_path):
    import nibabel as nib

    path = tmp_path / "scan.nii.gz"
    nib.save(nib.Nifti1Image(np.ones((3, 3, 3), np.uint8), np.eye(4)), path)
    renamed = tmp_path / "scan.bin"
    renamed.write_bytes(path.read_bytes())
    assert medio.read(renamed).meta.format == "nifti"

"""MINC1/MINC2, MGH/MGZ, PAR/REC, AFNI, ECAT and Analyze from nibabel's own test files: read into RAS
(Z, Y, X), volume 0 of 4D, one-line errors for the broken ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import medio

READABLE = [
    ("tiny.mnc", "minc", 1),
    ("minc1_4d.mnc", "minc", 2),
    ("small.mnc", "minc", 1),
    ("minc2_4d.mnc", "minc", 2),
    ("test.mgz", "mgh", 2),
    ("phantom_varscale.PAR", "parrec", 3),
    ("phantom_EPI_asc_CLEAR_2_1.REC", "parrec", 3),
    ("scaled+tlrc.HEAD", "afni", 1),
    ("example4d+orig.BRIK.gz", "afni", 3),
    ("tinypet.v", "ecat", 1),
]


@pytest.mark.parametrize(("name", "kind", "volumes"), READABLE)
def test_nibabel_volume_reads_renders_and_inspects(nibabel_data, name, kind, volumes):
    path = nibabel_data / name
    image = medio.read(path)
    assert image.meta.format == kind and image.meta.axes == "ZYX" and image.array.ndim == 3
    assert image.meta.n_frames == volumes and image.meta.header["orientation"] == "RAS"
    assert len(image.meta.spacing) == 3 and all(s > 0 for s in image.meta.spacing)
    assert medio.render(image).pixels.dtype == np.uint8
    summary = medio.inspect(path)
    assert "error" not in summary and summary["kind"] == kind and summary["n_volumes"] == volumes
    # inspect speaks read's axis convention (docs/cli.md): the RAS (Z, Y, X) shape of one volume.
    assert summary["shape"] == list(image.array.shape) and summary["axes"] == "ZYX"


def test_minc_time_axis_is_the_volume_axis_and_the_rest_is_ras(nibabel_data):
    import nibabel as nib

    path = nibabel_data / "minc1_4d.mnc"
    on_disk = np.asanyarray(nib.load(path).dataobj)  # (time, z, y, x) in the file's order
    second = medio.read(path, volume=1)
    assert second.array.shape == on_disk.shape[1:] and second.meta.frame_index == 1
    # zspace/yspace/xspace with positive steps: RAS order is (x, y, z), so (Z, Y, X) is the file order.
    np.testing.assert_allclose(second.array, on_disk[1], rtol=1e-6)
    with pytest.raises(medio.KeyNotFound, match="volume 2 out of range"):
        medio.read(path, volume=2)


def test_afni_lps_volume_is_flipped_to_ras(nibabel_data):
    import nibabel as nib

    path = nibabel_data / "example4d+orig.HEAD"
    img = nib.load(path)
    assert "".join(nib.aff2axcodes(img.affine)) == "LPS"
    canonical = np.asanyarray(nib.as_closest_canonical(img).dataobj)[..., 0]
    image = medio.read(path)
    np.testing.assert_array_equal(image.array, canonical.T)
    assert image.meta.header["orientation_on_disk"] == "LPS"


def test_par_without_rec_is_a_one_line_error_naming_the_missing_file(nibabel_data, tmp_path):
    par = tmp_path / "T1.PAR"
    shutil.copy(nibabel_data / "T1.PAR", par)
    with pytest.raises(medio.CorruptFile) as err:
        medio.read(par)
    assert err.value.path == str(par) and "T1.REC" in err.value.reason and "\n" not in str(err.value)


@pytest.mark.parametrize("name", ["phantom_truncated.PAR", "bad_datatype+orig.HEAD", "analyze.hdr"])
def test_damaged_nibabel_files_fail_with_a_medio_error(nibabel_data, name):
    with pytest.raises(medio.MedioError) as err:
        medio.read(nibabel_data / name)
    assert "\n" not in str(err.value) and err.value.path.endswith(name)
    if not name.endswith(".hdr"):  # the header alone is inspectable; only the voxels (.img) are missing
        assert medio.inspect(nibabel_data / name)["error_type"] == "CorruptFile"


def test_cifti_is_not_a_voxel_image(nibabel_data):
    with pytest.raises(medio.UnsupportedFormat, match="not an image on a voxel grid"):
        medio.read(nibabel_data / "row_major.dconn.nii")


def test_analyze_pair_is_read_when_the_image_file_is_beside_it(tmp_path):
    import nibabel as nib

    data = np.arange(4 * 3 * 2, dtype=np.int16).reshape(4, 3, 2)
    nib.save(nib.AnalyzeImage(data, np.diag([2.0, 2.0, 3.0, 1.0])), tmp_path / "scan.hdr")
    # Analyze stores voxels radiologically (x runs right to left), so RAS flips x back.
    for name in ("scan.hdr", "scan.img"):
        image = medio.read(tmp_path / name)
        assert image.meta.format == "analyze" and image.array.shape == (2, 3, 4)
        assert image.meta.header["orientation_on_disk"] == "LAS"
        assert image.array[1, 2, 0] == data[3, 2, 1]


def test_volume_size_is_checked_before_voxels_are_read(nibabel_data, monkeypatch):
    from medio import _axes

    monkeypatch.setattr(_axes, "MAX_BYTES", 1000)
    with pytest.raises(medio.ImageTooLarge) as err:
        medio.read(nibabel_data / "small.mnc")
    assert "small.mnc" in str(err.value)


def test_nibabel_data_is_found_without_pytest_helpers() -> None:
    import importlib.util

    spec = importlib.util.find_spec("nibabel")
    assert spec is not None and spec.origin is not None
    assert (Path(spec.origin).parent / "tests" / "data" / "tiny.mnc").is_file()

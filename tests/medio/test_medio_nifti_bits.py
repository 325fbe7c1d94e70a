"""1-bit NIfTI masks (DT_BINARY), which nibabel refuses, are unpacked to 0/1 volumes on the right voxels."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import medio
from testbed.synth.write_nifti_bits import write_nifti_bits


def _mask() -> np.ndarray:
    mask = np.zeros((3, 10, 13), bool)  # 390 voxels: not a multiple of 8
    mask[1, 2:5, 3:9] = True
    mask[2, 9, 12] = True
    return mask


@pytest.mark.parametrize("name", ["mask.nii", "MASK.NII.GZ"])
def test_bits_unpack_to_the_mask_in_canonical_order(tmp_path: Path, name: str) -> None:
    path = write_nifti_bits(tmp_path / name, _mask(), spacing=(0.7, 0.8, 3.0))
    image = medio.read(path)
    np.testing.assert_array_equal(image.array, _mask().astype(np.uint8))
    assert image.meta.axes == "ZYX" and image.meta.spacing == pytest.approx((3.0, 0.8, 0.7))
    info = medio.inspect(path)
    assert info["shape"] == [3, 10, 13]
    assert "DT_BINARY" in info["header"]["data_dtype_on_disk"]
    assert medio.render(image, label=True).pixels.max() == 1


def test_truncated_bits_are_a_corrupt_file(tmp_path: Path) -> None:
    path = write_nifti_bits(tmp_path / "cut.nii.gz", _mask())
    raw = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(raw[:360], mtime=0))
    with pytest.raises(medio.CorruptFile, match=r"cut\.nii\.gz: 1-bit NIfTI data truncated: 8 bytes"):
        medio.read(path)
    assert medio.inspect(path)["error_type"] == "CorruptFile"


def test_hdr_img_pair_of_bits_is_read_from_either_file(tmp_path: Path) -> None:
    import nibabel as nib

    single = write_nifti_bits(tmp_path / "single.nii", _mask()).read_bytes()
    header = nib.Nifti1Header(single[:348], check=False)  # type: ignore[no-untyped-call]
    header["magic"] = b"ni1"
    header["vox_offset"] = 0
    (tmp_path / "pair.hdr").write_bytes(header.binaryblock)
    (tmp_path / "pair.img").write_bytes(single[352:])
    for name in ("pair.hdr", "pair.img"):
        np.testing.assert_array_equal(medio.read(tmp_path / name).array, _mask().astype(np.uint8))

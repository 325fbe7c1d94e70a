"""The 1-bit NIfTI writer stores datatype 1 / bitpix 1 with voxels packed LSB first, x fastest."""

from __future__ import annotations

import gzip
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from testbed.synth.write_nifti_bits import write_nifti_bits


@pytest.mark.parametrize("name", ["mask.nii", "mask.nii.gz"])
def test_header_says_binary_and_bits_unpack_to_the_mask(tmp_path: Path, name: str) -> None:
    mask = np.zeros((3, 5, 7), bool)
    mask[0, 0, 0] = mask[1, 2, 3] = mask[2, 4, 6] = True
    path = write_nifti_bits(tmp_path / name, mask, spacing=(0.5, 0.6, 2.0))
    raw = path.read_bytes()
    if name.endswith(".gz"):
        raw = gzip.decompress(raw)
    header = nib.Nifti1Header(raw[:348], check=False)  # type: ignore[no-untyped-call]
    assert (int(header["datatype"]), int(header["bitpix"])) == (1, 1)
    assert header.get_data_shape() == (7, 5, 3)
    assert header.get_zooms() == pytest.approx((0.5, 0.6, 2.0))
    payload = raw[int(header["vox_offset"]) :]
    assert len(payload) == -(-mask.size // 8)
    # Voxel (x=0, y=0, z=0) is bit 0 of the first byte (LSB first).
    assert payload[0] & 1 == 1
    bits = np.unpackbits(np.frombuffer(payload, np.uint8), bitorder="little")[: mask.size]
    np.testing.assert_array_equal(bits.reshape((7, 5, 3), order="F").T.astype(bool), mask)


def test_gzip_output_is_deterministic(tmp_path: Path) -> None:
    mask = np.eye(16, dtype=bool)[None]
    a = write_nifti_bits(tmp_path / "a.nii.gz", mask).read_bytes()
    b = write_nifti_bits(tmp_path / "b.nii.gz", mask).read_bytes()
    assert a == b

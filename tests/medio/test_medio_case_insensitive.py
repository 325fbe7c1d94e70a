"""Upper-case extensions (.TIF, .JPG, .DCM, .NII.GZ ...) are the same formats as lower-case ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image

import medio
from medio.sniff import has_suffix, sniff


def test_has_suffix_ignores_case_and_takes_several() -> None:
    assert has_suffix("data/CASE 1.NII.GZ", ".nii.gz")
    assert has_suffix("x.Tif", (".tiff", ".tif"))
    assert not has_suffix("x.tif.bak", ".tif")


@pytest.mark.parametrize(
    ("name", "family"), [("scan.TIF", "tiff"), ("photo.JPG", "bitmap"), ("vol.NII.GZ", "nifti")]
)
def test_upper_case_files_are_sniffed_and_read(tmp_path: Path, name: str, family: str) -> None:
    pixels = np.arange(64, dtype=np.uint8).reshape(8, 8)
    path = tmp_path / name
    if family == "tiff":
        tifffile.imwrite(path, pixels)
    elif family == "bitmap":
        Image.fromarray(pixels).save(path, format="JPEG", quality=100)
    else:
        from testbed.synth.write_files import write_nifti

        write_nifti(path, pixels[None].astype(np.int16), (1.0, 1.0, 1.0))
    assert sniff(path) == family
    assert medio.read(path).array.size == 64


def test_upper_case_dicom_extension_is_dicom(tmp_path: Path, pydicom_file) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "IMG0001.DCM"
    path.write_bytes(pydicom_file("CT_small.dcm").read_bytes())
    assert sniff(path) == "dicom"

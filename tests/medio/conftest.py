"""Fixtures for medio tests: bundled pydicom/nibabel files and a small DICOM writer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest


@pytest.fixture(scope="session")
def pydicom_file() -> Callable[[str], Path]:
    """Return a function mapping a pydicom test-file name to its path (skips when not shipped)."""
    from pydicom.data import get_testdata_file

    def get(name: str) -> Path:
        found = get_testdata_file(name, download=False)
        if found is None:
            pytest.skip(f"pydicom does not ship {name}")
        return Path(str(found))

    return get


@pytest.fixture(scope="session")
def nibabel_data() -> Path:
    """nibabel's bundled test-data folder."""
    from nibabel.testing import data_path

    return Path(data_path)


def write_dicom(
    path: Path,
    pixels: np.ndarray,
    *,
    photometric: str = "MONOCHROME2",
    modality: str = "CT",
    series_uid: str | None = None,
    **elements: Any,
) -> Path:
    """Write a small, valid DICOM file (explicit VR little endian) with the given pixels and elements."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, SecondaryCaptureImageStorage, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = SecondaryCaptureImageStorage
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = SecondaryCaptureImageStorage
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.StudyInstanceUID = generate_uid()
    ds.SeriesInstanceUID = series_uid or generate_uid()
    ds.Modality = modality
    bits = pixels.dtype.itemsize * 8
    ds.set_pixel_data(pixels, photometric, bits)
    for keyword, value in elements.items():
        setattr(ds, keyword, value)
    ds.save_as(path, enforce_file_format=True)
    return path


@pytest.fixture
def make_dicom() -> Callable[..., Path]:
    """The :func:`write_dicom` helper as a fixture."""
    return write_dicom

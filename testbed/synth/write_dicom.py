"""Deterministic DICOM writers: single images, multi-frame files and series folders.

Every UID is derived from a fixed root plus a content key, and every date/time is fixed, so two runs with the
same seed write byte-identical files. Files carry explicit file meta (PS3.10 §7.1) with Explicit VR Little
Endian.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import PYDICOM_IMPLEMENTATION_UID, UID, ExplicitVRLittleEndian

_UID_ROOT = "1.2.826.0.1.3680043.10.1123"  # a fixed private root; the suffix is a hash of the object's key
_SOP_CLASS = {
    "CT": "1.2.840.10008.5.1.4.1.1.2",
    "MR": "1.2.840.10008.5.1.4.1.1.4",
    "CR": "1.2.840.10008.5.1.4.1.1.1",
    "DX": "1.2.840.10008.5.1.4.1.1.1.1",
    # Secondary Capture, which allows NumberOfFrames for a simple multi-frame file
    "MG": "1.2.840.10008.5.1.4.1.1.7",
}


def uid(key: str) -> UID:
    """A stable UID for ``key`` under the suite's root."""
    return UID(f"{_UID_ROOT}.{zlib.crc32(key.encode('utf-8'))}.{zlib.adler32(key.encode('utf-8'))}")


def _base(patient_id: str, modality: str, study_key: str, series_key: str, sop_key: str) -> Dataset:
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = UID(_SOP_CLASS.get(modality, _SOP_CLASS["MG"]))
    meta.MediaStorageSOPInstanceUID = uid(sop_key)
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    meta.ImplementationClassUID = PYDICOM_IMPLEMENTATION_UID
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.StudyInstanceUID = uid(study_key)
    ds.SeriesInstanceUID = uid(series_key)
    ds.PatientID = patient_id
    ds.PatientName = patient_id.replace("-", "^")
    ds.PatientSex = "O"
    ds.StudyDate = "20200101"
    ds.StudyTime = "120000"
    ds.ContentDate = "20200101"
    ds.ContentTime = "120000"
    ds.Modality = modality
    ds.Manufacturer = "medstrat-synth"
    return ds


def _pixels(ds: Dataset, stored: np.ndarray, photometric: str) -> None:
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = photometric
    ds.Rows, ds.Columns = int(stored.shape[-2]), int(stored.shape[-1])
    ds.BitsAllocated = 16
    ds.BitsStored = 16
    ds.HighBit = 15
    ds.PixelRepresentation = 1 if stored.dtype == np.int16 else 0
    ds.PixelData = np.ascontiguousarray(stored).tobytes()


def write_image(
    path: Path,
    stored: np.ndarray,
    *,
    patient_id: str,
    modality: str,
    series_key: str,
    photometric: str = "MONOCHROME2",
    spacing: tuple[float, float] = (1.0, 1.0),
    slope: float = 1.0,
    intercept: float = 0.0,
    window: tuple[float, float] | None = None,
    position: tuple[float, float, float] | None = None,
    instance: int = 1,
    series_description: str = "",
    body_part: str = "",
) -> None:
    """Write one single-frame image.

    Args:
        path: Output ``.dcm`` path.
        stored: ``(H, W)`` stored values (``int16`` or ``uint16``), before the modality LUT.
        patient_id: PatientID (also drives the study UID).
        modality: DICOM Modality (CT, MR, CR, DX, ...).
        series_key: Key of the series UID (files sharing it form one series).
        photometric: ``MONOCHROME2`` or ``MONOCHROME1`` (inverted grey scale, PS3.3 C.7.6.3.1.2).
        spacing: PixelSpacing ``(row, column)`` in mm.
        slope: RescaleSlope.
        intercept: RescaleIntercept (``-1024`` for CT stored as unsigned-offset values).
        window: ``(center, width)`` VOI window, if any.
        position: ImagePositionPatient in mm (series slices).
        instance: InstanceNumber.
        series_description: SeriesDescription.
        body_part: BodyPartExamined.
    """
    ds = _base(patient_id, modality, f"study:{patient_id}", series_key, f"{series_key}:{instance}")
    ds.SeriesDescription = series_description
    ds.BodyPartExamined = body_part
    ds.InstanceNumber = instance
    ds.SeriesNumber = zlib.crc32(series_key.encode("utf-8")) % 900 + 1
    ds.PixelSpacing = [float(spacing[0]), float(spacing[1])]
    if position is not None:
        ds.ImagePositionPatient = [float(v) for v in position]
        ds.ImageOrientationPatient = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
        ds.SliceThickness = float(spacing[0])
    if slope != 1.0 or intercept != 0.0 or modality == "CT":
        ds.RescaleSlope = float(slope)
        ds.RescaleIntercept = float(intercept)
        ds.RescaleType = "HU" if modality == "CT" else "US"
    if window is not None:
        ds.WindowCenter, ds.WindowWidth = float(window[0]), float(window[1])
    _pixels(ds, stored, photometric)
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)


def write_series(
    folder: Path,
    stored: np.ndarray,
    *,
    patient_id: str,
    modality: str,
    series_key: str,
    spacing: tuple[float, float, float],
    intercept: float = 0.0,
    description: str = "",
    body_part: str = "",
    prefix: str = "IM",
) -> list[Path]:
    """Write a ``(Z, H, W)`` volume as one file per slice, slice k at z = k * spacing_z.

    Args:
        folder: Series folder.
        stored: Stored values, axis 0 = slice order (increasing z and InstanceNumber).
        patient_id: PatientID.
        modality: Modality.
        series_key: Key of the SeriesInstanceUID.
        spacing: ``(x, y, z)`` spacing in mm.
        intercept: RescaleIntercept.
        description: SeriesDescription.
        body_part: BodyPartExamined.
        prefix: File name prefix (``IM0001.dcm``, ...).

    Returns:
        The written paths in slice order.
    """
    paths = []
    for k in range(stored.shape[0]):
        p = folder / f"{prefix}{k + 1:04d}.dcm"
        write_image(
            p,
            stored[k],
            patient_id=patient_id,
            modality=modality,
            series_key=series_key,
            spacing=(spacing[1], spacing[0]),
            intercept=intercept,
            instance=k + 1,
            position=(0.0, 0.0, k * spacing[2]),
            series_description=description,
            body_part=body_part,
        )
        paths.append(p)
    return paths


def write_multiframe(
    path: Path,
    stored: np.ndarray,
    *,
    patient_id: str,
    modality: str,
    series_key: str,
    spacing: tuple[float, float, float],
    description: str = "",
) -> None:
    """Write a ``(F, H, W)`` stack as one multi-frame file (NumberOfFrames, PS3.3 C.7.6.6).

    Args:
        path: Output path.
        stored: ``uint16`` frames.
        patient_id: PatientID.
        modality: Modality.
        series_key: Key of the SeriesInstanceUID.
        spacing: ``(x, y, z)`` in mm; z goes to SpacingBetweenSlices.
        description: SeriesDescription.
    """
    ds = _base(patient_id, modality, f"study:{patient_id}", series_key, f"{series_key}:mf")
    ds.SeriesDescription = description
    ds.InstanceNumber = 1
    ds.NumberOfFrames = int(stored.shape[0])
    ds.PixelSpacing = [float(spacing[1]), float(spacing[0])]
    ds.SpacingBetweenSlices = float(spacing[2])
    _pixels(ds, stored, "MONOCHROME2")
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)

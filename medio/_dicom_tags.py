"""DICOM header helpers shared by the single-file and series readers (no pydicom import at module load)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pydicom.dataset import Dataset

# Which pydicom decoder plugin(s) handle each compressed transfer syntax (pydicom 3 "pixel data handlers").
_JPEG = ("pylibjpeg + pylibjpeg-libjpeg", "gdcm")
_JPEG_LS = ("pylibjpeg + pylibjpeg-libjpeg", "pyjpegls", "gdcm")
_HTJ2K = ("pylibjpeg + pylibjpeg-openjpeg",)
_MPEG = ("none in pydicom: extract the encapsulated stream and decode it with PyAV",)
DECODER_PLUGINS: dict[str, tuple[str, ...]] = {
    "1.2.840.10008.1.2.4.50": ("pillow", *_JPEG),
    "1.2.840.10008.1.2.4.51": _JPEG,
    "1.2.840.10008.1.2.4.57": _JPEG,
    "1.2.840.10008.1.2.4.70": _JPEG,
    "1.2.840.10008.1.2.4.80": _JPEG_LS,
    "1.2.840.10008.1.2.4.81": _JPEG_LS,
    "1.2.840.10008.1.2.4.90": ("pylibjpeg + pylibjpeg-openjpeg", "pillow (with OpenJPEG)", "gdcm"),
    "1.2.840.10008.1.2.4.91": ("pylibjpeg + pylibjpeg-openjpeg", "pillow (with OpenJPEG)", "gdcm"),
    "1.2.840.10008.1.2.4.201": _HTJ2K,
    "1.2.840.10008.1.2.4.202": _HTJ2K,
    "1.2.840.10008.1.2.4.203": _HTJ2K,
    "1.2.840.10008.1.2.5": ("pydicom's built-in RLE decoder", "pylibjpeg + pylibjpeg-rle", "gdcm"),
    "1.2.840.10008.1.2.4.100": _MPEG,
    "1.2.840.10008.1.2.4.101": _MPEG,
    "1.2.840.10008.1.2.4.102": _MPEG,
    "1.2.840.10008.1.2.4.103": _MPEG,
    "1.2.840.10008.1.2.4.104": _MPEG,
    "1.2.840.10008.1.2.4.105": _MPEG,
    "1.2.840.10008.1.2.4.106": _MPEG,
    "1.2.840.10008.1.2.4.107": _MPEG,
    "1.2.840.10008.1.2.4.108": _MPEG,
}


def first_float(value: Any) -> float | None:
    """The first number of a possibly multi-valued element (number, DS string, MultiValue, list) as a float,
    or ``None`` when absent or unparsable.

    WindowCenter/Width may be multi-valued (``"40\\\\400"``) or decimal strings with stray spaces; DICOM
    viewers use the first value (PS3.3 C.11.2.1.2).
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = value.replace("\\", " ").split()
    if isinstance(value, list | tuple) or (hasattr(value, "__getitem__") and not isinstance(value, bytes)):
        if len(value) == 0:
            return None
        value = value[0]
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) else None


def text(ds: Dataset, keyword: str) -> str | None:
    """A string element stripped, or ``None`` when absent or empty."""
    value = ds.get(keyword)
    if value is None:
        return None
    out = str(value).strip()
    return out or None


def floats(value: Any) -> tuple[float, ...] | None:
    """Return a multi-valued numeric element as a tuple of floats (``None`` when absent/unparsable)."""
    if value is None:
        return None
    try:
        return tuple(float(v) for v in value)
    except (TypeError, ValueError):
        return None


def _groups_item(ds: Dataset, sequence: str, frame: int | None) -> Any:
    """The functional-group macro ``sequence`` for ``frame``: per-frame, then shared (PS3.3 C.7.6.16)."""
    if frame is not None:
        per_frame = ds.get("PerFrameFunctionalGroupsSequence")
        if per_frame is not None and frame < len(per_frame):
            item = per_frame[frame].get(sequence)
            if item:
                return item[0]
    shared = ds.get("SharedFunctionalGroupsSequence")
    if shared:
        item = shared[0].get(sequence)
        if item:
            return item[0]
    return None


def rescale_for_frame(ds: Dataset, frame: int | None) -> tuple[float, float] | None:
    """``(slope, intercept)`` of the modality LUT for ``frame``, or ``None`` when there is none.

    Enhanced multi-frame objects keep the rescale in the Pixel Value Transformation functional group, possibly
    different per frame (PS3.3 C.7.6.16.2.9); classic objects keep it at the top level (``frame`` None).
    """
    item = _groups_item(ds, "PixelValueTransformationSequence", frame)
    source = item if item is not None and "RescaleSlope" in item else ds
    slope = first_float(source.get("RescaleSlope"))
    intercept = first_float(source.get("RescaleIntercept"))
    if slope is None and intercept is None:
        return None
    return (1.0 if slope is None or slope == 0 else slope, intercept or 0.0)


def window_for_frame(ds: Dataset, frame: int | None) -> tuple[float | None, float | None]:
    """Return the first VOI window ``(center, width)`` for a frame (Frame VOI LUT group, else top level)."""
    item = _groups_item(ds, "FrameVOILUTSequence", frame)
    source = item if item is not None and "WindowCenter" in item else ds
    return first_float(source.get("WindowCenter")), first_float(source.get("WindowWidth"))


def pixel_spacing(ds: Dataset) -> tuple[float, float] | None:
    """Return (row, column) spacing in mm from PixelSpacing (or the Pixel Measures functional group)."""
    item = _groups_item(ds, "PixelMeasuresSequence", 0)
    for source in (item, ds):
        if source is None:
            continue
        values = floats(source.get("PixelSpacing") or source.get("ImagerPixelSpacing"))
        if values and len(values) >= 2:
            return values[0], values[1]
    return None


def slice_thickness(ds: Dataset) -> float | None:
    """Return SpacingBetweenSlices, else SliceThickness (functional groups first), in mm."""
    item = _groups_item(ds, "PixelMeasuresSequence", 0)
    for source in (item, ds):
        if source is None:
            continue
        for keyword in ("SpacingBetweenSlices", "SliceThickness"):
            value = first_float(source.get(keyword))
            if value:
                return value
    return None


def orientation(ds: Dataset, frame: int | None = 0) -> tuple[float, ...] | None:
    """Return ImageOrientationPatient (six cosines), from the Plane Orientation group when enhanced."""
    item = _groups_item(ds, "PlaneOrientationSequence", frame)
    source = item if item is not None else ds
    values = floats(source.get("ImageOrientationPatient"))
    return values if values and len(values) == 6 else None


def position(ds: Dataset, frame: int | None = 0) -> tuple[float, ...] | None:
    """Return ImagePositionPatient, from the Plane Position group when enhanced."""
    item = _groups_item(ds, "PlanePositionSequence", frame)
    source = item if item is not None else ds
    values = floats(source.get("ImagePositionPatient"))
    return values if values and len(values) == 3 else None


def direction_matrix(iop: tuple[float, ...] | None) -> tuple[float, ...] | None:
    """Return the 3×3 direction (row cosine, column cosine, slice normal) flattened, from six IOP cosines."""
    if iop is None:
        return None
    row = np.asarray(iop[:3])
    col = np.asarray(iop[3:])
    normal = np.cross(row, col)
    return tuple(float(v) for v in np.concatenate([row, col, normal]))


def header_subset(ds: Dataset) -> dict[str, Any]:
    """Return a small JSON-able subset of identifying tags (no pixel data, no private tags).

    PatientID and the instance UID are included because datasets key their label tables and subjects by them.
    """
    keywords = (
        "SOPClassUID", "SOPInstanceUID", "PatientID", "AccessionNumber", "StudyInstanceUID",
        "SeriesInstanceUID", "SeriesDescription", "StudyDescription",
        "Manufacturer", "PatientSex", "PatientAge", "InstanceNumber", "Rows", "Columns", "BitsAllocated",
        "BitsStored", "PixelRepresentation", "SamplesPerPixel", "NumberOfFrames", "ImageType",
        "ProtocolName", "SliceThickness", "KVP", "ConvolutionKernel", "LossyImageCompression",
    )  # fmt: skip
    out: dict[str, Any] = {}
    for keyword in keywords:
        value = ds.get(keyword)
        if value is None or value == "":
            continue
        if isinstance(value, list | tuple) or type(value).__name__ == "MultiValue":
            out[keyword] = [str(v) for v in value]
        elif isinstance(value, int | float):
            out[keyword] = value
        else:
            out[keyword] = str(value)
    return out

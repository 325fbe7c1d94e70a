"""MetaImage (``.mha``, ``.mhd`` + raw) and NRRD via SimpleITK, in SimpleITK's (Z, Y, X) array order.

NRRD files SimpleITK cannot decode are read with pynrrd, the library written for the format: SimpleITK's
NrrdIO has no bzip2 decoder, and some detached headers (``.nhdr`` naming a ``data file`` with its own
encoding) fail there too, though both are valid NRRD (teem's format definition). The pynrrd result uses
SimpleITK's conventions: ``(Z, Y, X)`` arrays (``index_order="C"``), spacing in array-axis order.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from medio._axes import check_size
from medio.errors import CorruptFile, UnsupportedFormat
from medio.types import MedImage, Meta

NRRD_SUFFIXES = (".nrrd", ".nhdr")
# Encodings SimpleITK's NrrdIO decodes; any other (bzip2, "bz2") goes to pynrrd.
_ITK_ENCODINGS = frozenset({"raw", "gzip", "gz", "ascii", "text", "txt", "hex"})
_MAX_HEADER_BYTES = 65_536


def _header_fields(path: Path) -> dict[str, str]:
    """The ``field: value`` lines of a NRRD header (up to its blank line), lower-case field names."""
    with path.open("rb") as fh:
        head = fh.read(_MAX_HEADER_BYTES)
    fields: dict[str, str] = {}
    for raw in head.split(b"\n")[1:]:
        line = raw.decode("latin-1").rstrip("\r")
        if not line:
            break  # the blank line ends the header; an attached payload follows
        if line.startswith("#") or ":" not in line:
            continue
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.lstrip("=").strip()
    return fields


def needs_pynrrd(path: str | Path) -> bool:
    """True when ``path`` is a ``.nrrd``/``.nhdr`` file (``NRRD`` magic) whose encoding SimpleITK cannot
    decode (bzip2): pynrrd reads it.
    """
    p = Path(path)
    if p.suffix.lower() not in NRRD_SUFFIXES:
        return False
    try:
        with p.open("rb") as fh:
            if fh.read(4) != b"NRRD":
                return False
        encoding = _header_fields(p).get("encoding", "raw").lower()
    except OSError:
        return False
    return encoding not in _ITK_ENCODINGS


def _spacing(header: dict[str, Any], ndim: int) -> tuple[float, ...] | None:
    """Per-axis spacing in NRRD (fastest-first) order from ``space directions`` or ``spacings``."""
    dirs = header.get("space directions")
    if dirs is not None:
        out = []
        for row in dirs:
            arr = np.asarray(row, dtype=np.float64)
            out.append(float(np.linalg.norm(arr)) if np.all(np.isfinite(arr)) else math.nan)
        spatial = [s for s in out if not math.isnan(s)]
        return tuple(spatial) if len(spatial) == ndim else None
    spacings = header.get("spacings")
    if spacings is not None:
        values = [float(s) for s in spacings]
        return tuple(values) if len(values) == ndim and all(math.isfinite(v) for v in values) else None
    return None


def read_nrrd(path: str | Path) -> MedImage:
    """Read a NRRD file (attached or detached, any encoding pynrrd knows) in ``(Z, Y, X)`` order.

    Args:
        path: ``.nrrd`` or ``.nhdr`` (its ``data file`` beside it).

    Returns:
        The image; ``meta.header`` holds the header's scalar fields and ``reader = "pynrrd"``.

    Raises:
        CorruptFile: The header or the payload cannot be decoded (truncated, missing data file).
    """
    import nrrd

    path = Path(path)
    try:
        data, header = nrrd.read(str(path), index_order="C")
    except (nrrd.NRRDError, OSError, ValueError, EOFError) as exc:
        raise CorruptFile(path, f"pynrrd cannot read the file ({type(exc).__name__}: {exc})") from exc
    arr = np.asarray(data)
    kinds = [str(k).lower() for k in header.get("kinds", [])]
    # NRRD lists axes fastest first; in C order the last array axis is the first NRRD axis.
    color = bool(kinds) and kinds[0] in ("rgb-color", "rgba-color", "3-color", "vector", "list")
    spatial_ndim = arr.ndim - (1 if color else 0)
    spacing = _spacing(header, spatial_ndim)
    axes = {2: "YX", 3: "ZYX", 4: "TZYX"}.get(spatial_ndim, "?" * spatial_ndim) + ("C" if color else "")
    origin = header.get("space origin")
    scalars = {
        str(k): (v if isinstance(v, str | int | float) else str(v))
        for k, v in header.items()
        if not isinstance(v, np.ndarray) and len(str(v)) <= 200
    }
    meta = Meta(
        format="itk",
        path=str(path),
        axes=axes,
        spacing=tuple(reversed(spacing)) + ((1.0,) if color else ()) if spacing else None,
        origin=tuple(float(v) for v in origin) if origin is not None else None,
        photometric="RGB" if color and arr.shape[-1] == 3 else None,
        header={**scalars, "reader": "pynrrd", "pixel_type": str(arr.dtype)},
    )
    return MedImage(arr, meta)


def summarize_nrrd(path: str | Path) -> dict[str, Any]:
    """`summarize_itk` by pynrrd: shape (array order), dtype, spacing and the header's scalar fields, without
    decoding the payload; ``CorruptFile`` when the header cannot be parsed.
    """
    import nrrd

    try:
        header = nrrd.read_header(str(path))
    except (nrrd.NRRDError, OSError, ValueError) as exc:
        raise CorruptFile(path, f"pynrrd cannot read the header ({exc})") from exc
    sizes = [int(s) for s in header.get("sizes", [])]
    spacing = _spacing(header, len(sizes))
    return {
        "shape": list(reversed(sizes)),
        "dtype": str(header.get("type", "")),
        "spacing": list(reversed(spacing)) if spacing else None,
        "header": {str(k): str(v) for k, v in header.items() if len(str(v)) <= 200},
    }


# MetaImage "Modality = MET_MOD_CT" style tags map onto DICOM modality codes.
_MET_MODALITY = {"MET_MOD_CT": "CT", "MET_MOD_MR": "MR", "MET_MOD_NM": "NM", "MET_MOD_US": "US"}


def _reader(path: Path) -> Any:
    import SimpleITK as sitk

    reader = sitk.ImageFileReader()  # type: ignore[no-untyped-call]
    reader.SetFileName(str(path))  # type: ignore[no-untyped-call]
    try:
        reader.ReadImageInformation()  # type: ignore[no-untyped-call]
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else "unreadable"
        raise CorruptFile(path, f"SimpleITK cannot read the header ({reason})") from exc
    return reader


def _header(reader: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in reader.GetMetaDataKeys():
        value = reader.GetMetaData(key)
        if len(value) <= 200:
            out[key] = value
    return out


def read_itk(path: str | Path) -> MedImage:
    """Read a MetaImage or NRRD image.

    Args:
        path: ``.mha``, ``.mhd`` (its raw file beside it), ``.nrrd`` or ``.nhdr``.

    Returns:
        ``(Z, Y, X)`` or ``(Y, X)`` arrays, with a trailing channel axis for vector pixels; spacing/origin/
        direction from the header (spacing reordered to the array axes).

    Raises:
        CorruptFile: Header unreadable or data missing/truncated.
        UnsupportedFormat: SimpleITK has no reader for the file.
    """
    import SimpleITK as sitk

    path = Path(path)
    if needs_pynrrd(path):
        return read_nrrd(path)
    try:
        reader = _reader(path)
    except CorruptFile:
        if path.suffix.lower() not in NRRD_SUFFIXES:
            raise
        # A detached header SimpleITK rejects may still be valid NRRD: the format's own library decides.
        return read_nrrd(path)
    size = tuple(int(s) for s in reader.GetSize())
    channels = int(reader.GetNumberOfComponents())
    check_size(path, (*size, channels), "float64" if channels > 1 else "int64")
    try:
        image = reader.Execute()
    except RuntimeError as exc:
        text = str(exc)
        if "Could not create IO object" in text:
            raise UnsupportedFormat(path, "SimpleITK has no reader for this file") from exc
        reason = text.strip().splitlines()[-1] if text.strip() else "unreadable"
        raise CorruptFile(path, f"SimpleITK cannot read the pixel data ({reason})") from exc
    arr = sitk.GetArrayFromImage(image)
    dim = image.GetDimension()
    spacing = tuple(float(s) for s in reversed(image.GetSpacing()))
    color = channels > 1
    axes = {2: "YX", 3: "ZYX", 4: "TZYX"}.get(dim, "?" * dim) + ("C" if color else "")
    header = _header(reader)
    modality = _MET_MODALITY.get(header.get("Modality", "").strip())
    meta = Meta(
        format="itk",
        path=str(path),
        axes=axes,
        spacing=(*spacing, 1.0) if color else spacing,
        origin=tuple(float(v) for v in image.GetOrigin()),
        direction=tuple(float(v) for v in image.GetDirection()),
        modality=modality,
        photometric="RGB" if channels == 3 else None,
        header={**header, "pixel_type": image.GetPixelIDTypeAsString()},
    )
    return MedImage(arr, meta)


def summarize_itk(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: size (array order Z Y X), spacing, origin, pixel type and header keys of a
    MetaImage/NRRD, without reading the pixels; ``CorruptFile`` when the header is unreadable.
    """
    import SimpleITK as sitk

    if needs_pynrrd(path):
        return summarize_nrrd(path)
    reader = _reader(Path(path))
    size = [int(s) for s in reversed(reader.GetSize())]
    channels = int(reader.GetNumberOfComponents())
    return {
        "shape": size + ([channels] if channels > 1 else []),
        "dtype": sitk.GetPixelIDValueAsString(reader.GetPixelID()),  # type: ignore[no-untyped-call]
        "spacing": [float(s) for s in reversed(reader.GetSpacing())],
        "origin": [float(v) for v in reader.GetOrigin()],
        "header": _header(reader),
    }

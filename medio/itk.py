"""MetaImage (``.mha``, ``.mhd`` + raw) and NRRD via SimpleITK, in SimpleITK's (Z, Y, X) array order.

NRRD payloads SimpleITK cannot decode (bzip2) go to `medio.nrrd` (pynrrd).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from medio._axes import check_size
from medio.errors import CorruptFile, UnsupportedFormat
from medio.nrrd import NRRD_SUFFIXES, needs_pynrrd, read_nrrd, summarize_nrrd
from medio.types import MedImage, Meta

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

"""The dispatcher: ``read(path, ...)`` picks the reader for the file's format family."""

from __future__ import annotations

import importlib
import inspect as _inspect
import logging
import struct
import zlib
from collections.abc import Callable
from os import PathLike
from pathlib import Path
from typing import Any

from medio.errors import CorruptFile, MedioError
from medio.sniff import sniff
from medio.types import MedImage

log = logging.getLogger(__name__)

# Format family → "module:function" of its reader, imported on first use so `import medio` stays light.
READERS: dict[str, str] = {
    "dicom": "medio.dicom:read_dicom",
    "dicom_series": "medio.dicom_series:read_series",
    "nifti": "medio.nifti:read_nifti",
    "itk": "medio.itk:read_itk",
    "tiff": "medio.tiff:read_tiff",
    "bitmap": "medio.bitmap:read_bitmap",
    "npy": "medio.arrays:read_npy",
    "npz": "medio.arrays:read_npz",
    "hdf5": "medio.hdf5:read_hdf5",
    "matlab": "medio.matlab:read_matlab",
    "table": "medio.table:read_table_image",
    "video": "medio.video:read_video",
}

# Summaries for `inspect`, same lazy scheme.
SUMMARIZERS: dict[str, str] = {
    "dicom": "medio.dicom:summarize_dicom",
    "dicom_series": "medio.dicom_series:summarize_series",
    "nifti": "medio.nifti:summarize_nifti",
    "itk": "medio.itk:summarize_itk",
    "tiff": "medio.tiff:summarize_tiff",
    "bitmap": "medio.bitmap:summarize_bitmap",
    "npy": "medio.arrays:summarize_npy",
    "npz": "medio.arrays:summarize_npz",
    "hdf5": "medio.hdf5:summarize_hdf5",
    "matlab": "medio.matlab:summarize_matlab",
    "table": "medio.table:summarize_table",
    "video": "medio.video:summarize_video",
}

# Library failures on damaged input that we turn into CorruptFile instead of letting a traceback through.
_DAMAGE = (
    OSError,
    EOFError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    RuntimeError,
    struct.error,
    zlib.error,
)


def resolve(entry: str) -> Callable[..., Any]:
    """Import ``"module:function"`` and return the function.

    Args:
        entry: The registry entry.

    Returns:
        The callable.
    """
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def read(
    path: str | PathLike[str],
    *,
    key: str | None = None,
    index: int | None = None,
    frame: int | None = None,
    series: str | int | None = None,
    volume: int | None = None,
) -> MedImage:
    """Read any supported file (or DICOM folder) into a :class:`MedImage` in canonical axis order.

    Options a format does not use are ignored (with a debug log), so callers can pass what they know.

    Args:
        path: File, or folder of DICOM files.
        key: Container key: npz member, HDF5 dataset path, MATLAB variable, table column.
        index: Item along axis 0 of a container array, table row, or TIFF page.
        frame: Frame of a multi-frame DICOM, video or animated image (only that frame is decoded).
        series: DICOM series in a folder (SeriesInstanceUID or index, largest first).
        volume: Volume of a 4D NIfTI (default 0).

    Returns:
        The image and its header facts.

    Raises:
        MedioError: Any failure, naming the file and the reason (see :mod:`medio.errors`).

    Example:
        >>> img = read("CT_small.dcm")  # doctest: +SKIP
        >>> img.meta.rescale_applied, img.array.min()  # doctest: +SKIP
        (True, -1024)
    """
    try:
        family = sniff(Path(path))
    except OSError as exc:
        raise MedioError(path, f"cannot open ({exc.strerror or exc})") from exc
    if family == "nifti" and volume is None:
        # The volumes of a 4D NIfTI are its frames (fMRI/DWI/cine): --frame selects one like --volume.
        volume = frame
    reader = resolve(READERS[family])
    given = {"key": key, "index": index, "frame": frame, "series": series, "volume": volume}
    accepted = _inspect.signature(reader).parameters
    options = {k: v for k, v in given.items() if v is not None and k in accepted}
    ignored = sorted(k for k, v in given.items() if v is not None and k not in accepted)
    if ignored:
        log.debug("%s: %s reader ignores %s", path, family, ignored)
    try:
        image: MedImage = reader(Path(path), **options)
    except MedioError:
        raise
    except MemoryError as exc:
        raise CorruptFile(path, "not enough memory to decode (header sizes may be corrupt)") from exc
    except _DAMAGE as exc:
        raise CorruptFile(path, f"{family} reader failed ({type(exc).__name__}: {exc})") from exc
    return image

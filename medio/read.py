"""The dispatcher: ``read(path, ...)`` picks the reader for the file's format family."""

from __future__ import annotations

import functools
import importlib
import inspect as _inspect
import logging
import struct
import traceback
import zlib
from collections.abc import Callable
from os import PathLike
from pathlib import Path
from typing import Any

from medio.errors import CorruptFile, ImageTooLarge, MedioError
from medio.libraries import need
from medio.sniff import sniff
from medio.types import MedImage

log = logging.getLogger(__name__)

# Format family → "module:function" of its reader, imported on first use so `import medio` stays light.
READERS: dict[str, str] = {
    "dicom": "medio.dicom:read_dicom",
    "dicom_series": "medio.dicom_series:read_series",
    "nifti": "medio.nifti:read_nifti",
    "nibabel": "medio.nifti:read_nibabel",
    "itk": "medio.itk:read_itk",
    "tiff": "medio.tiff:read_tiff",
    "bitmap": "medio.bitmap:read_bitmap",
    "npy": "medio.arrays:read_npy",
    "npz": "medio.arrays:read_npz",
    "hdf5": "medio.hdf5:read_hdf5",
    "matlab": "medio.matlab:read_matlab",
    "table": "medio.table:read_table_image",
    "video": "medio.video:read_video",
    "czi": "medio.czi:read_czi",
    "envi": "medio.envi:read_envi",
    "appledouble": "medio.appledouble:read_appledouble",
}

# Summaries for `inspect`, same lazy scheme.
SUMMARIZERS: dict[str, str] = {
    "dicom": "medio.dicom:summarize_dicom",
    "dicom_series": "medio.dicom_series:summarize_series",
    "nifti": "medio.nifti:summarize_nifti",
    "nibabel": "medio.nifti:summarize_nibabel",
    "itk": "medio.itk:summarize_itk",
    "tiff": "medio.tiff:summarize_tiff",
    "bitmap": "medio.bitmap:summarize_bitmap",
    "npy": "medio.arrays:summarize_npy",
    "npz": "medio.arrays:summarize_npz",
    "hdf5": "medio.hdf5:summarize_hdf5",
    "matlab": "medio.matlab:summarize_matlab",
    "table": "medio.table:summarize_table",
    "video": "medio.video:summarize_video",
    "czi": "medio.czi:summarize_czi",
    "envi": "medio.envi:summarize_envi",
    "appledouble": "medio.appledouble:summarize_appledouble",
}

# Top-level packages whose own exceptions on a file are damage to report, not bugs of medio.
_LIBRARY_PACKAGES = frozenset(
    {
        "pydicom",
        "nibabel",
        "PIL",
        "SimpleITK",
        "tifffile",
        "h5py",
        "scipy",
        "pyarrow",
        "pandas",
        "av",
        "numpy",
        "aicspylibczi",
        "_aicspylibczi",
        "spectral",
    }
)

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


@functools.cache
def _accepted(entry: str) -> frozenset[str]:
    """The keyword names the reader of a registry entry takes (read once: signatures do not change)."""
    return frozenset(_inspect.signature(resolve(entry)).parameters)


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
    need(family)  # the format's libraries, imported completely under medio's import lock
    reader = resolve(READERS[family])
    given = {"key": key, "index": index, "frame": frame, "series": series, "volume": volume}
    accepted = _accepted(READERS[family])
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
    except Exception as exc:
        raise library_failure(path, family, exc) from exc
    return image


def library_failure(path: str | PathLike[str], family: str, exc: Exception) -> Exception:
    """Turn a library's exception on damaged input into a one-line :class:`MedioError`; keep our own bugs.

    Pillow's decompression-bomb error (also raised inside pydicom's JPEG decoder) becomes ``ImageTooLarge``;
    the usual damage exceptions, or anything raised inside a format library's own code, become
    ``CorruptFile``. An exception raised by medio's own code that is not about the input is returned
    unchanged, so a bug still shows its traceback.

    Args:
        path: The file being read.
        family: Its format family.
        exc: What the reader raised.

    Returns:
        The exception to raise.
    """
    if type(exc).__name__ in ("DecompressionBombError", "DecompressionBombWarning"):
        return ImageTooLarge(path, f"image exceeds Pillow's decompression-bomb limit ({exc})")
    if isinstance(exc, _DAMAGE) or _raised_in_library(exc):
        return CorruptFile(path, f"{family} reader failed ({type(exc).__name__}: {exc})")
    return exc


def _raised_in_library(exc: BaseException) -> bool:
    # The innermost frame decides: an AttributeError inside pydicom on a malformed data set is damage, the
    # same error in medio's code is a bug.
    frames = list(traceback.walk_tb(exc.__traceback__))
    if not frames:
        return False
    module = str(frames[-1][0].f_globals.get("__name__", ""))
    return module.partition(".")[0] in _LIBRARY_PACKAGES

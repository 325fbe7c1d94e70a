"""The dispatcher: ``read(path, ...)`` picks the reader for the file's format family."""

from __future__ import annotations

import functools
import importlib
import inspect as _inspect
import logging
import os
import stat
import struct
import traceback
import zlib
from collections.abc import Callable
from os import PathLike
from pathlib import Path
from typing import Any

from medio._volume_cache import cached_volume
from medio.errors import CorruptFile, ImageTooLarge, MedioError
from medio.libraries import need
from medio.sniff import has_suffix, sniff
from medio.types import MedImage

log = logging.getLogger(__name__)

# Format family → (module, reader, summary for `inspect`), imported on first use: `import medio` stays light.
_FORMATS: dict[str, tuple[str, str, str]] = {
    "dicom": ("medio.dicom", "read_dicom", "summarize_dicom"),
    "dicom_series": ("medio.dicom_series", "read_series", "summarize_series"),
    # Derived DICOM objects, told from images by their SOP class (medio.dicom_kind).
    "dicom_sr": ("medio.dicom_sr", "read_sr", "summarize_sr"),
    "dicom_seg": ("medio.dicom_seg", "read_seg", "summarize_seg"),
    "rtstruct": ("medio.rtstruct", "read_rtstruct", "summarize_rtstruct"),
    "nifti": ("medio.nifti", "read_nifti", "summarize_nifti"),
    "nibabel": ("medio.nifti", "read_nibabel", "summarize_nibabel"),
    "itk": ("medio.itk", "read_itk", "summarize_itk"),
    "tiff": ("medio.tiff", "read_tiff", "summarize_tiff"),
    "bitmap": ("medio.bitmap", "decode_bitmap", "summarize_bitmap"),
    "npy": ("medio.arrays", "read_npy", "summarize_npy"),
    "npz": ("medio.arrays", "read_npz", "summarize_npz"),
    "hdf5": ("medio.hdf5", "read_hdf5", "summarize_hdf5"),
    "matlab": ("medio.matlab", "read_matlab", "summarize_matlab"),
    "table": ("medio.table", "read_table_image", "summarize_table"),
    "video": ("medio.video", "read_video", "summarize_video"),
    "czi": ("medio.czi", "read_czi", "summarize_czi"),
    "envi": ("medio.envi", "read_envi", "summarize_envi"),
    "appledouble": ("medio.appledouble", "read_appledouble", "summarize_appledouble"),
}
# Family → "module:function" of its reader, and of its summary for `inspect`.
READERS: dict[str, str] = {family: f"{module}:{reader}" for family, (module, reader, _) in _FORMATS.items()}
SUMMARIZERS: dict[str, str] = {
    family: f"{module}:{summary}" for family, (module, _, summary) in _FORMATS.items()
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
    """Import ``"module:function"`` (a registry entry) and return the function."""
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

    A file read again with the same options while it is unchanged (same inode, size, modification and change
    time) is a copy of the image decoded the first time (`medio._volume_cache`: every candidate of S3/S4
    and the validator read the same sources). Only formats whose image is that one file are kept this way:
    not a format that can pull in another file (an ``.mhd``/``.raw`` or ``.hdr``/``.img`` pair, ENVI,
    OME-TIFF, HDF5 links, a DICOM SR/SEG/RTSTRUCT shown as the image it refers to); a DICOM folder has its
    own key over its files (`medio.dicom_series`).

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
        family = refine_dicom(Path(path), sniff(Path(path)))
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

    def decode() -> MedImage:
        try:
            image: MedImage = reader(Path(path), **options)
        except MedioError:
            raise
        except MemoryError as exc:
            raise CorruptFile(path, "not enough memory to decode (header sizes may be corrupt)") from exc
        except Exception as exc:
            raise library_failure(path, family, exc) from exc
        return image

    version = _file_version(path, family)
    if version is None:
        return decode()
    # The path as given is in the key too: a reader writes it into the image's facts.
    return cached_volume(("file", str(path), *version, family, tuple(sorted(options.items()))), decode)


# Families whose image comes from the named file alone (see `read`); nifti and tiff also by suffix there.
# Not the derived DICOM objects: an SR, SEG or RTSTRUCT reads the images it refers to.
_ONE_FILE = frozenset({"dicom", "nifti", "tiff", "bitmap", "npy", "npz", "matlab", "table", "video", "czi"})


def _file_version(path: str | PathLike[str], family: str) -> tuple[object, ...] | None:
    """What identifies this version of a one-file image (absolute path, device, inode, size, modification and
    change time), or None when the image may depend on other files or this is not a regular file."""
    if family not in _ONE_FILE:
        return None
    if family == "nifti" and not has_suffix(path, (".nii", ".nii.gz")):
        return None  # a .hdr/.img pair
    if family == "tiff" and has_suffix(path, (".ome.tif", ".ome.tiff")):
        return None  # OME-TIFF may name other files of its dataset
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (os.path.abspath(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def refine_dicom(path: Path, family: str) -> str:
    """A DICOM file's family by its header (``family``: what `medio.sniff.sniff` said): ``"dicom_sr"``,
    ``"dicom_seg"`` or ``"rtstruct"`` for those objects, which have readers of their own; else ``family``.
    """
    if family != "dicom":
        return family
    need("dicom")
    from medio.dicom_kind import dicom_kind

    return dicom_kind(path)


def library_failure(path: str | PathLike[str], family: str, exc: Exception) -> Exception:
    """Turn a library's exception on damaged input into a one-line :class:`MedioError`; keep our own bugs.

    Pillow's decompression-bomb error (also raised inside pydicom's JPEG decoder) becomes ``ImageTooLarge``;
    the usual damage exceptions, or anything raised inside a format library's own code, become
    ``CorruptFile``. An exception raised by medio's own code that is not about the input is returned
    unchanged, so a bug still shows its traceback.
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

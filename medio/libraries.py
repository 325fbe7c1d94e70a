"""The format libraries each reader needs, imported once, completely, under one lock.

Why: ``import medio`` stays light, so readers import pydicom, nibabel, SimpleITK ... on first use. When
several threads make that first use at the same moment through different submodules (one thread runs
``import pydicom`` while another runs ``from pydicom.pixels.utils import pixel_array``), CPython's
per-module import locks hand the second thread a half-initialised package (``partially initialized module
'pydicom' has no attribute 'valuerep'``, ``_DeadlockError``), and the broken module then stays in
``sys.modules`` for the rest of the process. The rule that prevents this:

* every reader's libraries are imported by :func:`need` before the reader runs, holding :data:`_LOCK`, so two
  threads never import one package at once (a library user who never calls :func:`preload` is safe);
* multi-threaded entry points (``python -m experiments``) call :func:`preload` in the main thread before any
  worker starts, so no worker imports a format library at all, and processes forked later inherit complete
  modules. A program that knows its files may preload only their families (:func:`families_for`): a file
  whose extension did not name its family is still read safely, its libraries imported under the lock.

Imports that libraries themselves defer (pydicom's decoder plugins, Pillow's image plugins, scipy's lazy
subpackages) are forced here too, for the same reason.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Iterable
from os import PathLike

log = logging.getLogger(__name__)

# Format family → modules to import completely before its reader runs (third-party first, then medio's reader
# module, whose own import of e.g. medio._dicom_tags must not race either). Optional extras (decoder plugins
# that may not be installed) are in OPTIONAL.
LIBRARIES: dict[str, tuple[str, ...]] = {
    "dicom": (
        "pydicom",
        "pydicom.uid",
        "pydicom.valuerep",
        "pydicom.dataset",
        "pydicom.errors",
        "pydicom.pixels",
        "pydicom.pixels.utils",
        "pydicom.pixels.processing",
        "pydicom.pixels.decoders",
        "pydicom.pixels.decoders.base",
        "PIL.Image",
        "medio.dicom",
        "pydicom.filereader",
        "medio.dicom_kind",
    ),
    "dicom_series": ("medio.dicom_series",),
    "dicom_sr": ("medio.dicom_refs", "medio.dicom_seg", "medio.dicom_sr"),
    "dicom_seg": ("medio.dicom_refs", "medio.dicom_seg"),
    "rtstruct": ("skimage.draw", "medio.dicom_refs", "medio.rtstruct"),
    "nifti": (
        "nibabel",
        "nibabel.filebasedimages",
        "nibabel.minc1",
        "nibabel.minc2",
        "nibabel.freesurfer.mghformat",
        "nibabel.parrec",
        "nibabel.brikhead",
        "nibabel.ecat",
        "nibabel.analyze",
        "nibabel.spm2analyze",
        "nibabel.orientations",
        "nibabel.spatialimages",
        "medio.nifti",
    ),
    "itk": ("SimpleITK", "nrrd", "medio.itk"),
    "tiff": ("tifffile", "medio.tiff"),
    "bitmap": ("PIL.Image", "medio.bitmap"),
    "npy": ("medio.arrays",),
    "npz": ("medio.arrays",),
    "hdf5": ("h5py", "medio.hdf5"),
    "matlab": ("scipy.io", "scipy.io.matlab", "h5py", "medio.matlab"),
    "table": ("pyarrow", "pyarrow.parquet", "pandas", "PIL.Image", "medio.bitmap", "medio.table"),
    "video": ("av", "medio.video"),
    "czi": ("aicspylibczi", "medio.render", "medio.czi"),
    "envi": ("spectral", "spectral.io.envi", "medio.render", "medio.envi"),
    "appledouble": ("medio.appledouble",),
}

# Families that read through another family's modules as well (a DICOM folder reads DICOM files).
_ALSO: dict[str, tuple[str, ...]] = {"dicom_series": ("dicom",), "nibabel": ("nifti",)}
# SR, SEG and RTSTRUCT read DICOM files and their referenced series.
_ALSO.update({kind: ("dicom", "dicom_series") for kind in ("dicom_sr", "dicom_seg", "rtstruct")})

# Modules whose absence is not an error: a missing optional decoder just means fewer transfer syntaxes.
OPTIONAL = frozenset({"av", "SimpleITK", "tifffile", "h5py", "pyarrow", "pyarrow.parquet", "pandas"})

# Preloaded whatever the files are: Pillow's plugins (the validator, the scorer and the report open PNG and
# JPEG files with Pillow directly, outside medio's readers) and NumPy's readers cost almost nothing.
ALWAYS: tuple[str, ...] = ("bitmap", "npy", "npz", "appledouble")
# Names whose family only the file's content tells (medio.sniff reads the magic bytes): an extensionless file
# is most often DICOM; .hdr/.img/.dat/.raw... are Analyze (nibabel) or ENVI pairs; a .gz may hold NIfTI.
_BY_CONTENT: dict[str, tuple[str, ...]] = {
    "": ("dicom",),
    **{s: ("nifti", "envi") for s in (".hdr", ".img", ".dat", ".raw", ".bsq", ".bil", ".bip", ".sli", ".gz")},
}

_LOCK = threading.RLock()
_READY: set[str] = set()
_MISSING: dict[str, str] = {}


def need(family: str) -> None:
    """Make sure the libraries of one format family are imported completely (thread-safe, idempotent).

    Cheap after the first call (a set lookup without the lock). A library that is not installed is not an
    error here: the reader's own import then raises ``ImportError``, which the caller reports.

    Args:
        family: A key of :data:`LIBRARIES` (unknown families are ignored).
    """
    if family in _READY:
        return
    with _LOCK:
        if family in _READY:
            return
        for other in _ALSO.get(family, ()):
            need(other)
        for name in LIBRARIES.get(family, ()):
            _import(name)
        _finish(family)
        _READY.add(family)


def preload(families: Iterable[str] | None = None) -> dict[str, str]:
    """Import every format library medio may use, now, in the calling thread.

    Call it in the main thread before starting worker threads or forking worker processes. Libraries that
    are not installed are skipped; their formats then fail with a one-line error when a file needs them.

    Args:
        families: Only these families (default: all of :data:`LIBRARIES`).

    Returns:
        ``{module: reason}`` for the optional modules that could not be imported.
    """
    for family in LIBRARIES if families is None else families:
        need(family)
    return dict(_MISSING)


def families_for(paths: Iterable[str | PathLike[str]]) -> set[str]:
    """The families to preload for these files: their extensions' (`medio.sniff.EXTENSIONS`) and `ALWAYS`.

    A name whose family only its content tells (no extension, ``.hdr``, ``.gz`` ...) adds the families it
    most often is; other names (``.txt``, ``.json``) add none. A family missed here costs nothing in safety:
    its reader imports it under the lock of :func:`need` on first use.

    Args:
        paths: File names or paths (only the names are looked at; nothing is opened).

    Returns:
        Keys of :data:`LIBRARIES` (and ``"nibabel"``, which :func:`need` resolves), for :func:`preload`.
    """
    from medio.sniff import EXTENSIONS

    found = set(ALWAYS)
    for tail in {_tail(str(p)) for p in paths}:  # a few distinct tails, however many files
        family = next((f for suffix, f in EXTENSIONS.items() if tail.endswith(suffix)), None)
        if family is not None:
            found.add(family)
            continue
        last = tail.rsplit(".", 1)[-1]
        # DICOM files are often named by their UID (1.2.840...): an all-digit suffix is no extension.
        found.update(_BY_CONTENT[""] if last.isdigit() else _BY_CONTENT.get(f".{last}" if last else "", ()))
    return found


def _tail(path: str) -> str:
    """A file name's last two suffixes, lower-case (``.nii.gz``, ``.dcm``), ``""`` when it has none."""
    parts = path.replace("\\", "/").rsplit("/", 1)[-1].lower().split(".")
    if parts[0] == "":  # ".hidden" has no suffix; "._x.tif" (AppleDouble) keeps its ".tif"
        parts = parts[1:]
    return "." + ".".join(parts[-2:]) if len(parts) > 2 else "." + parts[-1] if len(parts) == 2 else ""


def _import(name: str) -> None:
    if name in _MISSING:
        return
    try:
        importlib.import_module(name)
    except ImportError as exc:
        _MISSING[name] = str(exc)
        level = logging.DEBUG if name in OPTIONAL else logging.WARNING
        log.log(level, "medio: cannot import %s (%s); formats that need it will fail to read", name, exc)


def _finish(family: str) -> None:
    """Run the deferred imports that libraries do on first use rather than at import time."""
    if family in ("bitmap", "table", "dicom") and "PIL.Image" not in _MISSING:
        from PIL import Image

        # Pillow imports its format plugins on the first Image.open (pydicom's JPEG and JPEG 2000 decoder
        # goes through it too); pydicom itself registers its decoder plugins when pydicom.pixels is imported.
        Image.init()

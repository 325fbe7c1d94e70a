"""Where the independent suite's pixels come from: data inside the nilearn and scikit-learn wheels.

- nilearn ships the MNI ICBM152 2009a template (T1 and grey/white-matter probability maps, 1 mm, 197 x 233
  x 189) under ``nilearn/datasets/data``: a real brain MR volume with tissue maps on the same grid;
- scikit-learn ships the UCI optical handwritten digits (1797 8 x 8 scans with their labels) under
  ``sklearn/datasets/data``.

Both are read from disk only, never fetched: a missing file raises :class:`MissingSource` naming it, so the
suite never shrinks silently.
"""

from __future__ import annotations

import gzip
from functools import cache
from pathlib import Path

import numpy as np

from testbed.realfiles.sources import MissingSource, module_versions

__all__ = ["MissingSource", "digits", "mni_volume", "source_versions"]

_MNI_FILES = {
    "t1": "mni_icbm152_t1_tal_nlin_sym_09a_converted.nii.gz",
    "gm": "mni_icbm152_gm_tal_nlin_sym_09a_converted.nii.gz",
    "wm": "mni_icbm152_wm_tal_nlin_sym_09a_converted.nii.gz",
}


def _package_file(package: str, rel: str) -> Path:
    import importlib

    try:
        module = importlib.import_module(package)
    except ImportError as exc:
        raise MissingSource(f"the independent suite needs {package} (its bundled {rel})") from exc
    path = Path(str(module.__file__)).parent / rel
    if not path.is_file():
        raise MissingSource(f"{package} does not ship {rel}")
    return path


@cache
def mni_volume(kind: str) -> tuple[np.ndarray, str]:
    """One MNI ICBM152 2009a map as a canonical ``(Z, Y, X)`` uint8 array (values 0-255, 1 mm voxels).

    Args:
        kind: ``t1``, ``gm`` or ``wm``.

    Returns:
        ``(array, origin)``, origin ``"nilearn:datasets/data/<file>"``.
    """
    import nibabel as nib

    rel = f"datasets/data/{_MNI_FILES[kind]}"
    img = nib.load(_package_file("nilearn", rel))
    xyz = np.asarray(img.dataobj)  # type: ignore[attr-defined]
    # The template stores 0-255 as floats; rounding keeps every value and makes the bytes we write stable.
    zyx = np.ascontiguousarray(np.rint(xyz).astype(np.uint8).T)
    zyx.setflags(write=False)
    return zyx, f"nilearn:{rel}"


@cache
def digits() -> tuple[np.ndarray, np.ndarray, str]:
    """scikit-learn's optical digits: ``(images uint8 (1797, 8, 8) with values 0-16, labels, origin)``."""
    rel = "datasets/data/digits.csv.gz"
    with gzip.open(_package_file("sklearn", rel), "rt") as fh:
        raw = np.loadtxt(fh, delimiter=",")
    images = raw[:, :-1].astype(np.uint8).reshape(-1, 8, 8)
    labels = raw[:, -1].astype(np.int64)
    return images, labels, f"scikit-learn:{rel}"


def source_versions() -> dict[str, str]:
    """Versions of the packages whose data and writers make up the suite (same versions => same bytes)."""
    return module_versions(
        {
            "nilearn": "nilearn",
            "scikit-learn": "sklearn",
            "h5py (writer)": "h5py",
            "pydicom (writer)": "pydicom",
            "tifffile (writer)": "tifffile",
        }
    )

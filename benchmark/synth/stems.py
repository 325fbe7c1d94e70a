"""Source-stem normalisation for the ground truth of the bundled suite (SPEC §3.1, "Source stem").

The generator writes each ground-truth ``source_stem`` already normalised the way the reference scorer
normalises a prediction's source, so a prediction that names the right file passes the source gate. Only the
generic rules are implemented; :func:`check_generic` rejects names that would trigger a dataset-specific rule
of the reference (medical-7 radial paths, DynamicNuclearNet, ``test_NN``, ``brain_pN``, BIDS ``p``/``k``
aliases), so the suite never depends on those quirks.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

# SPEC §3.1: the reference strips the first matching extension of this list, in this order
# (.mhd/.nrrd/.csv/.raw are
# deliberately absent there, so "case.nrrd" normalises to "casenrrd").
_STRIPPED_EXTENSIONS = (
    ".ome.tiff",
    ".ome.tif",
    ".nii.gz",
    ".nii",
    ".mha",
    ".tiff",
    ".tif",
    ".czi",
    ".dcm",
    ".dicom",
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".bmp",
    ".json",
    ".txt",
    ".npy",
    ".npz",
    ".h5",
    ".hdf5",
    ".mat",
    ".img",
    ".pgm",
    ".ppm",
    ".svs",
    ".vsi",
    ".avi",
    ".mp4",
    ".mov",
    ".webm",
    ".webp",
    ".pdf",
)
_STRIPPED_SUFFIXES = ("_flair", "_t1ce", "_t1", "_t2", "_seg", "_mask")
_SPECIAL = re.compile(r"radial_\d+_\d+|dynamicnuclearnet|test_\d+|brain_p\d+", re.I)
_SHORT_ID = re.compile(r"(sub_)?[pk]0*\d+(_dti)?")


def normalize_source_stem(value: str) -> str:
    """Normalise a path or id the way the reference scorer's generic rules do.

    Args:
        value: A path (``data/a/B-1.nii.gz``) or an id.

    Returns:
        The basename without one known extension, lower-cased, ``-``/space turned into ``_``, other
        punctuation
        dropped, and one channel suffix (``_t1``, ``_seg``, ...) stripped.
    """
    raw = unquote(str(value)).strip().strip("'\"").replace("\\", "/")
    base = raw.rstrip("/").rsplit("/", 1)[-1]
    for ext in _STRIPPED_EXTENSIONS:
        if base.lower().endswith(ext):
            base = base[: -len(ext)]
            break
    stem = re.sub(r"[^a-z0-9_]+", "", base.lower().replace("-", "_").replace(" ", "_"))
    for suffix in _STRIPPED_SUFFIXES:
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return stem


def check_generic(value: str) -> str:
    """Normalise ``value`` and make sure no dataset-specific rule of the reference scorer applies to it.

    Args:
        value: A path or id the ground truth will use as a source.

    Returns:
        The normalised stem.

    Raises:
        ValueError: When the value would hit a special rule or normalises to nothing.
    """
    stem = normalize_source_stem(value)
    base = value.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    if (
        not stem
        or _SPECIAL.search(value)
        or _SHORT_ID.fullmatch(stem)
        or re.search(r"frame[_-]?\d+", base, re.I)
    ):
        raise ValueError(
            f"synthetic source name {value!r} would trigger a special rule of the reference scorer"
        )
    return stem

"""NumPy ``.npy`` (memory-mapped) and ``.npz`` (by key, then by index into a stack or record array)."""

from __future__ import annotations

import logging
import tokenize
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from medio._axes import check_size, guess_axes
from medio.errors import CorruptFile, KeyNotFound, UnsupportedFormat
from medio.types import MedImage, Meta

log = logging.getLogger(__name__)

_NPY_MAGIC = b"\x93NUMPY"


def select(path: Path, arr: Any, key: str | None, index: int | None) -> np.ndarray:
    """Pick a record field (``key`` on a structured array) and/or an item along axis 0 (``index``) of an
    array, memory-mapped or an h5py dataset; ``KeyNotFound`` for an unknown field or an index out of range.
    """
    if index is not None:
        if not arr.shape or not -arr.shape[0] <= index < arr.shape[0]:
            raise KeyNotFound(path, f"index {index} out of range for array of shape {list(arr.shape)}")
        arr = arr[index]
    if key is not None and arr.dtype.names:
        if key not in arr.dtype.names:
            raise KeyNotFound(path, f"field {key!r} not in record array; fields: {list(arr.dtype.names)}")
        arr = arr[key]
    return np.asarray(arr)


def _meta(fmt: str, path: Path, arr: np.ndarray, keys: list[str] | None, header: dict[str, Any]) -> Meta:
    return Meta(format=fmt, path=str(path), axes=guess_axes(arr.shape, arr.dtype), keys=keys, header=header)


def read_npy(path: str | Path, *, key: str | None = None, index: int | None = None) -> MedImage:
    """Read a ``.npy`` array (memory-mapped, so ``index`` reads only one item).

    Args:
        path: The file.
        key: Field of a structured array.
        index: Item along axis 0.

    Returns:
        The (selected) array; axes guessed from its shape (C order assumed: ``(Z, H, W)``).

    Raises:
        UnsupportedFormat: Object (pickled) arrays are refused.
        CorruptFile: Malformed or truncated file.
        KeyNotFound: See :func:`select`.
    """
    path = Path(path)
    with path.open("rb") as fh:
        magic = fh.read(len(_NPY_MAGIC))
    if magic != _NPY_MAGIC:
        # np.load would take a zip for an .npz and raise zipfile's errors; a .npy starts with its magic.
        raise CorruptFile(path, f"not a .npy file (starts with {magic!r}, expected {_NPY_MAGIC!r})")
    try:
        raw = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc) or "Python objects" in str(exc):
            raise UnsupportedFormat(path, "object arrays need pickle, which medio refuses to load") from exc
        raise CorruptFile(path, f"cannot parse .npy ({exc})") from exc
    except (OSError, EOFError, SyntaxError, tokenize.TokenError) as exc:
        # The header is a Python dict literal that NumPy parses with the tokenizer: a cut header raises
        # tokenize's own error (NEP 1, the .npy format).
        raise CorruptFile(path, f"cannot parse .npy header ({type(exc).__name__}: {exc})") from exc
    if index is None and key is None:
        check_size(path, raw.shape, raw.dtype)
    arr = select(path, raw, key, index)
    header = {"source_shape": list(raw.shape), "fields": list(raw.dtype.names or [])}
    return MedImage(arr, _meta("npy", path, arr, None, header))


def _npz_keys(path: Path) -> list[str]:
    try:
        with zipfile.ZipFile(path) as zf:
            return [n[:-4] if n.endswith(".npy") else n for n in zf.namelist()]
    except (zipfile.BadZipFile, OSError) as exc:
        raise CorruptFile(path, f"cannot open .npz archive ({exc})") from exc


def read_npz(path: str | Path, *, key: str | None = None, index: int | None = None) -> MedImage:
    """Read one member of an ``.npz`` archive.

    Args:
        path: The file.
        key: Member name; default the only member, else the first member with at least two dimensions
            (logged). When the archive has a single structured member, ``key`` may name one of its fields.
        index: Item along axis 0 of the member (a stack of images or a record array).

    Returns:
        The selected array; ``meta.keys`` lists the members.

    Raises:
        KeyNotFound: Unknown member/field or index out of range.
        CorruptFile: Malformed archive.
    """
    path = Path(path)
    keys = _npz_keys(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            member = key if key in keys else None
            field = key if member is None else None
            if member is None:
                member = _default_member(path, npz, keys, key)
            arr = select(path, npz[member], field, index)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise CorruptFile(path, f"cannot read .npz member ({exc})") from exc
    return MedImage(arr, _meta("npz", path, arr, keys, {"key": member}))


def _default_member(path: Path, npz: Any, keys: list[str], key: str | None) -> str:
    if not keys:
        raise KeyNotFound(path, "the archive is empty")
    if key is not None:
        # ``key`` may be a field of the archive's single structured member.
        names = npz[keys[0]].dtype.names if len(keys) == 1 else None
        if not names or key not in names:
            raise KeyNotFound(path, f"key {key!r} not in archive; keys: {keys}")
        return keys[0]
    if len(keys) == 1:
        return keys[0]
    for name in keys:
        if npz[name].ndim >= 2:
            log.info("%s: no key given, reading %r of %s", path, name, keys)
            return name
    return keys[0]


def summarize_npy(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: shape, dtype and record fields of a ``.npy``, from its header (memory-mapped; no
    data read); ``CorruptFile`` when it cannot be parsed.
    """
    path = Path(path)
    try:
        raw = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise CorruptFile(path, f"cannot parse .npy ({exc})") from exc
    return {"shape": list(raw.shape), "dtype": str(raw.dtype), "fields": list(raw.dtype.names or [])}


def summarize_npz(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: ``keys`` and ``members`` (name → shape/dtype) of an ``.npz``, from the member
    headers only; ``CorruptFile`` for a malformed archive.
    """
    from numpy.lib import format as npformat

    path = Path(path)
    members: dict[str, Any] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                with zf.open(name) as fh:
                    version = npformat.read_magic(fh)
                    if version == (1, 0):
                        shape, _, dtype = npformat.read_array_header_1_0(fh)
                    else:
                        shape, _, dtype = npformat.read_array_header_2_0(fh)
                members[name.removesuffix(".npy")] = {"shape": list(shape), "dtype": str(dtype)}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise CorruptFile(path, f"cannot read .npz archive ({exc})") from exc
    return {"keys": list(members), "members": members}

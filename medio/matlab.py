"""MATLAB ``.mat``: v4–v7 via scipy.io, v7.3 (HDF5 with a 512-byte MATLAB userblock) via h5py.

MATLAB stores arrays column-major; a v7.3 file therefore shows every dataset with its axes reversed, and we
transpose back to MATLAB's (rows, cols, ...) order. MATLAB image volumes are conventionally
``rows × cols × slices``, so a 3D array whose last axis is not colour is moved to canonical ``(Z, H, W)``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from medio._axes import check_size, guess_axes
from medio.errors import CorruptFile, KeyNotFound, NotAnImage, UnsupportedFormat
from medio.mat_vars import (
    MAX_WALK_BYTES,
    MatVar,
    choose_image,
    describe,
    get_v5_value,
    get_v73,
    matlab_class,
    tokens,
    walk_v5_value,
    walk_v73,
)
from medio.sniff import HDF5_SIGNATURE
from medio.types import MedImage, Meta

log = logging.getLogger(__name__)


def is_v73(path: Path) -> bool:
    """Whether a ``.mat`` file is v7.3 (HDF5): the HDF5 signature after the 512-byte userblock, or first."""
    with path.open("rb") as fh:
        head = fh.read(520)
    return head[512:520] == HDF5_SIGNATURE or head.startswith(HDF5_SIGNATURE)


def to_canonical(arr: np.ndarray) -> tuple[np.ndarray, str]:
    """Move a MATLAB ``rows × cols × slices`` array to ``(Z, H, W)``, keeping 2D and colour arrays; returns
    the array and its axes.
    """
    # MATLAB stores RGB as rows × cols × 3; any other depth is a stack of slices.
    if arr.ndim == 3 and arr.shape[-1] != 3:
        return np.moveaxis(arr, -1, 0), "ZYX"
    if arr.ndim == 4 and arr.shape[2] == 3:
        # rows × cols × 3 × frames
        return np.moveaxis(arr, -1, 0), "ZYXC"
    return arr, guess_axes(arr.shape, "uint8" if arr.ndim == 3 else arr.dtype)


def _v5_variables(path: Path) -> tuple[list[MatVar], list[str]]:
    """Every variable of a v5 file: ``whosmat`` for the top level, structs and cells loaded and walked."""
    import scipy.io

    try:
        top = scipy.io.whosmat(str(path))
    except (ValueError, OSError, TypeError, EOFError) as exc:
        raise CorruptFile(path, f"cannot parse MATLAB v5 file ({exc})") from exc
    names = [name for name, _, _ in top]
    nested = [name for name, _, cls in top if cls in ("struct", "cell", "object")]
    loaded: dict[str, Any] = {}
    if nested and path.stat().st_size <= MAX_WALK_BYTES:
        loaded = _load_v5(path, nested)
    out: list[MatVar] = []
    for name, shape, cls in top:
        if name in loaded:
            walk_v5_value(name, loaded[name], out)
        else:
            out.append(MatVar(name, tuple(int(s) for s in shape), cls))
    return out, names


def _load_v5(path: Path, names: list[str]) -> dict[str, Any]:
    import scipy.io

    try:
        # struct_as_record=False keeps structs as objects with field names, squeeze_me=False keeps MATLAB's
        # shapes (a 1×64 vector stays 1×64, which is how it is recognised as a vector).
        return dict(
            scipy.io.loadmat(str(path), variable_names=names, struct_as_record=False, squeeze_me=False)
        )
    except (ValueError, OSError, TypeError, EOFError, NotImplementedError) as exc:
        raise CorruptFile(path, f"cannot read variables {names} ({exc})") from exc


def _chosen(path: Path, variables: list[MatVar], key: str | None) -> tuple[str, str]:
    if key:
        return key, "given"
    found, why = choose_image(variables)
    if found is None:
        raise NotAnImage(path, f"no image-like variable ({why}); the file holds {describe(variables)}")
    log.info("%s: no key given, reading %r (%s)", path, found.path, why)
    return found.path, why


def _read_v5(path: Path, key: str | None) -> tuple[np.ndarray, list[str], str, str]:
    variables, names = _v5_variables(path)
    name, why = _chosen(path, variables, key)
    top = _top_name(path, name)
    parts = tokens(name)
    if top not in names:
        raise KeyNotFound(path, f"variable {top!r} not found; variables: {names}")
    listed = next((v for v in variables if v.path == top), None)
    if listed is not None and len(parts) == 1:
        check_size(path, listed.shape, "float64")  # whosmat reads headers only; loadmat would read it all
    value = get_v5_value(path, _load_v5(path, [top])[top], parts[1:], name)
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind in "US":
        raise UnsupportedFormat(path, f"variable {name!r} is not a numeric array ({arr.dtype})")
    return arr, names, name, why


def _read_v73(path: Path, key: str | None) -> tuple[np.ndarray, list[str], str, str]:
    import h5py

    try:
        h5 = h5py.File(path, "r")
    except OSError as exc:
        raise CorruptFile(path, f"cannot open MATLAB v7.3 (HDF5) file ({exc})") from exc
    with h5:
        variables: list[MatVar] = []
        walk_v73(h5, variables)
        names = [k for k in h5 if not k.startswith("#")]
        name, why = _chosen(path, variables, key)
        if str(_top_name(path, name)) not in names:
            raise KeyNotFound(path, f"variable {_top_name(path, name)!r} not found; variables: {names}")
        dset = get_v73(path, h5, name)
        if (
            matlab_class(dset) in ("cell", "struct")
            or dset.dtype.kind in "OV"
            or dset.dtype == h5py.ref_dtype
        ):
            raise UnsupportedFormat(path, f"variable {name!r} is not a numeric array")
        check_size(path, dset.shape, dset.dtype)
        arr = np.asarray(dset[()]).T  # HDF5 shows MATLAB's column-major array with reversed axes.
    return arr, names, name, why


def _top_name(path: Path, name: str) -> str:
    try:
        return str(tokens(name)[0])
    except (ValueError, IndexError) as exc:
        raise KeyNotFound(path, f"cannot parse variable path {name!r}") from exc


def read_matlab(path: str | Path, *, key: str | None = None, index: int | None = None) -> MedImage:
    """Read one variable of a MATLAB file.

    Args:
        path: The ``.mat`` file (v5 or v7.3).
        key: Variable path (``"s.field"``, ``"c{2}"``, ``"s.cells{1}.img"``); default the image variable
            chosen by :func:`medio.mat_vars.choose_image` (logged, and named in ``meta.header["variable"]``).
        index: Item along the canonical axis 0 (a slice of a volume).

    Returns:
        The array in canonical order; ``meta.keys`` lists the variables; ``meta.header["mat_version"]``.

    Raises:
        KeyNotFound: Unknown variable/field or index out of range.
        UnsupportedFormat: The variable is a cell/struct/char array.
        NotAnImage: No key given and no variable looks like an image (only vectors or tiny arrays).
        CorruptFile: Malformed file.
    """
    path = Path(path)
    v73 = is_v73(path)
    arr, names, chosen, why = _read_v73(path, key) if v73 else _read_v5(path, key)
    matlab_shape = list(arr.shape)
    arr, axes = to_canonical(arr)
    if index is not None:
        if arr.ndim < 3 or not -arr.shape[0] <= index < arr.shape[0]:
            raise KeyNotFound(path, f"index {index} out of range for array of shape {list(arr.shape)}")
        arr, axes = arr[index], axes[1:]
    meta = Meta(
        format="matlab",
        path=str(path),
        axes=axes,
        keys=names,
        header={
            "mat_version": "7.3" if v73 else "5",
            "key": key,
            "variable": chosen,
            "variable_rule": why,
            "matlab_shape": matlab_shape,
        },
    )
    return MedImage(np.ascontiguousarray(arr), meta)


def summarize_matlab(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: ``mat_version``, ``keys`` (top-level names), ``variables`` (every MATLAB path,
    structs and cells walked → MATLAB shape and class, at most 500), ``image_variable`` (the one ``read``
    would take and the evidence, or ``None`` and why not); ``CorruptFile`` for a malformed file.
    """
    path = Path(path)
    if is_v73(path):
        import h5py

        try:
            with h5py.File(path, "r") as h5:
                variables: list[MatVar] = []
                walk_v73(h5, variables)
                keys = [k for k in h5 if not k.startswith("#")]
        except OSError as exc:
            raise CorruptFile(path, f"cannot open MATLAB v7.3 (HDF5) file ({exc})") from exc
        version = "7.3"
    else:
        variables, keys = _v5_variables(path)
        version = "5"
    found, why = choose_image(variables)
    return {
        "mat_version": version,
        "keys": keys,
        "variables": {v.path: {"shape": list(v.shape), "class": v.cls} for v in variables},
        "image_variable": {"path": found.path if found else None, "rule": why},
        "how_to_read": "read(path, key='<variable path, e.g. s.img or c{2}>')",
    }

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
from medio.errors import CorruptFile, KeyNotFound, UnsupportedFormat
from medio.sniff import HDF5_SIGNATURE
from medio.types import MedImage, Meta

log = logging.getLogger(__name__)


def is_v73(path: Path) -> bool:
    """Return True for a MATLAB v7.3 (HDF5-based) file.

    Args:
        path: The ``.mat`` file.

    Returns:
        Whether the HDF5 signature follows the 512-byte userblock (or starts the file).
    """
    with path.open("rb") as fh:
        head = fh.read(520)
    return head[512:520] == HDF5_SIGNATURE or head.startswith(HDF5_SIGNATURE)


def to_canonical(arr: np.ndarray) -> tuple[np.ndarray, str]:
    """Move a MATLAB ``rows × cols × slices`` array to ``(Z, H, W)``; keep 2D and colour arrays.

    Args:
        arr: An array in MATLAB axis order.

    Returns:
        The array in canonical order and its axes.
    """
    # MATLAB stores RGB as rows × cols × 3; any other depth is a stack of slices.
    if arr.ndim == 3 and arr.shape[-1] != 3:
        return np.moveaxis(arr, -1, 0), "ZYX"
    if arr.ndim == 4 and arr.shape[2] == 3:
        # rows × cols × 3 × frames
        return np.moveaxis(arr, -1, 0), "ZYXC"
    return arr, guess_axes(arr.shape, "uint8" if arr.ndim == 3 else arr.dtype)


def _numeric_vars(variables: list[tuple[str, tuple[int, ...], str]]) -> list[str]:
    return [
        name for name, shape, cls in variables if cls not in ("struct", "cell", "char") and len(shape) >= 2
    ]


def _read_v5(path: Path, key: str | None) -> tuple[np.ndarray, list[str]]:
    import scipy.io

    try:
        variables = scipy.io.whosmat(str(path))
    except (ValueError, OSError, TypeError, EOFError) as exc:
        raise CorruptFile(path, f"cannot parse MATLAB v5 file ({exc})") from exc
    names = [v[0] for v in variables]
    top, _, rest = (key or "").partition(".")
    if not top:
        numeric = [n for n, s, _ in variables if n in _numeric_vars(variables) and min(s) > 1] or names
        if not numeric:
            raise KeyNotFound(path, "the file holds no variables")
        top = max(numeric, key=lambda n: int(np.prod(next(s for m, s, _ in variables if m == n))))
        log.info("%s: no key given, reading the largest numeric variable %r", path, top)
    if top not in names:
        raise KeyNotFound(path, f"variable {top!r} not found; variables: {names}")
    shape = next(s for n, s, _ in variables if n == top)
    check_size(path, tuple(shape), "float64")  # whosmat reads headers only; loadmat would read it all
    try:
        data = scipy.io.loadmat(str(path), variable_names=[top], simplify_cells=True)
    except (ValueError, OSError, TypeError, EOFError, NotImplementedError) as exc:
        raise CorruptFile(path, f"cannot read variable {top!r} ({exc})") from exc
    value: Any = data[top]
    for part in filter(None, rest.split(".")):
        if not isinstance(value, dict) or part not in value:
            raise KeyNotFound(path, f"field {part!r} not found in {key!r}")
        value = value[part]
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind in "US":
        raise UnsupportedFormat(path, f"variable {key or top!r} is not a numeric array ({arr.dtype})")
    return arr, names


def _read_v73(path: Path, key: str | None) -> tuple[np.ndarray, list[str]]:
    import h5py

    from medio.hdf5 import dataset_tree

    try:
        h5 = h5py.File(path, "r")
    except OSError as exc:
        raise CorruptFile(path, f"cannot open MATLAB v7.3 (HDF5) file ({exc})") from exc
    with h5:
        tree = {k: v for k, v in dataset_tree(h5).items() if not k.startswith("#")}
        name = (key or "").replace(".", "/")
        if not name:
            candidates = sorted(
                (k for k, v in tree.items() if len(v["shape"]) >= 2 and min(v["shape"]) > 1),
                key=lambda k: -int(np.prod(tree[k]["shape"])),
            )
            if not candidates:
                raise KeyNotFound(path, "the file holds no numeric arrays")
            name = candidates[0]
        if name not in tree:
            raise KeyNotFound(path, f"variable {name!r} not found; variables: {list(tree)}")
        dset = h5[name]
        if dset.attrs.get("MATLAB_class", b"") in (b"cell", b"struct") or dset.dtype.kind in "OV":
            raise UnsupportedFormat(path, f"variable {name!r} is not a numeric array")
        check_size(path, dset.shape, dset.dtype)
        arr = np.asarray(dset[()]).T  # HDF5 shows MATLAB's column-major array with reversed axes.
    return arr, list(tree)


def read_matlab(path: str | Path, *, key: str | None = None, index: int | None = None) -> MedImage:
    """Read one variable of a MATLAB file.

    Args:
        path: The ``.mat`` file (v5 or v7.3).
        key: Variable name (``"s.field"`` reaches into a struct); default the largest numeric array (logged).
        index: Item along the canonical axis 0 (a slice of a volume).

    Returns:
        The array in canonical order; ``meta.keys`` lists the variables; ``meta.header["mat_version"]``.

    Raises:
        KeyNotFound: Unknown variable/field or index out of range.
        UnsupportedFormat: The variable is a cell/struct/char array.
        CorruptFile: Malformed file.
    """
    path = Path(path)
    v73 = is_v73(path)
    arr, names = _read_v73(path, key) if v73 else _read_v5(path, key)
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
        header={"mat_version": "7.3" if v73 else "5", "key": key, "matlab_shape": matlab_shape},
    )
    return MedImage(np.ascontiguousarray(arr), meta)


def summarize_matlab(path: str | Path) -> dict[str, Any]:
    """List a MATLAB file's variables without loading them (``whosmat``, or the HDF5 tree for v7.3).

    Args:
        path: The file.

    Returns:
        ``mat_version``, ``keys`` and ``variables`` (name → MATLAB shape and class).

    Raises:
        CorruptFile: Malformed file.
    """
    path = Path(path)
    if is_v73(path):
        import h5py

        from medio.hdf5 import dataset_tree

        try:
            with h5py.File(path, "r") as h5:
                tree = {k: v for k, v in dataset_tree(h5).items() if not k.startswith("#")}
        except OSError as exc:
            raise CorruptFile(path, f"cannot open MATLAB v7.3 (HDF5) file ({exc})") from exc
        variables = {k: {"shape": v["shape"][::-1], "class": v["dtype"]} for k, v in tree.items()}
        return {"mat_version": "7.3", "keys": list(variables), "variables": variables}
    import scipy.io

    try:
        found = scipy.io.whosmat(str(path))
    except (ValueError, OSError, TypeError, EOFError) as exc:
        raise CorruptFile(path, f"cannot parse MATLAB v5 file ({exc})") from exc
    variables = {name: {"shape": list(shape), "class": cls} for name, shape, cls in found}
    return {"mat_version": "5", "keys": list(variables), "variables": variables}

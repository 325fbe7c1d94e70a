"""HDF5 (``.h5``, ``.hdf5``) via h5py: datasets by path, read partially when an index is given."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from medio._axes import check_size, guess_axes
from medio.arrays import select
from medio.errors import CorruptFile, KeyNotFound, UnsupportedFormat
from medio.types import MedImage, Meta, jsonable

log = logging.getLogger(__name__)

MAX_LISTED = 500


def _open(path: Path) -> Any:
    import h5py

    try:
        return h5py.File(path, "r")
    except OSError as exc:
        raise CorruptFile(path, f"cannot open HDF5 file ({exc})") from exc


def dataset_tree(h5: Any, limit: int = MAX_LISTED) -> dict[str, dict[str, Any]]:
    """Dataset path → ``{"shape": [...], "dtype": "..."}`` of an open file or group, in visit order, up to
    ``limit`` entries.
    """
    import h5py

    out: dict[str, dict[str, Any]] = {}

    def visit(name: str, obj: Any) -> int | None:
        if isinstance(obj, h5py.Dataset):
            out[name] = {"shape": list(obj.shape), "dtype": str(obj.dtype)}
        return 1 if len(out) >= limit else None

    h5.visititems(visit)
    return out


def read_hdf5(path: str | Path, *, key: str | None = None, index: int | None = None) -> MedImage:
    """Read one HDF5 dataset.

    Args:
        path: The file.
        key: Dataset path (``"group/images"``); default the first dataset with at least 2 dimensions (logged).
            A field name of a compound dataset may follow after a colon (``"table:image"``).
        index: Item along axis 0 (only that item is read from disk).

    Returns:
        The dataset (or item) with attributes in ``meta.header``; ``meta.keys`` lists dataset paths.

    Raises:
        KeyNotFound: Unknown dataset or index out of range.
        UnsupportedFormat: The path names a group, not a dataset.
        CorruptFile: Unreadable file.
    """
    import h5py

    path = Path(path)
    with _open(path) as h5:
        tree = dataset_tree(h5)
        name, _, field = (key or "").partition(":")
        if not name:
            candidates = [k for k, v in tree.items() if len(v["shape"]) >= 2] or list(tree)
            if not candidates:
                raise KeyNotFound(path, "the file holds no datasets")
            name = candidates[0]
            if len(tree) > 1:
                log.info("%s: no key given, reading %r of %d datasets", path, name, len(tree))
        if name not in h5:
            raise KeyNotFound(path, f"dataset {name!r} not found; datasets: {list(tree)[:50]}")
        obj = h5[name]
        if not isinstance(obj, h5py.Dataset):
            raise UnsupportedFormat(
                path, f"{name!r} is a group; datasets inside: {list(dataset_tree(obj))[:50]}"
            )
        if index is None:
            check_size(path, obj.shape, obj.dtype)
        try:
            arr = select(path, obj, field or None, index)
        except (OSError, ValueError, TypeError) as exc:
            raise CorruptFile(path, f"cannot read dataset {name!r} ({exc})") from exc
        attrs = {k: jsonable(v) for k, v in list(obj.attrs.items())[:50]}
    meta = Meta(
        format="hdf5",
        path=str(path),
        axes=guess_axes(arr.shape, arr.dtype),
        keys=list(tree),
        header={"key": name, "attrs": attrs, "source_shape": tree[name]["shape"]},
    )
    return MedImage(arr, meta)


def summarize_hdf5(path: str | Path) -> dict[str, Any]:
    """Summarise an HDF5 file: its dataset tree (shapes and dtypes only, nothing read).

    Args:
        path: The file.

    Returns:
        ``keys`` and ``datasets`` (path → shape/dtype), truncated at 500 entries.

    Raises:
        CorruptFile: Unreadable file.
    """
    with _open(Path(path)) as h5:
        tree = dataset_tree(h5)
        root_attrs = {k: jsonable(v) for k, v in list(h5.attrs.items())[:20]}
    return {"keys": list(tree), "datasets": tree, "attrs": root_attrs}

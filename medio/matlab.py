"""MATLAB ``.mat``: v4–v7 via scipy.io, v7.3 (HDF5 with a 512-byte MATLAB userblock) via h5py.

MATLAB stores arrays column-major; a v7.3 file therefore shows every dataset with its axes reversed, and we
transpose back to MATLAB's (rows, cols, ...) order. MATLAB image volumes are conventionally
``rows × cols × slices``, so a 3D array whose last axis is not colour is moved to canonical ``(Z, H, W)``.

Variables are named by MATLAB paths: ``s.field``, ``c{2}`` (cell element, 1-based linear index, MATLAB's
column-major order), ``s(2).field`` (element of a struct array, v5), nested freely (``s.cells{1}.img``). In a
v7.3 (HDF5) file a struct is a group with ``MATLAB_class="struct"``, a cell is a dataset of object references
into ``#refs#``, and every array is stored with its axes reversed; shapes here are MATLAB's (rows, cols, ...).

The image (:func:`choose_image`): only numeric or logical arrays whose two largest dimensions are both at
least :data:`MIN_SIDE` (so never a 1×N or N×1 vector, never an axis or coordinate vector beside the data,
never a tiny array); among those whose rows × cols is at least a quarter of the largest, a name that says
image (``img``, ``image``, ``data``, ``vol`` ...) wins over an unremarkable one, which wins over one that says
mask/label; then the largest rows × cols, then the most elements.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from medio._axes import check_size, guess_axes
from medio.errors import CorruptFile, KeyNotFound, NotAnImage, UnsupportedFormat
from medio.sniff import HDF5_SIGNATURE
from medio.types import MedImage, Meta

log = logging.getLogger(__name__)

# A side of 5 keeps 1×N/N×1 vectors, scalars and 3×3/4×4 transforms out and a 6×5×4 test volume in.
MIN_SIDE = 5
MAX_VARIABLES = 500
MAX_CELL_ITEMS = 64
# Structs and cells are loaded to be walked; above this file size only the top level is listed (v5).
MAX_WALK_BYTES = 256 * 1024**2
_IMAGE_NAMES = re.compile(
    r"^(img|image|images|im|data|vol|volume|scan|frame|frames|stack|slice|slices|pic|I)\d*$", re.I
)
_MASK_NAMES = re.compile(r"(mask|label|seg|gt|roi|annot|truth|lbl)", re.I)
_NUMERIC = frozenset(
    {"double", "single", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "logical"}
)
_TOKEN = re.compile(r"\.?([A-Za-z_#][\w#]*)|\{(\d+)\}|\((\d+)\)")


@dataclass(frozen=True)
class MatVar:
    """One leaf or container of a MATLAB file.

    Attributes:
        path: MATLAB path (``s.img``, ``c{2}``).
        shape: MATLAB shape (rows, cols, ...).
        cls: MATLAB class (``double``, ``uint8``, ``logical``, ``char``, ``struct``, ``cell`` ...).
    """

    path: str
    shape: tuple[int, ...]
    cls: str

    @property
    def leaf_name(self) -> str:
        """The last name in the path (``img`` for ``s.cells{1}.img``)."""
        names = re.findall(r"[A-Za-z_]\w*", self.path)
        return names[-1] if names else self.path

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for ``inspect``."""
        return {"path": self.path, "shape": list(self.shape), "class": self.cls}


def tokens(path: str) -> list[str | int]:
    """Split a MATLAB path (``/`` accepted for ``.``) into names and 0-based element indices: ``"s.c{2}"`` is
    ``["s", "c", 1]``; ``ValueError`` when the path is not of that form.
    """
    text = path.replace("/", ".")
    out: list[str | int] = []
    at = 0
    while at < len(text):
        found = _TOKEN.match(text, at)
        if found is None or found.end() == at:
            raise ValueError(f"cannot parse MATLAB path {path!r} at {text[at:]!r}")
        name, cell, element = found.groups()
        out.append(name if name is not None else int(cell or element) - 1)
        at = found.end()
    return out


def _v5_class(value: np.ndarray) -> str:
    if value.dtype.kind in "US":
        return "char"
    if value.dtype == bool:
        return "logical"
    return {"float64": "double", "float32": "single"}.get(str(value.dtype), str(value.dtype))


def walk_v5_value(path: str, value: Any, out: list[MatVar]) -> None:
    """Append ``value`` (as ``loadmat(struct_as_record=False, squeeze_me=False)`` gives it) and its parts to
    ``out`` (up to :data:`MAX_VARIABLES`).
    """
    from scipy.io.matlab import mat_struct

    if len(out) >= MAX_VARIABLES:
        return
    arr = np.asarray(value) if not isinstance(value, mat_struct) else np.array([[value]], dtype=object)
    shape = tuple(int(s) for s in arr.shape)
    if arr.dtype != object:
        out.append(MatVar(path, shape, _v5_class(arr)))
        return
    items = arr.ravel(order="F")  # MATLAB's linear index is column-major
    if items.size and all(isinstance(v, mat_struct) for v in items):
        out.append(MatVar(path, shape, "struct"))
        for k, item in enumerate(items[:MAX_CELL_ITEMS]):
            prefix = path if items.size == 1 else f"{path}({k + 1})"
            for field in item._fieldnames:
                walk_v5_value(f"{prefix}.{field}", getattr(item, field), out)
        return
    out.append(MatVar(path, shape, "cell"))
    for k, item in enumerate(items[:MAX_CELL_ITEMS]):
        walk_v5_value(f"{path}{{{k + 1}}}", item, out)


def get_v5_value(file: Path, top: Any, parts: list[str | int], key: str) -> Any:
    """Follow ``parts`` (after the variable name) into a loaded v5 value; ``KeyNotFound`` for a field or
    element that does not exist (``key``, the full path, names it).
    """
    from scipy.io.matlab import mat_struct

    value = top
    for part in parts:
        arr = np.asarray(value) if not isinstance(value, mat_struct) else None
        if isinstance(part, int):
            if arr is None or arr.dtype != object or not 0 <= part < arr.size:
                raise KeyNotFound(file, f"element {part + 1} not found in {key!r}")
            value = arr.ravel(order="F")[part]
            continue
        if arr is not None and arr.dtype == object and arr.size == 1:
            value = arr.ravel()[0]
        if not isinstance(value, mat_struct) or part not in value._fieldnames:
            raise KeyNotFound(file, f"field {part!r} not found in {key!r}")
        value = getattr(value, part)
    return value


def matlab_class(obj: Any) -> str:
    """The ``MATLAB_class`` attribute of a v7.3 group or dataset (``""`` when absent)."""
    raw = obj.attrs.get("MATLAB_class", b"")
    return raw.decode("ascii", "replace") if isinstance(raw, bytes) else str(raw)


def walk_v73(h5: Any, out: list[MatVar], group: Any = None, prefix: str = "") -> None:
    """Append every variable of a v7.3 file (or of the struct ``group`` at ``prefix``) to ``out``, following
    cell references (up to :data:`MAX_VARIABLES`).
    """
    for name, obj in (group if group is not None else h5).items():
        if len(out) >= MAX_VARIABLES:
            return
        if not name.startswith("#"):  # "#refs#" holds cell contents, "#subsystem#" MATLAB objects' internals
            _walk_v73_object(h5, f"{prefix}.{name}" if prefix else name, obj, out)


def _walk_v73_object(h5: Any, path: str, obj: Any, out: list[MatVar]) -> None:
    """Append a struct group and its fields, or a dataset and the cells it references."""
    import h5py

    if isinstance(obj, h5py.Group):
        out.append(MatVar(path, (1, 1), matlab_class(obj) or "struct"))
        walk_v73(h5, out, obj, path)
        return
    cls = matlab_class(obj)
    shape = tuple(int(s) for s in obj.shape[::-1])
    if obj.attrs.get("MATLAB_empty", 0):
        out.append(MatVar(path, tuple(0 for _ in shape), cls))
        return
    if obj.dtype != h5py.ref_dtype:
        out.append(MatVar(path, shape, cls or str(obj.dtype)))
        return
    out.append(MatVar(path, shape, cls or "cell"))
    refs = np.asarray(obj[()]).ravel()  # C order of the reversed shape = MATLAB's column-major order
    for k, ref in enumerate(refs[:MAX_CELL_ITEMS]):
        if len(out) >= MAX_VARIABLES or not ref:
            break
        _walk_v73_object(h5, f"{path}{{{k + 1}}}", h5[ref], out)


def get_v73(file: Path, h5: Any, key: str) -> Any:
    """The h5py dataset at a MATLAB path, following groups and cell references; ``KeyNotFound`` for a name or
    element that does not exist, or a struct.
    """
    import h5py

    try:
        parts = tokens(key)
    except ValueError as exc:
        raise KeyNotFound(file, str(exc)) from exc
    obj: Any = h5
    for part in parts:
        if isinstance(part, int):
            if not isinstance(obj, h5py.Dataset) or obj.dtype != h5py.ref_dtype or not 0 <= part < obj.size:
                raise KeyNotFound(file, f"element {part + 1} not found in {key!r}")
            obj = h5[np.asarray(obj[()]).ravel()[part]]
        elif isinstance(obj, h5py.Group) and part in obj:
            obj = obj[part]
        else:
            raise KeyNotFound(file, f"{part!r} not found in {key!r}")
    if not isinstance(obj, h5py.Dataset):
        raise KeyNotFound(file, f"{key!r} is a struct, not an array; name one of its fields")
    return obj


def is_image_like(var: MatVar) -> bool:
    """Numeric/logical, with its two largest dimensions both at least :data:`MIN_SIDE`."""
    sides = sorted(var.shape, reverse=True)
    return var.cls in _NUMERIC and len(sides) >= 2 and sides[1] >= MIN_SIDE


def _extent(var: MatVar) -> int:
    return int(var.shape[0] * var.shape[1])


def _name_score(var: MatVar) -> int:
    name = var.leaf_name
    if _IMAGE_NAMES.match(name):
        return 1
    return -1 if _MASK_NAMES.search(name) else 0


def choose_image(variables: list[MatVar]) -> tuple[MatVar | None, str]:
    """The variable to read as the image, and why (see the module docstring).

    Args:
        variables: All variables of the file.

    Returns:
        ``(variable or None, reason)``.
    """
    candidates = [v for v in variables if is_image_like(v)]
    if not candidates:
        return None, f"no numeric array with at least {MIN_SIDE} rows and {MIN_SIDE} columns"
    largest = max(_extent(v) for v in candidates)
    comparable = [v for v in candidates if 4 * _extent(v) >= largest]
    best = max(comparable, key=lambda v: (_name_score(v), _extent(v), int(np.prod(v.shape))))
    why = "largest rows x cols"
    if _name_score(best) > 0:
        why = "name says image, among the largest arrays"
    elif len(comparable) > 1 and _name_score(best) == 0 and any(_name_score(v) < 0 for v in comparable):
        why = "largest array whose name does not say mask/label"
    return best, why


def describe(variables: list[MatVar]) -> str:
    """A short list of what the file holds, for error messages."""
    shown = ", ".join(f"{v.path} ({'x'.join(map(str, v.shape))} {v.cls})" for v in variables[:8])
    return shown + (f", ... ({len(variables)} in all)" if len(variables) > 8 else "")


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
            chosen by :func:`choose_image` (logged, and named in ``meta.header["variable"]``).
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

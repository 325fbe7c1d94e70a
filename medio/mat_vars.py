"""All variables of a MATLAB file, structs and cells walked, and the image variable, chosen by evidence.

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

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from medio.errors import KeyNotFound

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

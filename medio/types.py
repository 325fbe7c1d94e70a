"""The result types shared by every reader and the renderer."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np


def jsonable(value: Any) -> Any:
    """Convert a header value (NumPy scalars/arrays, tuples, bytes, nested containers) to what ``json.dumps``
    accepts: non-finite floats become ``None``, large arrays and long bytes are summarised.
    """
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, np.ndarray):
        if value.size > 64:
            return f"<array shape={list(value.shape)} dtype={value.dtype}>"
        return jsonable(value.tolist())
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if len(raw) > 64:
            return f"<{len(raw)} bytes>"
        return raw.decode("latin-1")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    return str(value)


@dataclass
class Meta:
    """Header facts a standardizer needs, in the array's canonical axis order (docs/contracts.md).

    Attributes:
        format: Format family (``"dicom"``, ``"nifti"``, ``"png"`` ...).
        path: Source file or folder.
        shape: Shape of ``MedImage.array``.
        dtype: NumPy dtype name of ``MedImage.array``.
        axes: Axis letters, e.g. ``"YX"``, ``"YXC"``, ``"ZYX"``, ``"TYXC"``.
        spacing: Physical spacing per array axis in mm (``None`` when unknown).
        origin: Physical position of the first voxel (x, y, z), when known.
        direction: Direction cosines (row-major 3×3 flattened), when known.
        modality: DICOM-style modality code (``"CT"``, ``"MR"`` ...), when known.
        body_part: Body part examined, when known.
        photometric: Photometric interpretation of ``array`` (``"MONOCHROME1"``, ``"RGB"`` ...).
        rescale_slope: Modality LUT slope found in the header.
        rescale_intercept: Modality LUT intercept found in the header.
        rescale_applied: True when ``array`` already holds rescaled values (e.g. CT in HU).
        window_center: First window centre in the header.
        window_width: First window width in the header.
        n_frames: Number of frames/volumes in the source (even when only one was decoded).
        fps: Frames per second for videos.
        frame_index: Index of the single decoded frame/volume, when only one was read.
        keys: Keys of a container (npz members, HDF5 datasets, MATLAB variables).
        columns: Table columns.
        header: Any further format-specific facts (JSON-able).
    """

    format: str
    path: str
    shape: tuple[int, ...] = ()
    dtype: str = ""
    axes: str = ""
    spacing: tuple[float, ...] | None = None
    origin: tuple[float, ...] | None = None
    direction: tuple[float, ...] | None = None
    modality: str | None = None
    body_part: str | None = None
    photometric: str | None = None
    rescale_slope: float | None = None
    rescale_intercept: float | None = None
    rescale_applied: bool = False
    window_center: float | None = None
    window_width: float | None = None
    n_frames: int | None = None
    fps: float | None = None
    frame_index: int | None = None
    keys: list[str] | None = None
    columns: list[str] | None = None
    header: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return the metadata as a JSON-able dict.

        Returns:
            A dict with one entry per field.
        """
        return {f.name: jsonable(getattr(self, f.name)) for f in fields(self)}


@dataclass
class MedImage:
    """A decoded image: the pixel array in canonical axis order and its header facts.

    Attributes:
        array: The pixels (see docs/contracts.md for the axis order).
        meta: The header facts.
    """

    array: np.ndarray
    meta: Meta

    def __post_init__(self) -> None:
        # Keep meta.shape/dtype truthful whatever the reader did to the array afterwards.
        self.meta.shape = tuple(int(s) for s in self.array.shape)
        self.meta.dtype = str(self.array.dtype)


@dataclass
class Rendered:
    """An 8-bit rendering ready to be written as PNG.

    Attributes:
        pixels: ``uint8`` array, ``(H, W)`` or ``(H, W, 3)``.
        info: What was done (method, window, slice/axis/frame, size ``[w, h]``, source ...), JSON-able.
    """

    pixels: np.ndarray
    info: dict[str, Any]

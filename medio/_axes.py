"""Guessing canonical axis letters for arrays whose format does not say (npy, HDF5, MATLAB, TIFF)."""

from __future__ import annotations

from typing import Any

import numpy as np

from medio.errors import ImageTooLarge

# Readers refuse to materialise more than this many bytes at once (a guard against decompression bombs and
# accidental whole-file reads of huge containers); pass key/index/frame to read a part.
MAX_BYTES = 2 * 1024**3


def guess_axes(shape: tuple[int, ...], dtype: np.dtype[Any] | str | None = None) -> str:
    """Return axis letters for a shape: a trailing axis of 3 or 4 is colour, leading axes are Z then T.

    A trailing 3/4 is only taken as colour for ``uint8`` data (or unknown dtype): a 16-bit or float array
    ``(Z, H, 3)`` is far more often a thin volume than an RGB image.

    Args:
        shape: The array shape.
        dtype: The array dtype, when known.

    Returns:
        ``"X"``, ``"YX"``, ``"YXC"``, ``"ZYX"``, ``"ZYXC"``, ``"TZYX"``... (``"?"`` axes beyond five).
    """
    ndim = len(shape)
    if ndim == 0:
        return ""
    if ndim == 1:
        return "X"
    color = ndim >= 3 and shape[-1] in (3, 4) and (dtype is None or np.dtype(dtype) == np.uint8)
    return axis_letters(ndim - color, color)


def axis_letters(spatial: int, color: bool) -> str:
    """Spell the canonical axes of an array with ``spatial`` non-colour axes, plus a trailing colour axis:
    ``"YX"``, ``"ZYX"``, ``"TZYX"`` (``"?"`` for each leading axis beyond four), ``"C"`` appended for colour.
    """
    lead = {2: "", 3: "Z", 4: "TZ"}.get(spatial, "?" * max(spatial - 2, 0))
    return lead + "YX" + ("C" if color else "")


def check_size(path: object, shape: tuple[int, ...], dtype: np.dtype[np.generic] | str) -> None:
    """Raise ImageTooLarge when an array of ``shape``/``dtype`` would exceed :data:`MAX_BYTES`.

    Args:
        path: The file (for the message).
        shape: Shape about to be read.
        dtype: Its dtype.

    Raises:
        ImageTooLarge: The array is larger than the cap.
    """
    n_bytes = int(np.prod(shape, dtype=np.float64)) * np.dtype(dtype).itemsize
    if n_bytes > MAX_BYTES:
        raise ImageTooLarge(
            str(path),
            f"array {list(shape)} {np.dtype(dtype)} needs {n_bytes / 1e9:.1f} GB "
            f"(> {MAX_BYTES / 1e9:.1f} GB); "
            "select a part with key=/index=/frame=",
        )

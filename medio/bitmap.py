"""PNG, JPEG, BMP, PGM/PPM and GIF via Pillow, with the decompression-bomb limit left on."""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from medio.errors import CorruptFile, ImageTooLarge, KeyNotFound, UnsupportedFormat
from medio.types import MedImage, Meta

# Pillow modes kept as they are (grey, 16/32-bit integer, float, colour); anything else is converted.
_KEEP = {
    "L": "YX",
    "I;16": "YX",
    "I;16B": "YX",
    "I;16L": "YX",
    "I": "YX",
    "F": "YX",
    "RGB": "YXC",
    "RGBA": "YXC",
}


@contextlib.contextmanager
def _bomb_is_too_large(path: Path) -> Iterator[None]:
    """Pillow's decompression-bomb warning made an error (its limit stays on), raised as ImageTooLarge."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            yield
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageTooLarge(path, f"image exceeds Pillow's decompression-bomb limit ({exc})") from exc


def _open(path: Path, buffer: bytes | None = None) -> Any:
    from PIL import Image, UnidentifiedImageError

    source: Any = io.BytesIO(buffer) if buffer is not None else str(path)
    try:
        with _bomb_is_too_large(path):
            return Image.open(source)
    except UnidentifiedImageError as exc:
        raise UnsupportedFormat(path, "Pillow cannot identify the image") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise CorruptFile(path, f"cannot parse image header ({exc})") from exc


def _to_array(path: Path, img: Any) -> tuple[np.ndarray, str]:
    mode = img.mode
    if mode == "1":
        return np.asarray(img, dtype=bool), "YX"
    if mode == "P":
        palette = img.getpalette() or []
        triples = np.asarray(palette[: 3 * 256]).reshape(-1, 3) if palette else np.zeros((0, 3))
        used = int(np.asarray(img).max(initial=0)) + 1
        grey = len(triples) >= used and bool(np.all(triples[:used] == triples[:used, :1]))
        img = img.convert("L" if grey else "RGB")
    elif mode == "LA":
        img = img.convert("L")
    elif mode == "PA" or mode not in _KEEP:
        img = img.convert("RGB")
    arr = np.asarray(img)
    if img.mode.startswith("I;16") and arr.dtype != np.uint16:
        arr = arr.astype(np.uint16)
    return arr, _KEEP.get(img.mode, "YXC" if arr.ndim == 3 else "YX")


def decode_bitmap(path: str | Path, *, frame: int | None = None, buffer: bytes | None = None) -> MedImage:
    """Decode a Pillow-readable image (PNG, JPEG, BMP, PGM/PPM, GIF) from a file or an in-memory buffer.

    Args:
        path: The file (also used in messages when ``buffer`` is given).
        frame: Frame of a multi-frame GIF/TIFF-like image (default 0).
        buffer: Encoded image bytes (e.g. from a table cell) instead of the file.

    Returns:
        ``(H, W)`` or ``(H, W, C)``; 16-bit PNG stays ``uint16``.

    Raises:
        ImageTooLarge: Above Pillow's ``MAX_IMAGE_PIXELS``.
        UnsupportedFormat: Not an image Pillow knows.
        CorruptFile: Truncated or malformed data.
        KeyNotFound: ``frame`` out of range.
    """
    path = Path(path)
    with _open(path, buffer) as img:
        n_frames = int(getattr(img, "n_frames", 1))
        if frame is not None:
            if not 0 <= frame < n_frames:
                raise KeyNotFound(path, f"frame {frame} out of range: the image has {n_frames} frame(s)")
            img.seek(frame)
        fmt = img.format
        mode = img.mode
        try:
            with _bomb_is_too_large(path):
                img.load()
                arr, axes = _to_array(path, img)
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            raise CorruptFile(path, f"cannot decode image data ({exc})") from exc
        dpi = img.info.get("dpi")
    spacing = None
    if dpi and all(float(d) > 1 for d in dpi[:2]):
        # Pixel size from the stored resolution (25.4 mm per inch); only a hint, often a 72/96 dpi default.
        spacing = (25.4 / float(dpi[1]), 25.4 / float(dpi[0]))
    meta = Meta(
        format="bitmap",
        path=str(path),
        axes=axes,
        spacing=spacing,
        photometric="RGB" if axes == "YXC" else "MONOCHROME2",
        n_frames=n_frames,
        frame_index=frame if n_frames > 1 else None,
        header={"pillow_format": fmt, "mode": mode},
    )
    return MedImage(arr, meta)


def summarize_bitmap(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: Pillow format, mode, size ``[w, h]`` and frame count, from the header (Pillow
    opens lazily; no pixel decoding); errors as :func:`decode_bitmap`.
    """
    path = Path(path)
    with _open(path) as img:
        w, h = img.size
        channels = len(img.getbands())
        return {
            "shape": [h, w] + ([channels] if channels > 1 else []),
            "size": [w, h],
            "mode": img.mode,
            "pillow_format": img.format,
            "n_frames": int(getattr(img, "n_frames", 1)),
        }

"""TIFF (16-bit, multi-page, OME/ImageJ stacks) via tifffile: pages become the leading Z axis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from medio._axes import axis_letters, check_size
from medio.errors import CorruptFile, KeyNotFound
from medio.types import MedImage, Meta


def _open(path: Path) -> Any:
    import tifffile

    try:
        return tifffile.TiffFile(str(path))
    except (tifffile.TiffFileError, OSError, ValueError, EOFError) as exc:
        raise CorruptFile(path, f"cannot parse TIFF ({exc})") from exc


def read_tiff(path: str | Path, *, index: int | None = None) -> MedImage:
    """Read a TIFF: one page → ``(H, W[, C])``, several pages of one series → ``(Z, H, W[, C])``.

    Args:
        path: The file.
        index: Read only this page (0-based).

    Returns:
        The image, dtype as stored (16-bit stays 16-bit).

    Raises:
        CorruptFile: Malformed or truncated TIFF.
        KeyNotFound: ``index`` out of range.
    """
    import tifffile

    path = Path(path)
    with _open(path) as tif:
        n_pages = len(tif.pages)
        series = tif.series[0] if tif.series else None
        try:
            if index is not None:
                if not 0 <= index < n_pages:
                    raise KeyNotFound(path, f"page {index} out of range: the file has {n_pages} page(s)")
                page = tif.pages[index]
                arr = page.asarray()
                photometric = page.photometric.name
            else:
                shape = tuple(series.shape) if series is not None else tuple(tif.pages[0].shape)
                check_size(path, shape, series.dtype if series is not None else tif.pages[0].dtype)
                arr = series.asarray() if series is not None else tif.asarray()
                photometric = tif.pages[0].photometric.name
        except (tifffile.TiffFileError, ValueError, OSError, EOFError, IndexError) as exc:
            raise CorruptFile(path, f"cannot decode TIFF pixel data ({exc})") from exc
        header: dict[str, Any] = {"n_pages": n_pages, "photometric_tiff": photometric}
        if series is not None:
            header["series_axes"] = series.axes
        if tif.imagej_metadata:
            header["imagej"] = {
                k: v for k, v in tif.imagej_metadata.items() if isinstance(v, int | float | str)
            }
    color = photometric in ("RGB", "YCBCR") and arr.ndim >= 3 and arr.shape[-1] in (3, 4)
    series_axes = str(header.get("series_axes", ""))
    if index is None and "S" in series_axes and color is False and photometric == "RGB":
        # Planar RGB (samples stored as separate planes, axis "S"): move the samples last.
        arr = np.moveaxis(arr, series_axes.index("S"), -1)
        color = True
    # Only the TIFF photometric tag makes a trailing 3 a colour axis: a 3-page grey stack is a volume.
    spatial = arr.ndim - color
    axes = axis_letters(spatial, color)
    meta = Meta(
        format="tiff",
        path=str(path),
        axes=axes,
        photometric="RGB" if color else ("MONOCHROME1" if photometric == "MINISWHITE" else "MONOCHROME2"),
        n_frames=n_pages,
        frame_index=index,
        header=header,
    )
    return MedImage(arr, meta)


def summarize_tiff(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: shape/dtype of the first series, page count, photometric and compression, without
    decoding pixels; ``CorruptFile`` for a malformed TIFF.
    """
    with _open(Path(path)) as tif:
        page = tif.pages[0]
        series = tif.series[0] if tif.series else None
        return {
            "shape": list(series.shape) if series is not None else list(page.shape),
            "dtype": str(series.dtype if series is not None else page.dtype),
            "n_pages": len(tif.pages),
            "axes_tiff": series.axes if series is not None else None,
            "photometric": page.photometric.name,
            "compression": page.compression.name,
        }

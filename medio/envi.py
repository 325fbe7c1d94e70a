"""ENVI hyperspectral cubes: a text header (``.hdr``, first line ``ENVI``) beside a raw data file
(``.dat``, ``.img``, ``.raw``, ``.bsq``/``.bil``/``.bip`` or no extension), read with Spectral Python (SPy).

SPy parses the header (samples, lines, bands, data type, interleave, byte order, header offset, wavelength,
default bands) and memory-maps the data, so one band is read without reading the cube. We check the data
file's size against the header first, because a short file would otherwise fail later, inside NumPy.

The 2-D view (:func:`choose_bands`), in order:
1. the header's ``default bands`` (1-based in ENVI): three bands as RGB, one as grey;
2. with wavelengths, the bands nearest 640, 550 and 460 nm as RGB, when they are three distinct bands each
   within 50 nm of its target (a visible-range sensor);
3. otherwise the single band of largest variance (measured on a subsample of pixels), as grey.
RGB views stretch each band to its 0.5–99.5 percentiles; ``read(path, key="<band>")`` returns one raw band.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from medio.errors import CorruptFile, KeyNotFound, MedioError
from medio.types import MedImage, Meta

HEADER_MAGIC = b"ENVI"
DATA_SUFFIXES = ("", ".dat", ".img", ".raw", ".bsq", ".bil", ".bip", ".sli")
RGB_TARGETS_NM = (640.0, 550.0, 460.0)
_MAX_DISTANCE_NM = 50.0
_VARIANCE_SAMPLE = 65536


def _is_envi_header(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(4) == HEADER_MAGIC
    except OSError:
        return False


def header_of(path: Path) -> Path | None:
    """The ENVI header of a data file (``name.hdr`` or ``stem.hdr``, any case), the header itself, or ``None``
    when ``path`` is not part of an ENVI pair.
    """
    if path.suffix.lower() == ".hdr":
        return path if _is_envi_header(path) else None
    if path.suffix.lower() not in DATA_SUFFIXES:
        return None
    for base in dict.fromkeys((path.name, path.stem)):
        for ext in (".hdr", ".HDR"):
            candidate = path.with_name(base + ext)
            if candidate.is_file() and _is_envi_header(candidate):
                return candidate
    return None


def data_of(header: Path) -> Path | None:
    """The data file an ENVI header describes (same stem, one of :data:`DATA_SUFFIXES`, lower or upper case),
    or ``None``.
    """
    stem = header.name[: -len(".hdr")]
    for ext in DATA_SUFFIXES:
        for name in dict.fromkeys((stem + ext, stem + ext.upper())):
            candidate = header.with_name(name)
            if candidate != header and candidate.is_file():
                return candidate
    return None


def _pair(path: Path) -> tuple[Path, Path]:
    header = header_of(path)
    if header is None:
        raise CorruptFile(path, "no ENVI header (.hdr starting with 'ENVI') beside this file")
    data = path if path != header else data_of(header)
    if data is None:
        raise CorruptFile(
            path, f"ENVI header {header.name} has no data file beside it (tried {DATA_SUFFIXES})"
        )
    return header, data


def _open(path: Path) -> tuple[Any, Path, Path]:
    """Open the cube with SPy after checking that the data file is as long as the header says."""
    import spectral.io.envi as envi

    header, data = _pair(path)
    try:
        fields = envi.read_envi_header(str(header))
        for key in ("samples", "lines", "bands", "data type"):
            if key not in fields:
                raise CorruptFile(path, f"ENVI header {header.name} lacks {key!r}")
        img = envi.open(str(header), str(data))
    except MedioError:
        raise
    except (envi.EnviException, envi.SpyException, ValueError, KeyError, OSError) as exc:
        raise CorruptFile(
            path, f"cannot parse ENVI header {header.name} ({type(exc).__name__}: {exc})"
        ) from exc
    needed = int(img.offset) + int(np.prod(img.shape)) * np.dtype(img.dtype).itemsize
    have = data.stat().st_size
    if have < needed:
        raise CorruptFile(
            path, f"ENVI data file {data.name} has {have} bytes, the header needs {needed} (truncated)"
        )
    return img, header, data


def _wavelengths_nm(img: Any) -> list[float] | None:
    centers = getattr(img.bands, "centers", None)
    if not centers:
        return None
    units = str(img.metadata.get("wavelength units", "")).lower()
    values = [float(c) for c in centers]
    # ENVI writes "Micrometers" (or no unit) for µm; sensor wavelengths below 30 cannot be nanometres.
    if units.startswith(("micro", "um", "µm")) or (not units and max(values) < 30):
        values = [v * 1000.0 for v in values]
    return values


def choose_bands(img: Any) -> tuple[list[int], str]:
    """The 0-based bands of the 2-D view and the rule that chose them (see the module docstring).

    Args:
        img: An opened SPy image.

    Returns:
        ``([r, g, b] or [band], rule)``.
    """
    n = int(img.nbands)
    default = img.metadata.get("default bands")
    if default:
        try:
            picked = [int(float(b)) - 1 for b in default]
        except (TypeError, ValueError):
            picked = []
        if len(picked) in (1, 3) and all(0 <= b < n for b in picked):
            return picked, "default bands"
    wavelengths = _wavelengths_nm(img)
    if wavelengths and len(wavelengths) == n:
        grid = np.asarray(wavelengths)
        nearest = [int(np.argmin(np.abs(grid - t))) for t in RGB_TARGETS_NM]
        close = all(
            abs(grid[b] - t) <= _MAX_DISTANCE_NM for b, t in zip(nearest, RGB_TARGETS_NM, strict=True)
        )
        if close and len(set(nearest)) == 3:
            return nearest, "nearest 640/550/460 nm"
    if n == 1:
        return [0], "only band"
    step = max(1, int(np.sqrt(img.nrows * img.ncols / _VARIANCE_SAMPLE)))
    sample = np.asarray(
        img.open_memmap()[::step, ::step, :]
    )  # (lines, samples, bands) whatever the interleave
    variances = sample.reshape(-1, n).astype(np.float64).var(axis=0)
    return [int(np.nanargmax(variances))], "largest variance"


def _facts(img: Any, header: Path, data: Path) -> dict[str, Any]:
    wavelengths = _wavelengths_nm(img)
    meta = img.metadata
    out: dict[str, Any] = {
        "header_file": header.name,
        "data_file": data.name,
        "samples": int(img.ncols),
        "lines": int(img.nrows),
        "bands": int(img.nbands),
        "data_type": str(np.dtype(img.dtype)),
        "interleave": str(meta.get("interleave", "bsq")).lower(),
        "byte_order": int(meta.get("byte order", 0)),
        "header_offset": int(img.offset),
        "default_bands": meta.get("default bands"),
    }
    if wavelengths:
        out["wavelength_nm"] = {
            "count": len(wavelengths),
            "first": round(wavelengths[0], 3),
            "last": round(wavelengths[-1], 3),
            "head": [round(w, 3) for w in wavelengths[:8]],
        }
    return out


def summarize_envi(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: the header facts of an ENVI pair (``samples``, ``lines``, ``bands``,
    ``data_type``, ``interleave``, ``byte_order``, ``header_offset``, ``default_bands``, ``wavelength_nm``:
    count, first, last, first eight) and its files, no pixels read; ``CorruptFile`` for a missing partner,
    header field or data.
    """
    img, header, data = _open(Path(path))
    return {
        **_facts(img, header, data),
        "how_to_read": "read(path) for the 2-D view, read(path, key='<band>')",
    }


def read_envi(path: str | Path, *, key: str | None = None) -> MedImage:
    """Read the 2-D view of an ENVI cube (bands chosen by :func:`choose_bands`) or one band.

    Args:
        path: The header or the data file.
        key: A 0-based band number: that band, raw, as grey.

    Returns:
        ``(Y, X)`` (one band, raw values) or ``(Y, X, 3)`` uint8 RGB; ``meta.header`` holds the header facts,
        ``bands_shown`` and ``band_rule``.

    Raises:
        CorruptFile: Missing partner, header fields or data.
        KeyNotFound: Band out of range.
    """
    path = Path(path)
    img, header, data = _open(path)
    if key is not None:
        if not key.isdigit() or not int(key) < img.nbands:
            raise KeyNotFound(path, f"band {key!r} not found: the cube has bands 0..{img.nbands - 1}")
        bands, rule = [int(key)], "given"
    else:
        bands, rule = choose_bands(img)
    if len(bands) == 3:
        from medio.render import stretch_uint8

        arr = np.stack([stretch_uint8(np.asarray(img.read_band(b))) for b in bands], axis=-1)
    else:
        arr = np.ascontiguousarray(img.read_band(bands[0]))
    facts = {**_facts(img, header, data), "bands_shown": bands, "band_rule": rule}
    meta = Meta(
        format="envi",
        path=str(path),
        axes="YXC" if arr.ndim == 3 else "YX",
        photometric="RGB" if arr.ndim == 3 else "MONOCHROME2",
        keys=[str(b) for b in range(min(int(img.nbands), 64))],
        header=facts,
    )
    return MedImage(arr, meta)

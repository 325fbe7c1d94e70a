"""NIfTI-1/2 volumes (``.nii``, ``.nii.gz``) via nibabel, transposed from (X, Y, Z) to canonical (Z, Y, X)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from medio._axes import check_size
from medio.errors import CorruptFile, KeyNotFound, UnsupportedFormat
from medio.types import MedImage, Meta


def _load(path: Path) -> Any:
    import nibabel as nib
    from nibabel.filebasedimages import ImageFileError

    try:
        if path.name.lower().endswith((".nii", ".nii.gz", ".hdr", ".img", ".img.gz")):
            img = nib.load(str(path))
        else:
            img = _load_by_content(path)
    except ImageFileError as exc:
        raise UnsupportedFormat(path, f"not a NIfTI image ({exc})") from exc
    except (OSError, EOFError, ValueError) as exc:
        raise CorruptFile(path, f"cannot parse NIfTI header ({type(exc).__name__}: {exc})") from exc
    return img


def _load_by_content(path: Path) -> Any:
    """Load a NIfTI whose name lacks the extension nibabel needs (found by magic bytes): parse in memory."""
    import gzip

    import nibabel as nib

    with path.open("rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    klass = nib.Nifti2Image if raw[4:8] in (b"n+2\x00", b"ni2\x00") else nib.Nifti1Image
    return klass.from_bytes(raw)


def read_nifti(path: str | Path, *, volume: int | None = None) -> MedImage:
    """Read a NIfTI image; a 4D image yields one 3D volume (``volume``, default 0).

    Uncompressed files are memory-mapped by nibabel, so reading one slice later touches only that slice.
    Scaling (``scl_slope``/``scl_inter``) is applied by nibabel.

    Args:
        path: ``.nii`` or ``.nii.gz`` (or ``.hdr``/``.img`` pair).
        volume: Index along the 4th (time) axis of a 4D image.

    Returns:
        ``(Z, Y, X)`` volume (2D images give ``(Y, X)``); ``meta.n_frames`` is the number of volumes.

    Raises:
        UnsupportedFormat: Not NIfTI.
        CorruptFile: Truncated or malformed data.
        KeyNotFound: ``volume`` out of range.
    """
    path = Path(path)
    img = _load(path)
    shape = tuple(int(s) for s in img.shape)
    n_volumes = shape[3] if len(shape) >= 4 else 1
    if volume is not None and not 0 <= volume < n_volumes:
        raise KeyNotFound(path, f"volume {volume} out of range: the image has {n_volumes} volume(s)")
    chosen = volume if volume is not None else 0
    check_size(path, shape[:3], img.get_data_dtype())
    try:
        if len(shape) >= 4:
            data = np.asanyarray(img.dataobj[(slice(None),) * 3 + (chosen,) + (0,) * (len(shape) - 4)])
        else:
            data = np.asanyarray(img.dataobj)
    except (OSError, EOFError, ValueError) as exc:
        raise CorruptFile(path, f"cannot read NIfTI data ({type(exc).__name__}: {exc})") from exc
    arr = np.transpose(data) if data.ndim >= 2 else data
    zooms = [float(z) for z in img.header.get_zooms()[: min(3, data.ndim)]]
    header = _header_facts(img)

    affine = img.affine
    meta = Meta(
        format="nifti",
        path=str(path),
        axes={2: "YX", 3: "ZYX"}.get(arr.ndim, "?" * arr.ndim),
        spacing=tuple(reversed(zooms)),
        origin=tuple(float(v) for v in affine[:3, 3]),
        direction=_direction(affine),
        n_frames=n_volumes,
        frame_index=chosen if n_volumes > 1 else None,
        header={**header, "orientation": _orientation(affine), "source_shape": list(shape)},
    )
    return MedImage(arr, meta)


def _orientation(affine: np.ndarray) -> str:
    """Axis codes of the voxel axes, e.g. ``"RAS"`` (nibabel's convention)."""
    import nibabel as nib

    return "".join(nib.aff2axcodes(affine))  # type: ignore[no-untyped-call]


def _direction(affine: np.ndarray) -> tuple[float, ...]:
    # Direction cosines without the voxel size (columns of the affine normalised).
    rotation = affine[:3, :3] / np.maximum(np.linalg.norm(affine[:3, :3], axis=0), 1e-12)
    return tuple(float(v) for v in rotation.ravel())


def _header_facts(img: Any) -> dict[str, Any]:
    hdr = img.header
    out: dict[str, Any] = {"data_dtype": str(img.get_data_dtype())}
    for key in ("descrip", "intent_name", "aux_file"):
        try:
            value = hdr[key]
        except (KeyError, ValueError):
            continue
        raw = value.item() if hasattr(value, "item") else value
        text = raw.decode("latin-1", "replace") if isinstance(raw, bytes) else str(raw)
        if text.strip("\x00 "):
            out[key] = text.strip("\x00 ")
    slope, inter = hdr.get_slope_inter()
    out["scl_slope"] = None if slope is None or not np.isfinite(slope) else float(slope)
    out["scl_inter"] = None if inter is None or not np.isfinite(inter) else float(inter)
    for key in ("qform_code", "sform_code", "xyzt_units"):
        try:
            out[key] = int(hdr[key])
        except (KeyError, ValueError, TypeError):
            continue
    return out


def summarize_nifti(path: str | Path) -> dict[str, Any]:
    """Summarise a NIfTI header without loading the voxels.

    Args:
        path: The file.

    Returns:
        ``shape``/``axes`` in medio's canonical order (``ZYX`` of one volume, the order `read` returns and
        ``render --axis`` counts in), ``shape_on_disk``/``axes_on_disk`` as stored (``XYZT``), dtype, voxel
        sizes (``zooms``, on-disk order), orientation code and a few header fields.

    Raises:
        UnsupportedFormat: Not NIfTI.
        CorruptFile: Malformed header.
    """

    img = _load(Path(path))
    on_disk = [int(s) for s in img.shape]
    spatial = on_disk[:3] if len(on_disk) >= 2 else on_disk
    return {
        "shape": spatial[::-1],
        "axes": {2: "YX", 3: "ZYX"}.get(len(spatial), "?" * len(spatial)),
        "shape_on_disk": on_disk,
        "axes_on_disk": "XYZT"[: len(img.shape)],
        "dtype": str(img.get_data_dtype()),
        "zooms": [float(z) for z in img.header.get_zooms()],
        "orientation": _orientation(img.affine),
        "n_volumes": int(img.shape[3]) if len(img.shape) >= 4 else 1,
        "header": _header_facts(img),
    }

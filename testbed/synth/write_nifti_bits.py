"""A NIfTI-1 writer for 1-bit masks (``DT_BINARY``: datatype 1, bitpix 1), which nibabel does not write.

nifti1.h defines ``DT_BINARY 1 /* binary (1 bit/voxel) */`` and nothing more: not the bit order inside a
byte, nor whether a volume or a row starts on a byte boundary. We pack the voxels as one continuous bit
stream in NIfTI's storage order (x fastest, then y, z, t), eight voxels per byte, **least significant bit
first** (``numpy.packbits(..., bitorder="little")``), the last byte padded with zeros. LSB-first is the order
the brief for this work names for ITK's NiftiImageIO; the reader (:mod:`medio.nifti`) uses the same
order and documents it.

The header is built with nibabel (dimensions, pixdim, qform/sform from the affine) as a uint8 image, then
``datatype`` and ``bitpix`` are set to 1; ``vox_offset`` stays 352 (header + 4-byte extension flag).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np

DT_BINARY = 1
_VOX_OFFSET = 352


def pack_bits(xyz: np.ndarray) -> bytes:
    """Pack a boolean array, stored x-fastest (Fortran order of ``(X, Y, Z)``), 8 voxels per byte, LSB first.

    Args:
        xyz: Array in NIfTI's ``(X, Y, Z[, T])`` axis order; non-zero voxels are 1.

    Returns:
        ``ceil(n / 8)`` bytes.
    """
    flat = np.asarray(xyz != 0).ravel(order="F")
    return np.packbits(flat, bitorder="little").tobytes()


def write_nifti_bits(
    path: str | Path,
    zyx: np.ndarray,
    spacing: tuple[float, float, float] = (1.0, 1.0, 1.0),
    origin: tuple[float, float, float] = (0.0, 0.0, 0.0),
) -> Path:
    """Write a canonical ``(Z, Y, X)`` (or ``(Y, X)``) mask as a 1-bit NIfTI-1 file.

    Args:
        path: ``.nii`` or ``.nii.gz`` (compressed with a zero gzip mtime, so the bytes are deterministic).
        zyx: Mask in medio's canonical order; any non-zero voxel is 1.
        spacing: ``(x, y, z)`` voxel size in mm.
        origin: World position of voxel ``(0, 0, 0)`` in mm.

    Returns:
        The written path.

    Example:
        >>> write_nifti_bits("mask.nii.gz", np.ones((4, 8, 8), bool))  # doctest: +SKIP
    """
    import nibabel as nib

    xyz = np.asarray(zyx).T  # (Z, Y, X) -> (X, Y, Z): NIfTI's first axis varies fastest
    affine = np.diag([*spacing, 1.0])
    affine[:3, 3] = origin
    header: Any = nib.Nifti1Header()  # type: ignore[no-untyped-call]
    header.set_data_shape(xyz.shape)
    header.set_data_dtype(np.uint8)
    header.set_zooms(spacing[: xyz.ndim])
    header.set_qform(affine, code=1)
    header.set_sform(affine, code=1)
    header["vox_offset"] = _VOX_OFFSET
    header["scl_slope"] = 1.0
    header["scl_inter"] = 0.0
    header["datatype"] = DT_BINARY
    header["bitpix"] = 1
    header["cal_min"], header["cal_max"] = 0.0, 1.0
    raw = header.binaryblock + b"\x00\x00\x00\x00" + pack_bits(xyz)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.name.lower().endswith(".gz"):
        raw = gzip.compress(raw, mtime=0)
    out.write_bytes(raw)
    return out

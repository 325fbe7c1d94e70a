"""NIfTI-1 masks stored one bit per voxel (``datatype`` 1 = ``DT_BINARY``, ``bitpix`` 1), which nibabel
refuses ("data code 1 not supported").

nifti1.h defines the code but not the bit order. We read the voxels as one continuous bit stream in NIfTI's
storage order (x fastest, then y, z, t), eight per byte, least significant bit first, as the writers we know
of pack them (see ``testbed/synth/write_nifti_bits.py``). The header is parsed by nibabel with its checks
off (the only check that fails is the data type), the bits are unpacked to ``uint8`` 0/1, and the result is
an ordinary in-memory ``Nifti1Image`` so :mod:`medio.nifti` reads and summarises it like any other NIfTI.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from medio.errors import CorruptFile

DT_BINARY = 1
_HEADER_BYTES = 348
_DATATYPE_AT = 70  # int16 datatype, then int16 bitpix (nifti1.h, struct nifti_1_header)


def _head(path: Path, n: int) -> bytes:
    with path.open("rb") as fh:
        head = fh.read(n)
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read(n)
        except (OSError, EOFError, zlib.error):
            return b""
    return head


def _header_path(path: Path) -> Path:
    """The ``.hdr`` of an Analyze-style pair (the file itself for ``.nii``/``.nii.gz``/``.hdr``)."""
    if path.name.lower().endswith((".img", ".img.gz")):
        base = path.name[: -len(".img.gz")] if path.name.lower().endswith(".gz") else path.stem
        for ext in (".hdr", ".HDR"):
            if path.with_name(base + ext).is_file():
                return path.with_name(base + ext)
    return path


def is_binary_nifti(path: Path) -> bool:
    """Whether a NIfTI-1 header says ``datatype`` 1 (either byte order).

    Args:
        path: A ``.nii``, ``.nii.gz``, ``.hdr`` or ``.img``.

    Returns:
        True for a 1-bit NIfTI-1 image.
    """
    head = _head(_header_path(path), _HEADER_BYTES)
    if len(head) < _HEADER_BYTES:
        return False
    for order in ("<", ">"):
        if int(np.frombuffer(head[:4], f"{order}i4")[0]) == _HEADER_BYTES:
            return int(np.frombuffer(head[_DATATYPE_AT : _DATATYPE_AT + 2], f"{order}i2")[0]) == DT_BINARY
    return False


def _payload(path: Path, header_path: Path, offset: int, n_bytes: int) -> bytes:
    data_path = path
    if header_path != path or path.name.lower().endswith(".hdr"):
        # A pair: the voxels are in the .img beside the .hdr, from vox_offset (normally 0).
        stem = header_path.name[: -len(".hdr")]
        found = [
            p for p in (header_path.with_name(stem + e) for e in (".img", ".IMG", ".img.gz")) if p.is_file()
        ]
        if not found:
            raise CorruptFile(path, f"1-bit NIfTI header {header_path.name} has no .img beside it")
        data_path = found[0]
    try:
        with data_path.open("rb") as fh:
            compressed = fh.read(2) == b"\x1f\x8b"
        with gzip.open(data_path, "rb") if compressed else data_path.open("rb") as fh:
            fh.seek(offset)
            return fh.read(n_bytes)
    except (OSError, EOFError, zlib.error) as exc:
        raise CorruptFile(path, f"cannot read the packed bits ({type(exc).__name__}: {exc})") from exc


def load_binary_nifti(path: Path) -> Any:
    """Unpack a 1-bit NIfTI-1 into an in-memory ``nibabel.Nifti1Image`` of ``uint8`` 0/1.

    Args:
        path: The file (``.nii``, ``.nii.gz``, or either file of a ``.hdr``/``.img`` pair).

    Returns:
        The image; ``img.extra["packed_bits"]`` is True.

    Raises:
        CorruptFile: Malformed header, or fewer packed bytes than the dimensions need.
    """
    import nibabel as nib

    header_path = _header_path(path)
    raw = _head(header_path, _HEADER_BYTES)
    try:
        header: Any = nib.Nifti1Header(raw, check=False)  # type: ignore[no-untyped-call]
        shape = tuple(int(s) for s in header.get_data_shape())
    except (ValueError, TypeError) as exc:
        raise CorruptFile(path, f"cannot parse the 1-bit NIfTI header ({exc})") from exc
    if not shape or min(shape) < 1:
        raise CorruptFile(path, f"1-bit NIfTI header has an empty shape {list(shape)}")
    n_voxels = int(np.prod(shape))
    n_bytes = -(-n_voxels // 8)
    offset = int(header["vox_offset"])
    payload = _payload(path, header_path, offset, n_bytes)
    if len(payload) < n_bytes:
        raise CorruptFile(
            path,
            f"1-bit NIfTI data truncated: {len(payload)} bytes of packed voxels, the header's shape "
            f"{list(shape)} needs {n_bytes}",
        )
    bits = np.unpackbits(np.frombuffer(payload, np.uint8), bitorder="little")[:n_voxels]
    data = bits.reshape(shape, order="F")  # NIfTI stores x fastest
    header.set_data_dtype(np.uint8)
    header["bitpix"] = 8
    image = nib.Nifti1Image(data, header.get_best_affine(), header)  # type: ignore[no-untyped-call]
    image.extra["packed_bits"] = True
    return image

"""Volumes nibabel reads: NIfTI-1/2 (``.nii``, ``.nii.gz``, pairs), and MINC1/2, MGH/MGZ, PAR/REC, AFNI, ECAT,
Analyze; the voxel axes (X, Y, Z) are reversed to canonical (Z, Y, X).

NIfTI-1 masks stored one bit per voxel (``datatype`` 1 = ``DT_BINARY``, ``bitpix`` 1), which nibabel refuses
("data code 1 not supported"), are read here too.

nifti1.h defines the code but not the bit order. We read the voxels as one continuous bit stream in NIfTI's
storage order (x fastest, then y, z, t), eight per byte, least significant bit first, as the writers we know
of pack them (see ``testbed/synth/write_nifti_bits.py``). The header is parsed by nibabel with its checks
off (the only check that fails is the data type), the bits are unpacked to ``uint8`` 0/1, and the result is
an ordinary in-memory ``Nifti1Image`` read and summarised like any other NIfTI.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from medio._axes import check_size
from medio.errors import CorruptFile, KeyNotFound, UnsupportedFormat
from medio.sniff import analyze_header
from medio.types import MedImage, Meta

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


def is_binary_nifti(path: Path) -> bool:
    """Whether the NIfTI-1 header of a ``.nii``, ``.nii.gz``, ``.hdr`` or ``.img`` says ``datatype`` 1 (either
    byte order): a 1-bit image.
    """
    head = _head(analyze_header(path), _HEADER_BYTES)
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
    """Unpack a 1-bit NIfTI-1 (``.nii``, ``.nii.gz``, or either file of a pair) into an in-memory
    ``nibabel.Nifti1Image`` of ``uint8`` 0/1 with ``img.extra["packed_bits"]`` True; ``CorruptFile`` for a
    malformed header or fewer packed bytes than the dimensions need.
    """
    import nibabel as nib

    header_path = analyze_header(path)
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


def _load(path: Path) -> Any:
    import nibabel as nib
    from nibabel.filebasedimages import ImageFileError

    if is_binary_nifti(path):
        return load_binary_nifti(path)  # 1 bit per voxel: nibabel refuses datatype 1
    try:
        # nibabel picks its gzip opener by a case-sensitive ".gz": "CASE.NII.GZ" is parsed from memory.
        if path.name.endswith((".nii", ".nii.gz", ".hdr", ".img", ".img.gz", ".HDR", ".IMG", ".NII")):
            img = nib.load(str(path))
        else:
            img = _load_by_content(path)
    except ImageFileError as exc:
        raise UnsupportedFormat(path, f"not a NIfTI image ({exc})") from exc
    except (OSError, EOFError, ValueError) as exc:
        raise CorruptFile(path, f"cannot parse NIfTI header ({type(exc).__name__}: {exc})") from exc
    if getattr(img, "affine", None) is None:
        # CIFTI-2 (.dconn.nii, .dtseries.nii): a matrix over brain ordinates, not an image on a voxel grid.
        raise UnsupportedFormat(path, f"{type(img).__name__} is not an image on a voxel grid")
    return img


def _load_by_content(path: Path) -> Any:
    """Load a NIfTI whose name lacks the extension nibabel needs (found by magic bytes): parse in memory."""
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
    header = {**_header_facts(img), "orientation": _orientation(img.affine), "source_shape": list(shape)}
    return MedImage(arr, _volume_meta("nifti", path, arr, zooms, img.affine, n_volumes, chosen, header))


def _volume_meta(
    fmt: str,
    path: Path,
    arr: np.ndarray,
    zooms: list[float],
    affine: np.ndarray,
    n_volumes: int,
    chosen: int,
    header: dict[str, Any],
) -> Meta:
    """The `Meta` of a volume read through nibabel, in medio's (Z, Y, X) order (``zooms`` in nibabel's)."""
    return Meta(
        format=fmt,
        path=str(path),
        axes={2: "YX", 3: "ZYX"}.get(arr.ndim, "?" * arr.ndim),
        spacing=tuple(reversed(zooms)),
        origin=tuple(float(v) for v in affine[:3, 3]),
        direction=_direction(affine),
        n_frames=n_volumes,
        frame_index=chosen if n_volumes > 1 else None,
        header=header,
    )


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
    if getattr(img, "extra", {}).get("packed_bits"):
        out["data_dtype_on_disk"] = "binary (DT_BINARY: 1 bit per voxel, unpacked to uint8 0/1)"
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
    """For `medio.inspect`: a NIfTI header, no voxels loaded.

    ``shape``/``axes`` in medio's canonical order (``ZYX`` of one volume, the order `read` returns and
    ``render --axis`` counts in), ``shape_on_disk``/``axes_on_disk`` as stored (``XYZT``), dtype, voxel sizes
    (``zooms``, on-disk order), orientation code and a few header fields. ``UnsupportedFormat`` when it is not
    NIfTI, ``CorruptFile`` for a malformed header.
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


# The other volume formats nibabel reads: the suffix (lower case, longest first) → (meta.format, loader name).
# ECAT has no entry in nib.load's suffix table, so it is loaded through nibabel.ecat directly.
NIBABEL_SUFFIXES: dict[str, str] = {
    ".brik.gz": "afni",
    ".brik": "afni",
    ".head": "afni",
    ".mnc": "minc",
    ".mgz": "mgh",
    ".mgh": "mgh",
    ".par": "parrec",
    ".rec": "parrec",
    ".v": "ecat",
    ".hdr": "analyze",
    ".img.gz": "analyze",
    ".img": "analyze",
}


def nibabel_kind(path: Path) -> str:
    """The ``meta.format`` of a non-NIfTI volume nibabel reads (``"minc"``, ``"mgh"``, ``"parrec"`` ...), from
    the suffix, else from the magic bytes (``"analyze"`` when nothing else matches).
    """
    name = path.name.lower()
    found = next((kind for suffix, kind in NIBABEL_SUFFIXES.items() if name.endswith(suffix)), None)
    if found is not None:
        return found
    try:
        with path.open("rb") as fh:
            head = fh.read(32)
    except OSError:
        return "analyze"
    if head.startswith((b"MATRIX6", b"MATRIX7")):
        return "ecat"
    if head.startswith((b"CDF\x01", b"CDF\x02")):
        return "minc"
    return "parrec" if head.startswith(b"# === DATA") else "analyze"


def _load_any(path: Path) -> Any:
    """Load a MINC/MGH/PAR-REC/AFNI/ECAT/Analyze image header (voxels stay on disk)."""
    import nibabel as nib
    from nibabel.filebasedimages import ImageFileError
    from nibabel.spatialimages import HeaderDataError

    kind = nibabel_kind(path)
    try:
        img: Any = nib.ecat.load(str(path)) if kind == "ecat" else nib.load(str(path))  # type: ignore[no-untyped-call]
    except FileNotFoundError as exc:
        # A two-file format whose partner is missing (.PAR without .REC, .HEAD without .BRIK, .hdr/.img).
        raise CorruptFile(path, f"{kind}: companion file missing ({Path(str(exc.filename)).name})") from exc
    except ImageFileError as exc:
        raise UnsupportedFormat(path, f"nibabel cannot read it as {kind} ({exc})") from exc
    except (OSError, EOFError, ValueError, KeyError, IndexError, HeaderDataError) as exc:
        raise CorruptFile(path, f"cannot parse {kind} header ({type(exc).__name__}: {exc})") from exc
    # Format-specific errors (PARRECError, AFNIImageError, MincError ...) are raised inside nibabel's code:
    # medio.read and medio.inspect turn them into CorruptFile (medio.read.library_failure).
    if not hasattr(img, "affine") or img.affine is None or len(img.shape) < 2:
        raise UnsupportedFormat(path, f"{type(img).__name__} is not an image on a voxel grid")
    return img


def _extra_axes(img: Any, kind: str, ndim: int) -> list[int]:
    """Positions of the non-spatial axes (time first): the 4th and later, except for MINC.

    MINC keeps the file's dimension order, where ``time`` is usually the first (slowest) dimension; nibabel's
    affine covers the three spatial dimensions in their order.
    """
    if ndim <= 3:
        return []
    if kind == "minc":
        names = list(getattr(getattr(img.dataobj, "minc_file", None), "_dim_names", None) or [])
        spatial = [i for i, n in enumerate(names) if str(n).endswith("space")]
        if len(names) == ndim and len(spatial) == 3:
            return [i for i in range(ndim) if i not in spatial]
        return list(range(ndim - 3))
    return list(range(3, ndim))


def _data_dtype(img: Any) -> np.dtype[Any]:
    try:
        dtype: np.dtype[Any] = np.dtype(img.get_data_dtype())
    except TypeError:  # ECAT: one dtype per frame
        dtype = np.dtype(img.get_data_dtype(0))
    return dtype


def read_nibabel(path: str | Path, *, volume: int | None = None) -> MedImage:
    """Read MINC1/MINC2, MGH/MGZ, PAR/REC, AFNI BRIK/HEAD, ECAT or Analyze into RAS ``(Z, Y, X)`` order.

    The voxel axes are permuted and flipped to the closest RAS orientation of the affine (``nibabel``'s
    ``io_orientation``), then reversed to medio's ``(Z, Y, X)``: the same array a RAS NIfTI gives. Only the
    chosen volume of a 4D image is read (and reoriented). Scaling stored in the header is applied by nibabel.

    Args:
        path: The file (for two-file formats, either file; the other must sit beside it).
        volume: Index along the 4th axis (time, dynamics, frames); default 0.

    Returns:
        ``(Z, Y, X)`` (or ``(Y, X)``); ``meta.format`` is the kind (``"minc"``, ``"mgh"``, ``"parrec"``,
        ``"afni"``, ``"ecat"``, ``"analyze"``); ``meta.n_frames`` the number of volumes.

    Raises:
        UnsupportedFormat: Not an image nibabel reads on a voxel grid.
        CorruptFile: Malformed or truncated file, or its companion file is missing.
        ImageTooLarge: The volume exceeds medio's memory cap.
        KeyNotFound: ``volume`` out of range.
    """
    from nibabel.orientations import apply_orientation, inv_ornt_aff, io_orientation

    path = Path(path)
    kind = nibabel_kind(path)
    img = _load_any(path)
    shape = tuple(int(s) for s in img.shape)
    extra = _extra_axes(img, kind, len(shape))
    spatial = [n for i, n in enumerate(shape) if i not in extra]
    n_volumes = shape[extra[0]] if extra else 1
    if volume is not None and not 0 <= volume < n_volumes:
        raise KeyNotFound(path, f"volume {volume} out of range: the image has {n_volumes} volume(s)")
    chosen = volume or 0
    dtype = _data_dtype(img)
    # Scaled data come back as float64 from nibabel: size the check for that, before any voxel is read.
    check_size(path, tuple(spatial), np.dtype(np.float64))
    index = tuple(
        slice(None) if i not in extra else (chosen if i == extra[0] else 0) for i in range(len(shape))
    )
    try:
        data = np.asanyarray(img.dataobj[index])
    except FileNotFoundError as exc:
        raise CorruptFile(path, f"{kind}: companion file missing ({Path(str(exc.filename)).name})") from exc
    except (OSError, EOFError, ValueError, IndexError) as exc:
        raise CorruptFile(path, f"cannot read {kind} voxels ({type(exc).__name__}: {exc})") from exc
    if data.dtype == np.float64:
        data = data.astype(np.float32)  # nibabel's scaling yields float64; float32 holds any stored precision
    affine = np.asarray(img.affine, dtype=np.float64)
    on_disk = _orientation(affine)
    if data.ndim == 3:
        ornt = io_orientation(affine)  # type: ignore[no-untyped-call]
        data = apply_orientation(data, ornt)  # type: ignore[no-untyped-call]
        affine = affine @ inv_ornt_aff(ornt, img.shape[:3])  # type: ignore[no-untyped-call]
    arr = np.ascontiguousarray(np.transpose(data)) if data.ndim >= 2 else data
    zooms = [float(z) for z in np.linalg.norm(affine[:3, : data.ndim], axis=0)]
    header = {
        "nibabel_class": type(img).__name__,
        "data_dtype": str(dtype),
        "orientation": _orientation(affine),
        "orientation_on_disk": on_disk,
        "source_shape": list(shape),
    }
    return MedImage(arr, _volume_meta(kind, path, arr, zooms, affine, n_volumes, chosen, header))


def summarize_nibabel(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: a MINC/MGH/PAR-REC/AFNI/ECAT/Analyze header, no voxels read.

    ``shape``/``axes`` in medio's canonical order (RAS ``ZYX`` of one volume: what `read` returns and
    ``render --axis`` counts in), ``shape_on_disk`` as nibabel reports it, kind, dtype, voxel sizes,
    on-disk orientation and number of volumes. ``UnsupportedFormat`` when nibabel does not read it,
    ``CorruptFile`` for a malformed header or a missing companion file.
    """
    from nibabel.orientations import io_orientation

    path = Path(path)
    img = _load_any(path)
    affine = np.asarray(img.affine, dtype=np.float64)
    kind = nibabel_kind(path)
    on_disk = [int(s) for s in img.shape]
    extra = _extra_axes(img, kind, len(on_disk))
    spatial = [n for i, n in enumerate(on_disk) if i not in extra]
    ras = list(spatial)
    if len(spatial) == 3:
        for axis, (target, _) in enumerate(io_orientation(affine)):  # type: ignore[no-untyped-call]
            ras[int(target)] = spatial[axis]
    return {
        "kind": kind,
        "nibabel_class": type(img).__name__,
        "shape": ras[::-1],
        "axes": {2: "YX", 3: "ZYX"}.get(len(ras), "?" * len(ras)),
        "shape_on_disk": on_disk,
        "dtype": str(_data_dtype(img)),
        "zooms": [float(z) for z in np.linalg.norm(affine[:3, :3], axis=0)],
        "orientation": _orientation(affine),
        "n_volumes": int(img.shape[extra[0]]) if extra else 1,
    }

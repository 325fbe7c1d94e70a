"""Deterministic writers for every non-DICOM raw format of the suite.

Each writer pins whatever a library would otherwise take from the clock or the environment: gzip and zip
member times, the MAT-file header text, HDF5 object times, compression levels and video encoder options.
"""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

_FIXED_ZIP_TIME = (2020, 1, 1, 0, 0, 0)
_MAT_HEADER = b"MATLAB 5.0 MAT-file, Platform: posix, Created by: medstrat-synth"


def _parent(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_text(path: Path, text: str) -> None:
    """Write UTF-8 text (no trailing newline is added)."""
    _parent(path).write_text(text, encoding="utf-8")


def write_json(path: Path, obj: Any) -> None:
    """Write JSON with sorted keys and 2-space indentation."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False))


def write_nifti(
    path: Path,
    zyx: np.ndarray,
    spacing: tuple[float, ...],
    origin: tuple[float, float, float] = (0.0, 0.0, 0.0),
) -> None:
    """Write a canonical ``(Z, Y, X)`` (or ``(T, Z, Y, X)``) array as NIfTI-1 with data in ``(X, Y, Z[,
    T])`` order.

    ``.nii.gz`` is compressed here with a zero gzip mtime, because nibabel's own writer stores the
    wall-clock time.

    Args:
        path: ``.nii`` or ``.nii.gz``.
        zyx: Canonical array.
        spacing: ``(x, y, z[, t])`` voxel size.
        origin: World position of voxel ``(0, 0, 0)`` in mm.
    """
    import nibabel as nib

    data = np.ascontiguousarray(zyx.T)  # (Z, Y, X) -> (X, Y, Z); (T, Z, Y, X) -> (X, Y, Z, T)
    affine = np.diag([*spacing[:3], 1.0])
    affine[:3, 3] = origin
    img = nib.Nifti1Image(data, affine)  # type: ignore[no-untyped-call]
    img.header.set_zooms(tuple(float(s) for s in spacing[: data.ndim]))  # type: ignore[no-untyped-call]
    img.header.set_xyzt_units("mm", "sec")  # type: ignore[no-untyped-call]
    raw = img.to_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.compress(raw, compresslevel=1, mtime=0)
    _parent(path).write_bytes(raw)


def write_itk(
    path: Path,
    zyx: np.ndarray,
    spacing: tuple[float, ...],
    origin: tuple[float, ...] = (0.0, 0.0, 0.0),
    compress: bool = False,
) -> None:
    """Write a canonical ``(Z, Y, X)`` or ``(Y, X)`` array with SimpleITK (``.mha``, ``.mhd`` + ``.raw``,
    ``.nrrd``).

    Args:
        path: Output path; the extension chooses the format.
        zyx: Canonical array (SimpleITK's ``GetImageFromArray`` order).
        spacing: ``(x, y[, z])`` in mm.
        origin: ``(x, y[, z])`` world origin in mm.
        compress: Use the writer's compression (off by default so the bytes do not depend on zlib builds).
    """
    import SimpleITK as sitk

    img = sitk.GetImageFromArray(zyx)
    img.SetSpacing([float(s) for s in spacing[: zyx.ndim]])  # type: ignore[no-untyped-call]
    img.SetOrigin([float(o) for o in origin[: zyx.ndim]])  # type: ignore[no-untyped-call]
    sitk.WriteImage(img, str(_parent(path)), useCompression=compress)


def write_tiff(path: Path, pixels: np.ndarray, pages: bool = False) -> None:
    """Write a TIFF; ``pages=True`` stores a ``(Z, H, W)`` stack as one page per slice."""
    import tifffile

    if pages:
        with tifffile.TiffWriter(_parent(path)) as tif:
            for page in pixels:
                tif.write(page, photometric="minisblack", metadata=None)
    else:
        tifffile.imwrite(
            _parent(path), pixels, photometric="rgb" if pixels.ndim == 3 else "minisblack", metadata=None
        )


def write_pillow(path: Path, pixels: np.ndarray, **options: Any) -> None:
    """Write PNG/JPEG/BMP/PGM with Pillow (format from the extension; JPEG quality fixed
    at 92 unless given)."""
    from PIL import Image

    if path.suffix.lower() in {".jpg", ".jpeg"}:
        options.setdefault("quality", 92)
    img = Image.fromarray(pixels)  # uint16 arrays become mode "I;16"
    img.save(_parent(path), **options)


def write_npy(path: Path, array: np.ndarray) -> None:
    """Write one array as ``.npy``."""
    np.save(_parent(path), array, allow_pickle=False)


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write a compressed ``.npz`` whose zip members carry a fixed time (``numpy.savez`` stamps the clock)."""
    with zipfile.ZipFile(_parent(path), "w") as zf:
        for key in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_FIXED_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buf.getvalue(), compresslevel=6)


def add_coco_boxes(
    annotations: list[dict[str, Any]], image_id: int, boxes: list[list[int]], category_ids: list[int]
) -> None:
    """Append one COCO ``annotations`` entry per box (ids continue the list; ``area`` = w * h, no crowd)."""
    for box, category in zip(boxes, category_ids, strict=True):
        entry = {"id": len(annotations) + 1, "image_id": image_id, "category_id": category, "bbox": box}
        annotations.append({**entry, "area": box[2] * box[3], "iscrowd": 0})


def write_h5(path: Path, arrays: dict[str, np.ndarray], attrs: dict[str, Any] | None = None) -> None:
    """Write datasets (gzip level 4) and root attributes to an HDF5 file without object timestamps."""
    import h5py

    with h5py.File(_parent(path), "w", libver=("earliest", "v110"), track_times=False) as f:
        for key in sorted(arrays):
            f.create_dataset(key, data=arrays[key], compression="gzip", compression_opts=4, track_times=False)
        for key, value in sorted((attrs or {}).items()):
            f.attrs[key] = value


def write_mat5(path: Path, arrays: dict[str, Any]) -> None:
    """Write a MAT-file v5 with scipy and a fixed header text (scipy writes the creation time there)."""
    import scipy.io

    buf = io.BytesIO()
    scipy.io.savemat(buf, arrays, do_compression=False, oned_as="column")
    raw = bytearray(buf.getvalue())
    raw[:116] = _MAT_HEADER.ljust(116, b" ")
    _parent(path).write_bytes(bytes(raw))


def write_mat73(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write a MAT-file v7.3: HDF5 with a 512-byte MATLAB user block; arrays are stored transposed
    (column-major).

    Args:
        path: Output ``.mat`` path.
        arrays: Variables in NumPy (row-major) order; MATLAB readers see the same shape.
    """
    import h5py

    with h5py.File(
        _parent(path), "w", userblock_size=512, libver=("earliest", "v110"), track_times=False
    ) as f:
        for key in sorted(arrays):
            arr = np.asarray(arrays[key])
            d = f.create_dataset(key, data=arr.T, track_times=False)
            d.attrs["MATLAB_class"] = np.bytes_(
                {
                    "float64": "double",
                    "float32": "single",
                    "uint8": "uint8",
                    "uint16": "uint16",
                    "int16": "int16",
                }[arr.dtype.name]
            )
    header = b"MATLAB 7.3 MAT-file, Platform: posix, Created by: medstrat-synth HDF5 schema 1.00 ."
    block = bytearray(header.ljust(128, b" "))
    block[124:128] = b"\x00\x02IM"
    with open(path, "r+b") as fh:
        fh.write(bytes(block))


def write_parquet(path: Path, columns: dict[str, list[Any]]) -> None:
    """Write a parquet table (snappy-free: no compression, fixed row group) with pyarrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(columns)
    pq.write_table(table, _parent(path), compression="none", row_group_size=1024, write_statistics=False)


def png_bytes(pixels: np.ndarray) -> bytes:
    """Encode an image as PNG bytes (for table columns)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def write_video(path: Path, frames: np.ndarray, fps: int, codec: str) -> None:
    """Encode ``(T, H, W, 3)`` uint8 frames (``mjpeg`` in .avi, ``mpeg4`` in .mp4) single-threaded.

    Single-threaded encoding and ``fflags=+bitexact`` keep the container free of version strings and the
    bitstream independent of thread scheduling.
    """
    import av

    with av.open(str(_parent(path)), mode="w", options={"fflags": "+bitexact"}) as container:
        stream: Any = container.add_stream(codec, rate=fps)  # a VideoStream; Any avoids the union
        stream.width, stream.height = int(frames.shape[2]), int(frames.shape[1])
        stream.pix_fmt = "yuvj420p" if codec == "mjpeg" else "yuv420p"
        stream.thread_count = 1
        stream.codec_context.flags |= av.codec.context.Flags.bitexact
        if codec != "mjpeg":
            stream.codec_context.gop_size = 12
            stream.codec_context.bit_rate = 400_000
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)

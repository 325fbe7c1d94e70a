"""DICOM single files (classic and enhanced multi-frame) via pydicom; modality LUT applied at read time."""

from __future__ import annotations

import logging
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medio import _dicom_tags as tags
from medio._axes import check_size
from medio.errors import CorruptFile, KeyNotFound, MedioError, UnsupportedFormat, UnsupportedTransferSyntax
from medio.types import MedImage, Meta

if TYPE_CHECKING:
    from pydicom.dataset import Dataset

log = logging.getLogger(__name__)


def _plugin_failures_to_debug(record: logging.LogRecord) -> bool:
    """pydicom logs every failed decoder plugin with its traceback (``LOGGER.exception``) before raising.

    medio reports that failure itself, in one line naming the file (``UnsupportedTransferSyntax``,
    ``CorruptFile``), so the plugin's traceback is demoted to a debug line of medio's logger instead of
    reaching the run's log as an ERROR (e.g. Pillow's decompression-bomb error on a 12-bit JPEG frame).
    """
    if record.exc_info is None:
        return True
    log.debug("pydicom decoder plugin failed: %s", record.getMessage())
    return False


logging.getLogger("pydicom.pixels.decoders.base").addFilter(_plugin_failures_to_debug)


# Pixel data with trailing padding is decoded correctly by pydicom (it drops the padding) yet reported both
# as a WARNING log record and as a UserWarning on every read. Nothing is wrong and nobody can act on it, so it
# becomes a debug line of medio's logger (the run's log keeps WARNING for what needs attention).
_BENIGN_PYDICOM = re.compile(
    r"The pixel data is \d+ bytes long, which indicates it contains \d+ bytes of excess padding"
)


def _benign_notes_to_debug(record: logging.LogRecord) -> bool:
    """Demote pydicom's notes about data it handled correctly (excess pixel padding) to medio debug lines."""
    if record.levelno > logging.WARNING or not _BENIGN_PYDICOM.match(record.getMessage()):
        return True
    log.debug("pydicom: %s", record.getMessage())
    return False


logging.getLogger("pydicom").addFilter(_benign_notes_to_debug)
warnings.filterwarnings("ignore", message=_BENIGN_PYDICOM.pattern, category=UserWarning)

_PIXEL_KEYWORDS = ("PixelData", "FloatPixelData", "DoubleFloatPixelData")
# Multi-frame objects acquired over time rather than space (cine): PS3.3 C.7.6.5 Cine Module.
_TIME_KEYWORDS = ("FrameTime", "FrameTimeVector", "CineRate", "RecommendedDisplayFrameRate")


def open_dataset(path: str | Path, *, stop_before_pixels: bool = False) -> tuple[Dataset, bool]:
    """Read a DICOM dataset (headers only with ``stop_before_pixels``), retrying with ``force=True`` when the
    128-byte preamble is missing; returns it and whether the preamble was missing.

    Raises:
        UnsupportedFormat: The file is not DICOM even when forced.
        CorruptFile: The file is truncated or malformed.
    """
    import pydicom
    from pydicom.errors import InvalidDicomError
    from pydicom.uid import ExplicitVRBigEndian, ExplicitVRLittleEndian, ImplicitVRLittleEndian

    forced = False
    try:
        try:
            ds = pydicom.dcmread(path, stop_before_pixels=stop_before_pixels)
        except InvalidDicomError:
            forced = True
            ds = pydicom.dcmread(path, stop_before_pixels=stop_before_pixels, force=True)
    except (OSError, EOFError, ValueError, KeyError, TypeError, OverflowError) as exc:
        raise CorruptFile(path, f"cannot parse DICOM ({type(exc).__name__}: {exc})") from exc
    if forced and len(ds) == 0:
        raise UnsupportedFormat(path, "not a DICOM file (no preamble and no parsable data elements)")
    file_meta = ds.file_meta
    if not file_meta.get("TransferSyntaxUID"):
        # No file meta (no preamble, no group 0002): pydicom guessed the encoding while reading.
        implicit, little = ds.original_encoding
        if implicit:
            file_meta.TransferSyntaxUID = ImplicitVRLittleEndian
        else:
            file_meta.TransferSyntaxUID = ExplicitVRLittleEndian if little else ExplicitVRBigEndian
    return ds, forced


def _decode(path: Path, ds: Dataset, frame: int | None) -> np.ndarray:
    """Decode all frames (``frame=None``) or one frame; YBR is converted to RGB by pydicom (``raw=False``)."""
    from pydicom.pixels.utils import pixel_array

    tsyntax = ds.file_meta.TransferSyntaxUID
    try:
        arr = pixel_array(ds, index=frame)
    except (RuntimeError, NotImplementedError) as exc:
        if tsyntax.is_compressed:
            plugins = tags.DECODER_PLUGINS.get(str(tsyntax), ("gdcm",))
            reason = (
                f"pixel data use the {tsyntax.name} transfer syntax ({tsyntax}) and no installed pydicom "
                f"decoder can read it; install one of: {', '.join(plugins)}"
            )
            raise UnsupportedTransferSyntax(
                path, reason, transfer_syntax=str(tsyntax), plugins=plugins
            ) from exc
        raise CorruptFile(path, f"cannot decode pixel data ({exc})") from exc
    except (ValueError, EOFError, OSError, KeyError, AttributeError, TypeError) as exc:
        raise CorruptFile(path, f"cannot decode pixel data ({type(exc).__name__}: {exc})") from exc
    return np.asarray(arr)


def _apply_rescale(arr: np.ndarray, pairs: list[tuple[float, float] | None]) -> tuple[np.ndarray, bool]:
    """Apply the modality LUT per frame (``pairs[i]`` for ``arr[i]``; one pair for a single image).

    Integer slope 1 with an integer intercept keeps an integer dtype (CT stays compact in HU); anything else
    becomes float32.
    """
    if all(p is None or p == (1.0, 0.0) for p in pairs):
        return arr, False
    resolved = [p or (1.0, 0.0) for p in pairs]
    integral = all(s == 1.0 and float(i).is_integer() for s, i in resolved)
    out: np.ndarray
    if integral and arr.dtype.kind in "iu":
        out = arr.astype(np.int32)
        lo, hi = -32768, 32767
    else:
        out = arr.astype(np.float32)
        lo, hi = None, None
    if len(resolved) == 1:
        slope, intercept = resolved[0]
        out = out * slope + intercept if not integral else out + int(intercept)
    else:
        for i, (slope, intercept) in enumerate(resolved):
            out[i] = out[i] * slope + intercept if not integral else out[i] + int(intercept)
    if lo is not None and out.size and lo <= out.min() and out.max() <= hi:
        out = out.astype(np.int16)
    return out, True


def read_dicom(path: str | Path, *, frame: int | None = None) -> MedImage:
    """Read one DICOM file into canonical axes with the modality LUT applied.

    Args:
        path: The file (preamble optional).
        frame: For multi-frame objects, decode only this frame (0-based); ``None`` decodes all frames.

    Returns:
        The image: ``(H, W)``, ``(H, W, 3)``, or ``(Z|T, H, W[, 3])`` for all frames of a multi-frame object.

    Raises:
        UnsupportedFormat: Not DICOM, or no pixel data.
        UnsupportedTransferSyntax: Compressed pixel data without an installed decoder.
        CorruptFile: Truncated or malformed file.
        KeyNotFound: ``frame`` is out of range.
    """
    return _read(Path(path), frame, header=True)


def read_slice(path: str | Path) -> MedImage:
    """`read_dicom` for the 2nd and later slices of a series: the same pixels and geometry, without the
    header subset (a series keeps its first slice's header; on a 50-slice series the subsets cost a quarter
    of the read). ``meta.header`` holds only the transfer-syntax facts.
    """
    return _read(Path(path), None, header=False)


def _read(path: Path, frame: int | None, *, header: bool) -> MedImage:
    from pydicom.pixels.processing import apply_color_lut

    ds, forced = open_dataset(path)
    if not any(k in ds for k in _PIXEL_KEYWORDS):
        sop = tags.text(ds, "SOPClassUID") or "unknown SOP class"
        raise UnsupportedFormat(path, f"DICOM object without pixel data ({sop})")
    n_frames = int(tags.first_float(ds.get("NumberOfFrames")) or 1)
    if frame is not None and not 0 <= frame < n_frames:
        raise KeyNotFound(path, f"frame {frame} out of range: the object has {n_frames} frame(s)")
    index = frame if n_frames > 1 else None
    # The decoded size, from the header, before anything is decoded (all frames, or the one asked for).
    bits = int(ds.get("BitsAllocated") or 8)
    dims = (
        n_frames if index is None else 1,
        int(ds.get("Rows") or 0),
        int(ds.get("Columns") or 0),
        int(ds.get("SamplesPerPixel") or 1),
    )
    check_size(path, dims, f"uint{max(bits, 8) if bits in (8, 16, 32, 64) else 8}")
    arr = _decode(path, ds, index)
    samples = int(ds.get("SamplesPerPixel") or 1)
    photometric = tags.text(ds, "PhotometricInterpretation") or ("RGB" if samples == 3 else "MONOCHROME2")
    facts: dict[str, Any] = tags.header_subset(ds) if header else {}
    facts["transfer_syntax"] = str(ds.file_meta.TransferSyntaxUID)
    facts["preamble_missing"] = forced
    facts["big_endian"] = not ds.file_meta.TransferSyntaxUID.is_little_endian
    if photometric == "PALETTE COLOR":
        arr = np.asarray(apply_color_lut(arr, ds))
        if arr.dtype == np.uint16:
            # 16-bit palette entries (PS3.3 C.7.6.3.1.5) → 8-bit display values; 65535 / 257 = 255 exactly.
            arr = (arr // 257).astype(np.uint8)
    if photometric == "PALETTE COLOR" or photometric.startswith("YBR"):
        facts["photometric_original"], photometric = photometric, "RGB"
    all_frames = n_frames > 1 and frame is None
    enhanced = "PerFrameFunctionalGroupsSequence" in ds or "SharedFunctionalGroupsSequence" in ds
    rescale_slope = rescale_intercept = None
    applied = False
    if samples == 1:
        frames = range(n_frames) if all_frames else [frame or 0]
        pairs = [tags.rescale_for_frame(ds, i if enhanced else None) for i in frames]
        first = next((p for p in pairs if p is not None), None)
        if first is not None:
            rescale_slope, rescale_intercept = first
        if len({p for p in pairs}) > 1:
            facts["rescale_per_frame"] = [list(p) if p else None for p in pairs]
        arr, applied = _apply_rescale(arr, pairs)
    center, width = tags.window_for_frame(ds, (frame or 0) if enhanced else None)
    row_col = tags.pixel_spacing(ds)
    timed = any(k in ds for k in _TIME_KEYWORDS) and not enhanced
    fps = None
    if timed:
        frame_time = tags.first_float(ds.get("FrameTime"))
        rate = tags.first_float(ds.get("CineRate") or ds.get("RecommendedDisplayFrameRate"))
        fps = rate or (1000.0 / frame_time if frame_time else None)
    color = photometric == "RGB" or (arr.ndim == (3 if not all_frames else 4) and arr.shape[-1] in (3, 4))
    axes = ("T" if timed else "Z") * all_frames + "YX" + "C" * color
    spacing: tuple[float, ...] | None = None
    if row_col is not None:
        spacing = row_col
        if all_frames:
            spacing = (tags.slice_thickness(ds) or 1.0, *row_col) if not timed else (1.0, *row_col)
        if color:
            spacing = (*spacing, 1.0)
    meta = Meta(
        format="dicom",
        path=str(path),
        axes=axes,
        spacing=spacing,
        origin=tags.position(ds, 0 if enhanced else None),
        direction=tags.direction_matrix(tags.orientation(ds, 0 if enhanced else None)),
        modality=tags.text(ds, "Modality"),
        body_part=tags.text(ds, "BodyPartExamined"),
        photometric=photometric,
        rescale_slope=rescale_slope,
        rescale_intercept=rescale_intercept,
        rescale_applied=applied,
        window_center=center,
        window_width=width,
        n_frames=n_frames,
        fps=fps,
        frame_index=frame if n_frames > 1 else None,
        header=facts,
    )
    return MedImage(arr, meta)


def summarize_dicom(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: shape, dtype, modality, window, rescale, transfer syntax and a subset of
    identifying tags, from the header only (``stop_before_pixels``); ``MedioError`` when it cannot be parsed.
    """
    path = Path(path)
    ds, forced = open_dataset(path, stop_before_pixels=True)
    rows, cols = ds.get("Rows"), ds.get("Columns")
    n_frames = int(tags.first_float(ds.get("NumberOfFrames")) or 1)
    samples = int(ds.get("SamplesPerPixel") or 1)
    shape: list[int] | None = None
    if rows and cols:
        shape = (
            ([n_frames] if n_frames > 1 else []) + [int(rows), int(cols)] + ([samples] if samples > 1 else [])
        )
    bits = int(ds.get("BitsAllocated") or 0)
    signed = int(ds.get("PixelRepresentation") or 0) == 1
    dtype = f"{'int' if signed else 'uint'}{bits}" if bits in (8, 16, 32) else None
    slope_intercept = tags.rescale_for_frame(ds, 0)
    center, width = tags.window_for_frame(ds, 0)
    tsyntax = ds.file_meta.TransferSyntaxUID
    return {
        "shape": shape,
        "dtype": dtype,
        "modality": tags.text(ds, "Modality"),
        "body_part": tags.text(ds, "BodyPartExamined"),
        "photometric": tags.text(ds, "PhotometricInterpretation"),
        "rescale": list(slope_intercept) if slope_intercept else None,
        "window": [center, width] if center is not None and width is not None else None,
        "pixel_spacing": list(tags.pixel_spacing(ds) or []) or None,
        "n_frames": n_frames,
        "transfer_syntax": f"{tsyntax.name} ({tsyntax})",
        "preamble_missing": forced,
        "has_pixel_data": rows is not None,
        "header": tags.header_subset(ds),
    }


def is_dicom_file(path: Path) -> bool:
    """Whether ``path`` starts like a DICOM file (with or without preamble)."""
    from medio.sniff import sniff_bytes

    try:
        with path.open("rb") as fh:
            head = fh.read(1100)
    except OSError:
        return False
    return sniff_bytes(head) == "dicom"


__all__ = ["MedioError", "is_dicom_file", "open_dataset", "read_dicom", "read_slice", "summarize_dicom"]

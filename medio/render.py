"""Render a MedImage (or array) to 8-bit pixels following radiology display conventions.

Order of operations (DICOM PS3.4 N.2): modality LUT (already applied by the readers) → VOI window →
presentation (MONOCHROME1 inverted last). The first rule that holds picks a grey image's mapping:

1. ``label=True``: ids copied unchanged (integers in 0..255 only).
2. explicit ``window=(center, width)``: DICOM linear window (PS3.3 C.11.2.1.2.1).
3. header window (first value when several): same.
4. modality CT: window preset by body part (:data:`CT_PRESETS`).
5. ``uint8`` / ``bool`` data: passed through (bool → 0/255).
6. MR, PT, NM, US, microscopy modality, or float data: 0.5–99.5 percentile clip, then linear.
7. other integer data (e.g. 16-bit without modality): min–max linear, never clipped.

Colour images stay colour: ``uint8`` unchanged, wider integers scaled by their nominal range (BitsStored),
floats min–max over all channels. Statistics are taken on the rendered slice. NaN/inf pixels become 0;
constant images become zeros (no division by zero). Nothing is resampled, so label maps keep exact ids
(nearest neighbour).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from medio.errors import InvalidLabelMap, NotAnImage
from medio.types import MedImage, Meta, Rendered

# CT window presets (name, center, width) in HU and the BodyPartExamined keywords they serve; the usual
# radiology defaults.
_CT_WINDOWS: dict[tuple[str, float, float], tuple[str, ...]] = {
    ("brain", 40.0, 80.0): ("HEAD", "BRAIN", "SKULL"),
    ("soft_tissue_neck", 40.0, 350.0): ("NECK",),
    ("lung", -600.0, 1500.0): ("CHEST", "LUNG", "THORAX"),
    ("abdomen", 40.0, 400.0): ("ABDOMEN", "PELVIS", "KIDNEY"),
    ("liver", 60.0, 160.0): ("LIVER",),
    ("bone", 400.0, 1800.0): ("SPINE", "BONE", "EXTREMITY", "KNEE", "HIP"),
}
CT_PRESETS: dict[str, tuple[str, float, float]] = {
    part: w for w, parts in _CT_WINDOWS.items() for part in parts
}
CT_DEFAULT_PRESET: tuple[str, float, float] = ("soft_tissue", 40.0, 400.0)
PERCENTILES = (0.5, 99.5)
PERCENTILE_MODALITIES = {"MR", "PT", "NM", "US", "SM", "GM", "XC", "OP", "MICROSCOPY", "OCT"}


def choose_slice(
    volume_shape: tuple[int, ...], axis: int = 0, mask: np.ndarray | None = None, index: int | None = None
) -> int:
    """Pick the slice to render along ``axis``.

    Args:
        volume_shape: Shape of the volume (at least 3 dims).
        axis: Slicing axis.
        mask: Optional mask of the volume's spatial shape: the slice with the most foreground wins.
        index: Explicit slice (negative counts from the end).

    Returns:
        The slice index: ``index`` when given, else the largest-foreground slice of ``mask`` when it has any
        foreground, else the middle slice ``n // 2``.

    Raises:
        IndexError: ``index`` or ``axis`` out of range.
        ValueError: ``mask`` does not match the volume's shape.
    """
    if not -len(volume_shape) <= axis < len(volume_shape):
        raise IndexError(f"axis {axis} out of range for a volume of shape {list(volume_shape)}")
    n = volume_shape[axis]
    if index is not None:
        if not -n <= index < n:
            raise IndexError(f"slice {index} out of range: axis {axis} has {n} slices")
        return index % n
    if mask is not None:
        if tuple(mask.shape[:3]) != tuple(volume_shape[:3]):
            raise ValueError(
                f"mask shape {list(mask.shape)} does not match volume shape {list(volume_shape)}"
            )
        other = tuple(i for i in range(mask.ndim) if i != axis % len(volume_shape))
        counts = np.count_nonzero(mask, axis=other)
        if counts.max(initial=0) > 0:
            return int(np.argmax(counts))
    return n // 2


def _as_image(image: MedImage | np.ndarray) -> MedImage:
    if isinstance(image, MedImage):
        return image
    from medio._axes import guess_axes

    arr = np.asarray(image)
    return MedImage(arr, Meta(format="array", path="", axes=guess_axes(arr.shape, arr.dtype)))


def _pick_plane(
    image: MedImage, slice_index: int | None, axis: int, frame: int | None, mask: np.ndarray | None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Reduce the array to one 2D plane (grey or colour) and say which one was taken."""
    arr, meta = image.array, image.meta
    axes = meta.axes or "?" * arr.ndim
    info: dict[str, Any] = {"slice_index": None, "axis": None, "frame": meta.frame_index}
    color = axes.endswith("C")
    multi_frame = axes[:1] == "Z" and (meta.n_frames or 1) > 1 and meta.frame_index is None
    if axes[:1] == "T" or (frame is not None and multi_frame):
        # Videos and multi-frame objects: choose a frame first (a single decoded frame is simply taken).
        t = arr.shape[0]
        if frame is not None and t > 1:
            k = choose_slice(arr.shape, 0, None, frame)
        elif frame is not None and meta.frame_index is not None and frame != meta.frame_index:
            raise IndexError(f"frame {frame} requested but only frame {meta.frame_index} was read")
        else:
            k = 0 if t == 1 else t // 2
        arr = arr[k]
        axes = axes[1:]
        info["frame"] = meta.frame_index if t == 1 and meta.frame_index is not None else k
    elif frame is not None and frame != meta.frame_index:
        raise IndexError(
            f"frame {frame} requested but the image has no frame axis (read frame {meta.frame_index})"
        )
    spatial = arr.ndim - color
    if spatial >= 3:
        # Collapse leading non-spatial axes (e.g. time of a 4D array) to their middle, then slice the volume.
        while spatial > 3:
            arr = arr[arr.shape[0] // 2]
            spatial -= 1
        k = choose_slice(arr.shape, axis, mask, slice_index)
        arr = np.take(arr, k, axis=axis)
        info["slice_index"], info["axis"] = k, axis % 3
    elif slice_index not in (None, 0):
        raise IndexError(f"slice {slice_index} requested but the image is 2D")
    return arr, info


def _window(arr: np.ndarray, center: float, width: float) -> np.ndarray:
    # PS3.3 C.11.2.1.2.1 linear VOI function; width below 1 is not allowed by the standard.
    denominator = max(float(width) - 1.0, 1.0)
    scaled = ((arr - (center - 0.5)) / denominator + 0.5) * 255.0
    return np.clip(scaled, 0.0, 255.0)


def _linear(arr: np.ndarray, lo: float, hi: float) -> np.ndarray:
    if not hi > lo:
        return np.zeros_like(arr, dtype=np.float64)
    return np.clip((arr - lo) * (255.0 / (hi - lo)), 0.0, 255.0)


def stretch_uint8(arr: np.ndarray) -> np.ndarray:
    """Stretch one 2-D band to ``uint8`` 0..255 between its 0.5 and 99.5 percentiles (min/max when those are
    equal; all zeros for a constant or non-finite band).

    Used where several bands become the channels of one RGB view (CZI fluorescence, ENVI cubes), so each
    band gets its own range.
    """
    values = np.nan_to_num(arr.astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    if values.size == 0:
        return np.zeros(arr.shape, np.uint8)
    out: np.ndarray = np.rint(_linear(values, *_percentile_range(values))).astype(np.uint8)
    return out


def _percentile_range(values: np.ndarray) -> tuple[float, float]:
    """The 0.5 and 99.5 percentiles of finite values, or their min and max when those are equal."""
    lo, hi = (float(v) for v in np.percentile(values, PERCENTILES))
    return (lo, hi) if hi > lo else (float(values.min()), float(values.max()))


def _grey(
    arr: np.ndarray, meta: Meta, window: tuple[float, float] | None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Map a grey plane to 0..255 floats and describe the mapping."""
    modality = (meta.modality or "").upper()
    if arr.dtype == bool:
        return arr.astype(np.float64) * 255.0, {"method": "binary"}
    values = arr.astype(np.float64, copy=False)
    finite = np.isfinite(values)
    has_bad = not bool(finite.all())
    valid = values[finite] if has_bad else values
    info: dict[str, Any]
    if valid.size == 0:
        return np.zeros(arr.shape), {"method": "empty (no finite pixel)"}
    if window is not None:
        out, info = _window(values, *window), {"method": "window", "window": [window[0], window[1]]}
    elif meta.window_center is not None and meta.window_width is not None:
        c, w = meta.window_center, meta.window_width
        out, info = _window(values, c, w), {"method": "dicom_window", "window": [c, w]}
    elif modality == "CT":
        name, c, w = CT_PRESETS.get((meta.body_part or "").upper().replace(" ", ""), CT_DEFAULT_PRESET)
        out, info = _window(values, c, w), {"method": f"ct_preset:{name}", "window": [c, w]}
    elif arr.dtype == np.uint8:
        out, info = values, {"method": "passthrough_uint8"}
    elif modality in PERCENTILE_MODALITIES or arr.dtype.kind == "f":
        lo, hi = _percentile_range(valid)
        out, info = _linear(values, lo, hi), {"method": "percentile_0.5_99.5", "range": [lo, hi]}
    else:
        lo, hi = float(valid.min()), float(valid.max())
        out, info = _linear(values, lo, hi), {"method": "minmax", "range": [lo, hi]}
    if has_bad:
        out = np.where(finite, out, 0.0)
        info["nonfinite_pixels"] = int((~finite).sum())
    return out, info


def _colour(arr: np.ndarray, meta: Meta) -> tuple[np.ndarray, dict[str, Any]]:
    rgb = arr[..., :3] if arr.shape[-1] >= 3 else np.repeat(arr[..., :1], 3, axis=-1)
    if rgb.dtype == np.uint8:
        return rgb, {"method": "passthrough_rgb"}
    if rgb.dtype.kind in "iu":
        bits = int(meta.header.get("BitsStored") or rgb.dtype.itemsize * 8)
        top = float(2**bits - 1)
        if rgb.size and float(rgb.max()) > top:
            top = float(np.iinfo(rgb.dtype).max)
        return _linear(rgb.astype(np.float64), 0.0, top), {"method": "rgb_nominal_range", "range": [0.0, top]}
    values = np.nan_to_num(rgb.astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    lo, hi = float(values.min()), float(values.max())
    if lo >= 0.0 and hi <= 1.0:
        lo, hi = 0.0, 1.0
    return _linear(values, lo, hi), {"method": "rgb_minmax", "range": [lo, hi]}


def render(
    image: MedImage | np.ndarray,
    *,
    slice_index: int | None = None,
    axis: int = 0,
    frame: int | None = None,
    window: tuple[float, float] | None = None,
    label: bool = False,
    mask: np.ndarray | None = None,
) -> Rendered:
    """Render an image to 8-bit pixels for display or a VLM.

    Args:
        image: A :class:`MedImage` (or a bare array, treated as metadata-free).
        slice_index: Slice of a volume along ``axis`` (default: largest foreground of ``mask``, else middle).
        axis: Slicing axis of a volume (0 = Z in canonical order).
        frame: Frame of a video or multi-frame image (default: the frame that was read, else the middle).
        window: Explicit ``(center, width)`` overriding header windows and presets.
        label: Render a label map: ids copied unchanged, never scaled or inverted.
        mask: Mask with the volume's shape, used only to choose the slice.

    Returns:
        ``Rendered`` with ``uint8`` pixels ``(H, W)`` or ``(H, W, 3)`` and an ``info`` dict.

    Raises:
        InvalidLabelMap: ``label=True`` with non-integer ids or ids outside 0..255.
        NotAnImage: The array is a scalar, a 1-D vector or empty.
        IndexError: Slice, axis or frame out of range.
        ValueError: ``mask`` shape mismatch.
    """
    image = _as_image(image)
    meta = image.meta
    _require_image(image)
    plane, info = _pick_plane(image, slice_index, axis, frame, mask)
    is_colour = plane.ndim == 3
    inverted = False
    if label:
        pixels = _label_pixels(plane, meta)
        info.update({"method": "label", "window": None})
    elif is_colour:
        out, extra = _colour(plane, meta)
        pixels = np.rint(out).astype(np.uint8) if out.dtype != np.uint8 else np.ascontiguousarray(out)
        info.update({"window": None, **extra})
    else:
        out, extra = _grey(plane, meta, window)
        info.update({"window": None, **extra})
        pixels = (
            out.astype(np.uint8) if extra["method"] == "passthrough_uint8" else np.rint(out).astype(np.uint8)
        )
        if meta.photometric == "MONOCHROME1":
            # PS3.3 C.7.6.3.1.2: minimum is white; inversion comes after the VOI window.
            pixels = 255 - pixels
            inverted = True
    info.update(
        {
            "label": label,
            "inverted": inverted,
            "size": [int(pixels.shape[1]), int(pixels.shape[0])],
            "source": meta.path or None,
            "source_dtype": str(image.array.dtype),
            "source_shape": [int(s) for s in image.array.shape],
        }
    )
    return Rendered(pixels, info)


def _require_image(image: MedImage) -> None:
    # A 1×64 axis vector picked from a .mat file crashed here with an IndexError (issue 30): say what it is.
    arr, axes = image.array, image.meta.axes or ""
    spatial = arr.shape[:-1] if axes.endswith("C") and arr.ndim >= 3 else arr.shape
    if arr.size == 0 or len(spatial) < 2:
        raise NotAnImage(
            image.meta.path or "<array>",
            f"array of shape {list(arr.shape)} is not an image (a scalar, 1-D vector or empty array); "
            "choose an array with rows and columns",
        )


def _label_pixels(plane: np.ndarray, meta: Meta) -> np.ndarray:
    if plane.ndim != 2:
        raise InvalidLabelMap(meta.path, f"a label map must be single-channel, got shape {list(plane.shape)}")
    if plane.dtype == bool:
        return plane.astype(np.uint8)
    if plane.dtype.kind == "f" and not (np.all(np.isfinite(plane)) and np.all(plane == np.round(plane))):
        raise InvalidLabelMap(meta.path, "label map holds non-integer values; labels must be integer ids")
    lo, hi = (plane.min(), plane.max()) if plane.size else (0, 0)
    if lo < 0 or hi > 255:
        raise InvalidLabelMap(
            meta.path, f"label ids span {lo}..{hi}; an 8-bit label PNG holds ids 0..255 only (remap the ids)"
        )
    return plane.astype(np.uint8)

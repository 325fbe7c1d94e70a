"""Cached access to the raw evidence: source headers, downsampled re-renders, label maps, written images.

The small text tables under ``data/`` (label tables, a Parquet row's cells, box files) are in
`validator._tables`.

Everything here takes paths that `validator.sample.safe_join` already confined to the dataset, and caches by
``(path, mtime, size, read options)`` so that many candidates of the same sample re-render the source once.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

import medio
from medio.errors import MedioError
from validator.sample import ImageFacts, content_digest, file_signature
from validator.values import clear_token_cache

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceFacts:
    """Header facts of a source read with the candidate's declared options (no pixels kept)."""

    ok: bool
    error: str = ""
    format: str = ""
    shape: tuple[int, ...] = ()
    axes: str = ""
    n_frames: int | None = None
    modality: str | None = None
    keys: tuple[str, ...] = ()


class LRU(OrderedDict[Any, Any]):
    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


_FACTS: LRU = LRU(20_000)
_RENDERS: LRU = LRU(20_000)
_WRITTEN: LRU = LRU(50_000)
_WRITTEN_BY_CONTENT: LRU = LRU(50_000)
_MASK_IDS: LRU = LRU(50_000)
_STATS: LRU = LRU(20_000)
_WRITTEN_STATS: LRU = LRU(50_000)
_LABELS: LRU = LRU(2_000)
_RANGES: LRU = LRU(20_000)
_CASTS: LRU = LRU(20_000)
_MASK_WORDS = ("label", "mask", "seg", "gt", "annot")


def _read(path: Path, options: dict[str, Any]) -> medio.MedImage:
    return medio.read(path, **{k: v for k, v in options.items() if v is not None})


def cache_key(path: Path, options: dict[str, Any], *extra: Any) -> tuple[Any, ...] | None:
    sig = file_signature(path)
    if sig is None:
        return None
    return (str(path), sig, tuple(sorted((k, repr(v)) for k, v in options.items())), *extra)


def source_facts(path: Path, options: dict[str, Any]) -> SourceFacts:
    """Read the source once with ``options`` (``key``, ``index``, ``frame``, ``volume``) and
    keep its header facts."""
    key = cache_key(path, options)
    if key is None:
        return SourceFacts(False, f"{path.name} does not exist")
    cached = _FACTS.get(key)
    if cached is None:
        cached, _ = _load(path, options, key)
    return cached


def _load(
    path: Path, options: dict[str, Any], key: tuple[Any, ...]
) -> tuple[SourceFacts, medio.MedImage | None]:
    try:
        image = _read(path, options)
    except (MedioError, OSError, ValueError, IndexError, KeyError) as exc:
        facts = SourceFacts(False, f"cannot read {path.name}: {exc}")
        _FACTS.put(key, facts)
        return facts, None
    m = image.meta
    facts = SourceFacts(
        True, "", m.format, tuple(m.shape), m.axes, m.n_frames, m.modality, tuple(m.keys or ())
    )
    _FACTS.put(key, facts)
    return facts, image


def source_render(
    path: Path, options: dict[str, Any], slice_index: int | None, axis: int, size: int
) -> np.ndarray | str:
    """The source rendered as the agent should have (medio defaults) and shrunk to ``size``×``size`` grey.

    Returns:
        A float32 array, or an error message.
    """
    key = cache_key(path, options, slice_index, axis, size)
    if key is None:
        return f"{path.name} does not exist"
    cached: np.ndarray | str | None = _RENDERS.get(key)
    if cached is not None:
        return cached
    facts, image = _load(path, options, cache_key(path, options) or key)
    result: np.ndarray | str
    if image is None:
        result = facts.error
    else:
        try:
            volume = image.meta.axes.startswith("Z") and image.array.ndim >= 3
            rendered = medio.render(image, slice_index=slice_index if volume else None, axis=axis)
            result = shrink(rendered.pixels, size)
            _STATS.put(key, pixel_stats(rendered.pixels))
            shares = _beyond_8bit(image, slice_index if volume else None, axis, volume)
            _RANGES.put(key, shares)
            if shares is not None:
                # The same view cast to 8 bits by clipping at 0 and 255 (a converter without a window).
                cast = medio.render(
                    image, slice_index=slice_index if volume else None, axis=axis, window=(127.5, 255.0)
                )
                _CASTS.put(key, (shrink(cast.pixels, size), pixel_stats(cast.pixels).digest))
        except (MedioError, IndexError, ValueError) as exc:
            result = f"cannot render {path.name}: {exc}"
    _RENDERS.put(key, result)
    return result


@dataclass(frozen=True)
class PixelStats:
    """Facts of a full-size rendering that the 32×32 grey copy loses.

    Attributes:
        height: Rows of the rendering.
        width: Columns of the rendering.
        saturated: Share of pixels at the ends of the value range (0 or 255 for 8-bit images).
        digest: The exact pixels, hashed.
        white: Share of (grey) pixels at the top of the range.
        black: Share of (grey) pixels at the bottom of the range.
    """

    height: int
    width: int
    saturated: float
    digest: bytes = b""
    white: float = 0.0
    black: float = 0.0


def pixel_stats(pixels: np.ndarray) -> PixelStats:
    """Size, saturated share and pixel digest of an image (grey: the channel mean).

    The digest covers the exact pixels (shape, dtype, values), so a written image that is one rendering
    pixel for pixel is recognised as such whatever its file encoding.
    """
    arr = np.ascontiguousarray(pixels)
    values = arr[..., :3] if arr.ndim == 3 else arr  # every colour channel: a clipped channel saturates alone
    lo, hi = (0, 255) if arr.dtype == np.uint8 else (float(values.min()), float(values.max()))
    saturated = float(np.count_nonzero(values <= lo) + np.count_nonzero(values >= hi)) / max(values.size, 1)
    digest = content_digest(repr((arr.shape, arr.dtype.str)).encode() + arr.tobytes())
    grey = values.mean(axis=-1) if values.ndim == 3 else values
    white = float(np.count_nonzero(grey >= hi)) / max(grey.size, 1)
    black = float(np.count_nonzero(grey <= lo)) / max(grey.size, 1)
    return PixelStats(int(arr.shape[0]), int(arr.shape[1]), min(saturated, 1.0), digest, white, black)


def render_stats(
    path: Path, options: dict[str, Any], slice_index: int | None, axis: int, size: int
) -> PixelStats | None:
    """`PixelStats` of the rendering `source_render` made with the same arguments (None when it failed)."""
    stats: PixelStats | None = _noted(_STATS, path, options, slice_index, axis, size)
    return stats


def _noted(
    cache: LRU, path: Path, options: dict[str, Any], slice_index: int | None, axis: int, size: int
) -> Any:
    """What `source_render` noted in ``cache`` for these arguments (re-rendered once if evicted)."""
    key = cache_key(path, options, slice_index, axis, size)
    if key is None:
        return None
    if key not in cache:
        _RENDERS.pop(key, None)
        source_render(path, options, slice_index, axis, size)
    return cache.get(key)


def _beyond_8bit(
    image: medio.MedImage, slice_index: int | None, axis: int, volume: bool
) -> tuple[float, float] | None:
    """Shares of the rendered view's raw values at or above 255 and at or below 0, for a grey source whose
    values leave the 8-bit range (None otherwise: colour, frames of a video, an 8-bit source)."""
    axes = image.meta.axes or ""
    arr = np.asarray(image.array)
    if (
        arr.dtype == np.uint8
        or axes.endswith("C")
        or arr.size == 0
        or not np.issubdtype(arr.dtype, np.number)
    ):
        return None
    if volume:
        where = slice_index if slice_index is not None else arr.shape[axis] // 2
        view = np.take(arr, where, axis=axis)
    elif arr.ndim == 2:
        view = arr
    else:
        return None
    finite = view[np.isfinite(view)] if np.issubdtype(view.dtype, np.floating) else view.ravel()
    if finite.size == 0 or (float(finite.max()) <= 255 and float(finite.min()) >= 0):
        return None
    return float(np.count_nonzero(finite >= 255)) / finite.size, float(
        np.count_nonzero(finite <= 0)
    ) / finite.size


def range_shares(
    path: Path, options: dict[str, Any], slice_index: int | None, axis: int, size: int
) -> tuple[float, float] | None:
    """For the view `source_render` renders with the same arguments: the shares of its raw values at or above
    255 and at or below 0, when the source's values leave the 8-bit range (None otherwise)."""
    shares: tuple[float, float] | None = _noted(_RANGES, path, options, slice_index, axis, size)
    return shares


def cast_render(
    path: Path, options: dict[str, Any], slice_index: int | None, axis: int, size: int
) -> tuple[np.ndarray, bytes] | None:
    """The view `source_render` renders, cast to 8 bits by clipping at 0 and 255 instead of windowed:
    shrunk grey and the full-size pixel digest (None for a source whose values stay within 0..255)."""
    if range_shares(path, options, slice_index, axis, size) is None:
        return None
    key = cache_key(path, options, slice_index, axis, size)
    cast: tuple[np.ndarray, bytes] | None = _CASTS.get(key)
    return cast


@dataclass(frozen=True)
class LabelFacts:
    """A raw label map (2D plane or 3D volume) read once: its shape and the ids it holds.

    Attributes:
        ok: Whether it was read as an integer label map.
        error: Why not (empty when ok).
        shape: The label array's shape (``(z, h, w)`` for a volume, ``(h, w)`` for a plane).
        ids: The distinct values it holds.
        key: The container member read (``label``, ``mask`` ...), when the file is a container.
        colour: Whether the file holds colour whose channels differ (read at its first channel): a picture,
            not a label map, though a few colours may pass the id test.
    """

    ok: bool
    error: str = ""
    shape: tuple[int, ...] = ()
    ids: tuple[int, ...] = ()
    key: str | None = None
    colour: bool = False


def label_facts(path: Path) -> LabelFacts:
    """Read a raw label map (NIfTI, MetaImage, NPZ/HDF5 member, PNG/GIF ...) once and note its shape and ids.

    A container with several members is read at the member named like a label (``label``, ``mask``, ``seg``);
    a colour image is read at its first channel. Cached by path and file signature.

    Args:
        path: The label file, already confined to the dataset.

    Returns:
        The facts (``ok=False`` with the reason when it is not an integer label map).
    """
    key = cache_key(path, {})
    if key is None:
        return LabelFacts(False, f"{path.name} does not exist")
    cached: LabelFacts | None = _LABELS.get(key)
    if cached is None:
        cached = _read_label(path)
        _LABELS.put(key, cached)
    return cached


def label_array(path: Path) -> tuple[np.ndarray, str | None, bool] | str:
    """A raw label map's array: read at the member named like a label when a container has several, and at
    its first channel. Returns ``(array, member, colour: the channels differ)``, or why it cannot be read."""
    member: str | None = None
    try:
        image = medio.read(path)
        keys = list(image.meta.keys or [])
        if len(keys) > 1:
            member = next((k for k in keys if any(w in k.lower() for w in _MASK_WORDS)), None)
            if member is None:
                return f"{path.name} has no member named like a label map ({keys})"
            image = medio.read(path, key=member)
    except (MedioError, OSError, ValueError, IndexError, KeyError) as exc:
        return f"cannot read {path.name}: {exc}"
    arr = np.asarray(image.array)
    colour = False
    if (image.meta.axes or "").endswith("C") and arr.ndim >= 3:
        channels = arr[..., : min(arr.shape[-1], 3)]
        colour = bool(channels.shape[-1] > 1 and (channels != channels[..., :1]).any())
        arr = arr[..., 0]
    return arr, member, colour


def _read_label(path: Path) -> LabelFacts:
    read = label_array(path)
    if isinstance(read, str):
        return LabelFacts(False, read)
    arr, member, colour = read
    if arr.dtype.kind == "f" and arr.size and np.array_equal(arr, np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iub" or arr.ndim not in (2, 3):
        return LabelFacts(False, f"{path.name} is not an integer label map ({arr.dtype}, {arr.ndim}D)")
    ids = distinct_values(arr.astype(np.uint16) if arr.dtype.kind == "b" else arr)
    return LabelFacts(True, "", tuple(int(s) for s in arr.shape), tuple(ids), member, colour)


LABEL_MEMBER_WORDS = ("label", "class", "target")


def is_label_member(name: str) -> bool:
    """Whether a container member is named like per-record class labels (``labels``, ``target`` ...)."""
    return any(w in name.lower() for w in LABEL_MEMBER_WORDS)


def id_columns(path: Path, keys: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """The 1-D per-record members of a container: text ids (``case_ids``, ``names`` ...) and integer members
    named like labels (``labels``, ``class``, ``target``).

    Args:
        path: The container (NPZ, HDF5, MAT).
        keys: Its member names (`SourceFacts.keys`).

    Returns:
        Member name → its values as strings, for members that are 1-D lists of ids (cached per file).
    """
    key = cache_key(path, {}, "id_columns")
    if key is None:
        return {}
    cached: dict[str, tuple[str, ...]] | None = _LABELS.get(key)
    if cached is None:
        cached = {}
        for member in keys[:32]:
            try:
                arr = np.asarray(medio.read(path, key=member).array)
            except (MedioError, OSError, ValueError, IndexError, KeyError):
                continue
            labelled = arr.dtype.kind in "iu" and is_label_member(member)
            if arr.ndim == 1 and 1 < arr.size <= 100_000 and (arr.dtype.kind in "USO" or labelled):
                cached[member] = tuple(
                    v.decode(errors="replace") if isinstance(v, bytes) else str(v) for v in arr.tolist()
                )
        _LABELS.put(key, cached)
    return cached


def written_small(path: Path, size: int, digest: bytes | None = None) -> np.ndarray | None:
    """The written PNG shrunk to ``size``×``size`` grey (cached by mtime, and by content when ``digest`` is
    given: another candidate's byte-identical image is not decoded again).

    Args:
        path: The written image.
        size: Side of the grey copy.
        digest: `validator.sample.content_digest` of the file's bytes, when known.

    Returns:
        The float32 grey copy, or None when the file cannot be decoded.
    """
    key = cache_key(path, {}, size)
    if key is None:
        return None
    cached = _WRITTEN.get(key)
    if cached is None and digest is not None:
        cached = _WRITTEN_BY_CONTENT.get((digest, size))
    if cached is None:
        try:
            with Image.open(path) as im:
                pixels = np.asarray(im)
        except (OSError, ValueError) as exc:
            log.debug("cannot read %s: %s", path, exc)
            return None
        cached = shrink(pixels, size)
        stats = pixel_stats(pixels)
        _WRITTEN_STATS.put(key, stats)
        if digest is not None:
            _WRITTEN_BY_CONTENT.put((digest, size), cached)
            _WRITTEN_STATS.put((digest, size), stats)
    _WRITTEN.put(key, cached)
    return cached


def written_stats(path: Path, size: int, digest: bytes | None = None) -> PixelStats | None:
    """`PixelStats` of a written image (decoded by `written_small`, which this calls when needed)."""
    key = cache_key(path, {}, size)
    if key is None:
        return None
    stats: PixelStats | None = _WRITTEN_STATS.get(key)
    if stats is None and digest is not None:
        stats = _WRITTEN_STATS.get((digest, size))
    if stats is None:
        _WRITTEN.pop(key, None)
        if digest is not None:
            _WRITTEN_BY_CONTENT.pop((digest, size), None)
        written_small(path, size, digest)
        stats = _WRITTEN_STATS.get(key)
    return stats


def mask_ids(facts: ImageFacts) -> list[int] | None:
    """The distinct values of a label map (first channel), or None when it cannot be decoded.

    Cached by content: candidates of one dataset usually write byte-identical masks.
    """
    cached = _MASK_IDS.get(facts.digest) if facts.digest is not None else None
    if cached is None:
        pixels = facts.pixels()
        if pixels is None:
            return None
        cached = distinct_values(pixels if pixels.ndim == 2 else pixels[..., 0])
        if facts.digest is not None:
            _MASK_IDS.put(facts.digest, cached)
    return list(cached)


def distinct_values(plane: np.ndarray) -> list[int]:
    """Sorted distinct values as ints (a counting pass for 8/16-bit masks instead of a sort)."""
    if plane.dtype.kind == "u" and plane.dtype.itemsize <= 2:
        return [int(v) for v in np.flatnonzero(np.bincount(plane.ravel(), minlength=1))]
    return [int(v) for v in np.unique(plane)]


def shrink(pixels: np.ndarray, size: int) -> np.ndarray:
    """Grey float32 ``size``×``size`` copy (PIL's BOX filter of the channel mean), so differently sized
    images compare.

    Each BOX output averages a contiguous run of inputs per axis (`box_windows`); when shrinking, the runs
    tile the axis, so one ``np.add.reduceat`` per axis computes the resize (for colour images straight on the
    interleaved channels). This avoids the PIL float-image round trip and any BLAS call, whose worker threads
    cost more than the arithmetic on images this small.
    """
    arr = np.asarray(pixels)
    plain = arr.ndim in (2, 3) and min(arr.shape) > 0
    if plain and arr.dtype.kind == "f" and not np.isfinite(arr).all():
        plain = False  # a NaN or inf would spread through the sums; PIL keeps it local
    if not plain:
        grey = arr[..., :3].astype(np.float32).mean(axis=2) if arr.ndim == 3 else arr.astype(np.float32)
        im = Image.fromarray(grey, mode="F")
        return np.asarray(im.resize((size, size), Image.Resampling.BOX), dtype=np.float32)
    if arr.ndim == 3:
        height, width, channels = arr.shape[0], arr.shape[1], min(arr.shape[2], 3)
        if width >= size:
            interleaved = np.ascontiguousarray(arr[..., :channels]).reshape(height, width * channels)
            lo, _, count = box_windows(width, size)
            across = np.add.reduceat(interleaved, lo * channels, axis=1, dtype=np.float64)
            across /= count * channels
        else:
            grey = arr[..., :channels].sum(axis=2, dtype=np.float64) / channels
            across = _resize_axis(grey, size, 1)
    else:
        across = _resize_axis(arr, size, 1)
    return _resize_axis(across, size, 0).astype(np.float32)


def _resize_axis(a: np.ndarray, size: int, axis: int) -> np.ndarray:
    """BOX resize of a 2D array along one axis, in float64."""
    n = a.shape[axis]
    lo, hi, count = box_windows(n, size)
    shape = (size, 1) if axis == 0 else (1, size)
    if n >= size:  # the windows tile the axis (see box_windows)
        summed = np.add.reduceat(a, lo, axis=axis, dtype=np.float64)
    else:  # enlarging: a window is any run, so use prefix sums
        prefix = np.zeros((n + 1, a.shape[1]) if axis == 0 else (a.shape[0], n + 1), dtype=np.float64)
        np.cumsum(a, axis=axis, dtype=np.float64, out=prefix[1:] if axis == 0 else prefix[:, 1:])
        summed = np.take(prefix, hi, axis=axis) - np.take(prefix, lo, axis=axis)
    result: np.ndarray = summed / count.reshape(shape)
    return result


@lru_cache(maxsize=4096)
def box_windows(n: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output sample of a BOX resize from ``n`` to ``size``: the first and past-the-end input and their
    count. The inputs of one output are contiguous and equally weighted, and when ``n >= size`` the windows
    tile ``range(n)`` (a test checks both against `box_weights`)."""
    weights = box_weights(n, size)
    nonzero = weights > 0
    lo = nonzero.argmax(axis=1)
    hi = n - nonzero[:, ::-1].argmax(axis=1)
    for arr in (lo, hi):
        arr.setflags(write=False)
    count = (hi - lo).astype(np.float64)
    count.setflags(write=False)
    return lo, hi, count


@lru_cache(maxsize=4096)
def box_weights(n: int, size: int) -> np.ndarray:
    """PIL's BOX resampling coefficients from ``n`` to ``size`` samples as a ``size``×``n`` matrix.

    Mirrors Pillow's ``precompute_coeffs`` (Resample.c): output ``k`` is centred at ``(k + 0.5) * n /
    size`` and averages, with equal weight, the inputs whose centres fall in its box (support ``0.5 *
    max(scale, 1)``). A test compares `shrink` with ``Image.resize`` on many sizes.
    """
    scale = n / size
    filterscale = max(scale, 1.0)
    support = 0.5 * filterscale
    weights = np.zeros((size, n), dtype=np.float64)
    for k in range(size):
        center = (k + 0.5) * scale
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n)
        xs = np.arange(lo, hi)
        t = (xs - center + 0.5) / filterscale
        w = ((t > -0.5) & (t <= 0.5)).astype(np.float64)
        total = w.sum()
        weights[k, lo:hi] = w / total if total != 0.0 else w
    weights.setflags(write=False)
    return weights


def ncc(a: np.ndarray, b: np.ndarray) -> float:
    """Zero-mean normalised cross-correlation in [-1, 1]; two flat images count as equal
    when close in level."""
    ma, mb = a.mean(), b.mean()
    da, db = (a - ma).ravel(), (b - mb).ravel()
    na, nb = float(np.sqrt(np.dot(da, da))), float(np.sqrt(np.dot(db, db)))
    if na < 1e-6 or nb < 1e-6:
        return 1.0 if na < 1e-6 and nb < 1e-6 and abs(float(ma - mb)) < 8 else 0.0
    return float(np.dot(da, db) / (na * nb))


def clear_caches() -> None:
    """Forget every cached header, render, grey copy and label table (cold-start measurements).

    `validator._tables` keeps caches of its own on this module's keys; `validator.validate.clear_cache`
    clears both.
    """
    caches = (_FACTS, _RENDERS, _WRITTEN, _WRITTEN_BY_CONTENT, _MASK_IDS, _LABELS, _RANGES, _CASTS)
    for cache in (*caches, _STATS, _WRITTEN_STATS):
        cache.clear()
    box_weights.cache_clear()
    box_windows.cache_clear()
    clear_token_cache()

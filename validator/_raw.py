"""Cached access to the raw evidence: source headers, downsampled re-renders, label tables.

Everything here takes paths that `validator.sample.safe_join` already confined to the dataset, and caches by
``(path, mtime, size, read options)`` so that many candidates of the same sample re-render the source once.
"""

from __future__ import annotations

import csv
import logging
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

import medio
from medio.errors import MedioError
from validator.sample import file_signature

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


class _LRU(OrderedDict[Any, Any]):
    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


_FACTS: _LRU = _LRU(20_000)
_RENDERS: _LRU = _LRU(20_000)
_WRITTEN: _LRU = _LRU(50_000)
_TABLES: dict[tuple[str, Any], list[list[str]]] = {}


def _read(path: Path, options: dict[str, Any]) -> medio.MedImage:
    return medio.read(path, **{k: v for k, v in options.items() if v is not None})


def _key(path: Path, options: dict[str, Any], *extra: Any) -> tuple[Any, ...] | None:
    sig = file_signature(path)
    if sig is None:
        return None
    return (str(path), sig, tuple(sorted((k, repr(v)) for k, v in options.items())), *extra)


def source_facts(path: Path, options: dict[str, Any]) -> SourceFacts:
    """Read the source once with ``options`` (``key``, ``index``, ``frame``, ``volume``) and keep its header
    facts."""
    key = _key(path, options)
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
    facts = SourceFacts(True, "", m.format, tuple(m.shape), m.axes, m.n_frames, m.modality)
    _FACTS.put(key, facts)
    return facts, image


def source_render(
    path: Path, options: dict[str, Any], slice_index: int | None, axis: int, size: int
) -> np.ndarray | str:
    """The source rendered as the agent should have (medio defaults) and shrunk to ``size``×``size`` grey.

    Returns:
        A float32 array, or an error message.
    """
    key = _key(path, options, slice_index, axis, size)
    if key is None:
        return f"{path.name} does not exist"
    cached: np.ndarray | str | None = _RENDERS.get(key)
    if cached is not None:
        return cached
    facts, image = _load(path, options, _key(path, options) or key)
    result: np.ndarray | str
    if image is None:
        result = facts.error
    else:
        try:
            volume = image.meta.axes.startswith("Z") and image.array.ndim >= 3
            rendered = medio.render(image, slice_index=slice_index if volume else None, axis=axis)
            result = shrink(rendered.pixels, size)
        except (MedioError, IndexError, ValueError) as exc:
            result = f"cannot render {path.name}: {exc}"
    _RENDERS.put(key, result)
    return result


def written_small(path: Path, size: int) -> np.ndarray | None:
    """The written PNG shrunk to ``size``×``size`` grey (cached by mtime)."""
    key = _key(path, {}, size)
    if key is None:
        return None
    cached = _WRITTEN.get(key)
    if cached is None:
        try:
            with Image.open(path) as im:
                cached = shrink(np.asarray(im), size)
        except (OSError, ValueError) as exc:
            log.debug("cannot read %s: %s", path, exc)
            return None
        _WRITTEN.put(key, cached)
    return cached


def shrink(pixels: np.ndarray, size: int) -> np.ndarray:
    """Grey float32 ``size``×``size`` copy (box filter), so differently sized images compare."""
    arr = np.asarray(pixels)
    if arr.ndim == 3:
        arr = arr[..., :3].astype(np.float32).mean(axis=2)
    im = Image.fromarray(arr.astype(np.float32), mode="F")
    return np.asarray(im.resize((size, size), Image.Resampling.BOX), dtype=np.float32)


def ncc(a: np.ndarray, b: np.ndarray) -> float:
    """Zero-mean normalised cross-correlation in [-1, 1]; two flat images count as equal when close in
    level."""
    da, db = a - a.mean(), b - b.mean()
    na, nb = float(np.sqrt((da * da).sum())), float(np.sqrt((db * db).sum()))
    if na < 1e-6 or nb < 1e-6:
        return 1.0 if na < 1e-6 and nb < 1e-6 and abs(float(a.mean() - b.mean())) < 8 else 0.0
    return float((da * db).sum() / (na * nb))


def label_tables(dataset_root: Path, max_bytes: int = 2_000_000) -> list[list[str]]:
    """Rows of the small CSV/TSV tables under ``data/`` (label evidence), read once per dataset."""
    data = dataset_root / "data"
    key = (str(data), file_signature(data))
    if key in _TABLES:
        return _TABLES[key]
    rows: list[list[str]] = []
    base = dataset_root.resolve()
    for path in sorted(data.rglob("*")) if data.is_dir() else []:
        if path.suffix.lower() not in {".csv", ".tsv", ".txt"} or path.is_symlink():
            continue
        try:
            if not path.resolve().is_relative_to(base) or path.stat().st_size > max_bytes:
                continue
            with path.open(newline="", encoding="utf-8", errors="replace") as fh:
                dialect = "excel-tab" if path.suffix.lower() == ".tsv" else "excel"
                rows.extend(list(csv.reader(fh, dialect=dialect)))
        except (OSError, csv.Error) as exc:
            log.debug("skipping table %s: %s", path, exc)
    _TABLES[key] = rows
    return rows

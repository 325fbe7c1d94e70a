"""The bundle a check looks at: one candidate sample (annotation, image, mask, raw source, manifest entry).

Everything is loaded lazily and at most once per view, and nothing raises: a missing or broken file becomes
``None`` plus an error string the checks turn into a failed result. Paths the candidate declares are
resolved with `safe_join`, which refuses anything that leaves its root *before* the file is opened.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from benchmark.fields import IMAGE_PATH
from benchmark.layout import ANNOTATIONS_DIR, DATA_META_NAME, IMAGE_EXTENSIONS, IMAGES_DIR
from benchmark.manifest import ManifestEntry
from core.paths import resolve_below
from validator._png import verified_png_size
from validator.values import get_path

log = logging.getLogger(__name__)

# The output layout is fixed in benchmark.layout; bound here under the validator's short names.
IMAGE_EXTS = IMAGE_EXTENSIONS
DATA_META = DATA_META_NAME


def safe_join(root: Path, relative: str) -> Path | None:
    """``root / relative`` if it stays inside ``root`` after resolving ``..`` and symlinks, else None.

    Absolute paths, ``..`` climbing out and symlinks pointing outside are all refused, so a caller never opens
    a file outside the folder it trusts.

    Args:
        root: The trusted folder.
        relative: A POSIX or Windows-style relative path from a candidate's JSON.

    Returns:
        The resolved path, or None when it escapes (or is empty / absolute).
    """
    text = relative.strip().replace("\\", "/")
    if not text or text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        return None
    resolved = _resolve_inside(str(root), text)
    return Path(resolved) if resolved is not None else None


@lru_cache(maxsize=4096)
def _real_root(root: str) -> str:
    return os.path.realpath(root)


@lru_cache(maxsize=65_536)
def _resolve_inside(root: str, relative: str) -> str | None:
    # Cached: the same source paths are resolved for every candidate of a sample. A link pointing out of the
    # root is caught here, before anything is opened.
    base = _real_root(root)
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if ".." not in parts:
        # Without "..", only a link below the (real) root can lead out of it.
        target, followed = resolve_below(base, parts)
        if not followed:
            return target
    else:
        target = os.path.realpath(os.path.join(base, relative))
    return target if target == base or target.startswith(base.rstrip(os.sep) + os.sep) else None


# A validate() call looks at one snapshot of the files: inside `stat_cache()`, each path is stat'ed once.
_STATS: ContextVar[dict[str, os.stat_result | None] | None] = ContextVar("validator_stats", default=None)


@contextmanager
def stat_cache() -> Iterator[None]:
    """Within the block, `stat_path` (and so `file_signature`) stats each path at most once.

    Yields:
        Nothing; the cache is dropped when the block ends.
    """
    token = _STATS.set({})
    try:
        yield
    finally:
        _STATS.reset(token)


def stat_path(path: str | os.PathLike[str]) -> os.stat_result | None:
    """``os.stat`` of a path (following symlinks), or None when it does not exist or cannot be stat'ed.

    Args:
        path: The file or folder.

    Returns:
        The stat result (memoised inside a `stat_cache` block), or None.
    """
    key = os.fspath(path)
    cache = _STATS.get()
    if cache is not None and key in cache:
        return cache[key]
    try:
        result: os.stat_result | None = os.stat(key)
    except (OSError, ValueError):
        result = None
    if cache is not None:
        cache[key] = result
    return result


@dataclass(frozen=True)
class ImageFacts:
    """What an image file holds, read once: its size and pixels, or the reason it cannot be opened.

    Attributes:
        path: The image file.
        valid: Whether PIL opens and verifies it (the benchmark's validity test).
        size: ``(width, height)`` when it opens.
        error: Why it is not valid (empty when valid).
        digest: A hash of the file's bytes when it was read whole (keys content caches across candidates).
    """

    path: Path
    valid: bool
    size: tuple[int, int] | None = None  # (width, height)
    error: str = ""
    digest: bytes | None = None

    def pixels(self) -> np.ndarray | None:
        """The decoded pixels (no caching: large and rarely needed twice)."""
        try:
            with Image.open(self.path) as im:
                return np.asarray(im)
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            log.debug("cannot decode %s: %s", self.path, exc)
            return None


_IMAGE_CACHE: dict[tuple[str, int, int], ImageFacts] = {}
# Content hash → size of an image that verified. Candidates of one dataset often write byte-identical images
# (the same source rendered the same way), so a candidate's image is verified once, not once per candidate.
_VERIFIED: dict[bytes, tuple[int, int]] = {}
_READ_WHOLE_LIMIT = 64 * 1024 * 1024  # bigger files are verified from disk without hashing


def content_digest(data: bytes) -> bytes:
    """The SHA-256 of a file's bytes, the key of the content caches (hardware-accelerated on current CPUs)."""
    return hashlib.sha256(data).digest()


def image_facts(path: Path | None) -> ImageFacts | None:
    """Open an image with PIL ``verify()`` (the benchmark's validity test) and note its size; cached by mtime.

    The file is read once; its bytes are hashed so that an identical image already verified (e.g. written by
    another candidate) is not verified again.

    Args:
        path: The image file, or None.

    Returns:
        None when there is no file; otherwise the facts (``valid=False`` with the reason when unreadable).
    """
    if path is None:
        return None
    st = stat_path(path)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):
        return ImageFacts(path, False, error=f"{path.name} is not a file")
    key = (str(path), st.st_mtime_ns, st.st_size)
    cached = _IMAGE_CACHE.get(key)
    if cached is not None:
        return cached
    facts = _verified_from_bytes(path) if st.st_size <= _READ_WHOLE_LIMIT else None
    if facts is None:
        facts = _verify_file(path)
    if len(_IMAGE_CACHE) > 50_000:
        _IMAGE_CACHE.clear()
    _IMAGE_CACHE[key] = facts
    return facts


def _verified_from_bytes(path: Path) -> ImageFacts | None:
    """Facts of a valid image read whole, or None when it does not verify (the caller then reports why)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    digest = content_digest(data)
    size = _VERIFIED.get(digest) or verified_png_size(data)
    if size is None:
        try:
            with Image.open(io.BytesIO(data)) as im:
                im.verify()
                size = (int(im.size[0]), int(im.size[1]))
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
            return None
        if min(size) <= 0:
            return None
        if len(_VERIFIED) > 200_000:
            _VERIFIED.clear()
        _VERIFIED[digest] = size
    return ImageFacts(path, True, size, "", digest)


def _verify_file(path: Path) -> ImageFacts:
    # The slow path, opened by name so that PIL's error message names the file.
    try:
        with Image.open(path) as im:
            im.verify()
            size = (int(im.size[0]), int(im.size[1]))
        return ImageFacts(path, size[0] > 0 and size[1] > 0, size, "" if min(size) > 0 else "empty image")
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        return ImageFacts(path, False, error=f"{path.name} cannot be opened as an image ({exc})")


@dataclass
class SampleView:
    """One candidate sample, as the checks see it.

    Attributes:
        index: The manifest index.
        candidate_root: The candidate's ``agent1_data_organization`` folder.
        dataset_root: The dataset folder (holds ``data/`` and ``VLM/``), or None when unknown.
        entry: The manifest entry for ``index``, or None when the manifest lacks it.
        options: The profile's options (thresholds and sizes the checks read).
        preloaded: An in-memory annotation to use instead of reading ``standardized_annotations/<i>.json``
            (S4 scores a merged annotation this way).
        manifest_known: Whether a manifest was available at all (some reference scores differ without one).
        image_override: Use this image file as the sample's image (S4 merges take it from another candidate).
        peers: The candidate's other samples (for dataset-level consistency checks), when known.
        dataset_modalities: ``data_meta.modality_primary`` of the candidate (modality consistency).
    """

    index: int
    candidate_root: Path
    dataset_root: Path | None = None
    entry: ManifestEntry | None = None
    options: dict[str, Any] = field(default_factory=dict)
    preloaded: dict[str, Any] | None = None
    manifest_known: bool = True
    image_override: Path | None = None
    peers: list[SampleView] | None = None
    dataset_modalities: list[str] = field(default_factory=list)
    memo: dict[str, Any] = field(default_factory=dict, repr=False)

    # ----- annotation -------------------------------------------------------------------------------------
    @property
    def annotation_path(self) -> Path:
        """``standardized_annotations/<index>.json`` under the candidate."""
        return self.candidate_root / ANNOTATIONS_DIR / f"{self.index}.json"

    @cached_property
    def _loaded(self) -> tuple[Any, str]:
        if self.preloaded is not None:
            return self.preloaded, ""
        path = self.annotation_path
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except FileNotFoundError:
            return None, f"{ANNOTATIONS_DIR}/{self.index}.json is missing"
        except (OSError, UnicodeDecodeError) as exc:
            return None, f"{ANNOTATIONS_DIR}/{self.index}.json cannot be read ({exc})"
        self.memo["annotation_text"] = text  # lets checks scan the text before walking the tree
        try:
            return json.loads(text), ""
        except json.JSONDecodeError as exc:
            return (
                None,
                f"{ANNOTATIONS_DIR}/{self.index}.json is not valid JSON ({exc.msg}, line {exc.lineno})",
            )

    @property
    def raw(self) -> Any:
        """The parsed JSON exactly as written (any type), or None when missing or unparsable."""
        return self._loaded[0]

    @property
    def annotation(self) -> dict[str, Any] | None:
        """The annotation when it is a JSON object, else None."""
        raw = self._loaded[0]
        return raw if isinstance(raw, dict) else None

    @property
    def annotation_error(self) -> str:
        """Why there is no usable annotation (empty when there is one)."""
        if self._loaded[1]:
            return self._loaded[1]
        if not isinstance(self._loaded[0], dict):
            kind = type(self._loaded[0]).__name__ if self._loaded[0] is not None else "null"
            return f"{ANNOTATIONS_DIR}/{self.index}.json must hold a JSON object, not {kind}"
        return ""

    def get(self, dotted: str) -> Any:
        """The annotation value at a dotted path, or None (memoised: the checks ask for the same paths)."""
        paths = self._paths
        if dotted in paths:
            return paths[dotted]
        value = paths[dotted] = get_path(self.annotation, dotted)
        return value

    def block(self, dotted: str) -> dict[str, Any]:
        """The dict at a dotted path, or ``{}`` when absent or not a dict."""
        value = self.get(dotted)
        return value if isinstance(value, dict) else {}

    @cached_property
    def _paths(self) -> dict[str, Any]:
        return {}

    @cached_property
    def extra(self) -> dict[str, Any]:
        """``context.sample.extra`` (``{}`` when absent)."""
        return self.block("context.sample.extra")

    # ----- images -----------------------------------------------------------------------------------------
    @cached_property
    def index_image(self) -> ImageFacts | None:
        """``images/<index>.{png,jpg,jpeg}``: the first that exists (the benchmark's lookup order)."""
        if self.image_override is not None:
            return image_facts(self.image_override)
        for ext in IMAGE_EXTS:
            facts = image_facts(self.candidate_root / IMAGES_DIR / f"{self.index}{ext}")
            if facts is not None:
                return facts
        return None

    @cached_property
    def record_image(self) -> ImageFacts | None:
        """The image ``record.image_path`` names (resolved inside the candidate), or None."""
        value = self.get(IMAGE_PATH)
        if not isinstance(value, str) or not value.strip():
            return None
        if self.image_override is not None and Path(value).stem == str(self.index):
            return image_facts(self.image_override)
        path = safe_join(self.candidate_root, value)
        return image_facts(path) if path is not None else None

    @property
    def image(self) -> ImageFacts | None:
        """The sample's image: the record's when valid, else the index image."""
        rec = self.record_image
        return rec if rec is not None and rec.valid else self.index_image

    # ----- raw evidence -----------------------------------------------------------------------------------
    def dataset_path(self, relative: Any) -> Path | None:
        """A dataset-relative path from the JSON, resolved inside the dataset root (None if it escapes)."""
        if self.dataset_root is None or not isinstance(relative, str):
            return None
        return safe_join(self.dataset_root, relative)

    def candidate_path(self, relative: Any) -> Path | None:
        """A candidate-relative path from the JSON (``masks/<i>.png``), resolved inside the candidate."""
        if not isinstance(relative, str):
            return None
        return safe_join(self.candidate_root, relative)

    def option(self, name: str, default: Any) -> Any:
        """A profile option, or ``default``."""
        return self.options.get(name, default)


@dataclass
class MetaView:
    """The candidate's dataset-level JSON with the counts the meta checks compare it to.

    Attributes:
        candidate_root: The candidate folder.
        manifest_indices: The manifest's indices (empty when there is no manifest).
        samples: The sample views of the manifest indices (for counting valid images and JSONs).
        options: The profile's options.
    """

    candidate_root: Path
    manifest_indices: list[int]
    samples: dict[int, SampleView]
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        """``data_meta.json`` under the candidate."""
        return self.candidate_root / DATA_META

    @cached_property
    def _loaded(self) -> tuple[Any, str]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, f"{DATA_META} is missing"
        except (OSError, UnicodeDecodeError) as exc:
            return None, f"{DATA_META} cannot be read ({exc})"
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return None, f"{DATA_META} is not valid JSON ({exc.msg}, line {exc.lineno})"
        if not isinstance(data, dict):
            return None, f"{DATA_META} must hold a JSON object"
        return data, ""

    @property
    def meta(self) -> dict[str, Any] | None:
        """The parsed ``data_meta.json`` object, or None."""
        data = self._loaded[0]
        return data if isinstance(data, dict) else None

    @property
    def error(self) -> str:
        """Why there is no usable ``data_meta.json`` (empty when there is one)."""
        return self._loaded[1]

    @cached_property
    def n_valid_images(self) -> int:
        """Manifest indices whose image opens."""
        return sum(1 for s in self.samples.values() if s.image is not None and s.image.valid)


def clear_file_caches() -> None:
    """Forget cached image facts, verified contents and resolved paths (cold-start measurements)."""
    _IMAGE_CACHE.clear()
    _VERIFIED.clear()
    _resolve_inside.cache_clear()
    _real_root.cache_clear()


def file_signature(path: Path) -> tuple[int, int] | None:
    """``(mtime_ns, size)`` of a file, or None when it does not exist (cache keys)."""
    st = stat_path(path)
    return None if st is None else (st.st_mtime_ns, st.st_size)

"""The bundle a check looks at: one candidate sample (annotation, image, mask, raw source, manifest entry).

Everything is loaded lazily and at most once per view, and nothing raises: a missing or broken file becomes
``None`` plus an error string the checks turn into a failed result. Paths the candidate declares are resolved
with
`safe_join`, which refuses anything that leaves its root *before* the file is opened.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from benchmark.manifest import ManifestEntry
from validator._values import get_path

log = logging.getLogger(__name__)

IMAGE_EXTS = (".png", ".jpg", ".jpeg")
ANNOTATIONS_DIR = "standardized_annotations"
IMAGES_DIR = "images"
DATA_META = "data_meta.json"


def safe_join(root: Path, relative: str) -> Path | None:
    """``root / relative`` if it stays inside ``root`` after resolving ``..`` and symlinks, else None.

    Absolute paths, ``..`` climbing out and symlinks pointing outside are all refused, so a caller never opens
    a
    file outside the folder it trusts.

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


@lru_cache(maxsize=65_536)
def _resolve_inside(root: str, relative: str) -> str | None:
    # Cached: the same source paths are resolved for every candidate of a sample. realpath follows symlinks,
    # so a
    # link pointing out of the root is caught here, before anything is opened.
    base = os.path.realpath(root)
    target = os.path.realpath(os.path.join(base, relative))
    return target if target == base or target.startswith(base.rstrip(os.sep) + os.sep) else None


@dataclass(frozen=True)
class ImageFacts:
    """What an image file holds, read once: its size and pixels, or the reason it cannot be opened."""

    path: Path
    valid: bool
    size: tuple[int, int] | None = None  # (width, height)
    error: str = ""

    def pixels(self) -> np.ndarray | None:
        """The decoded pixels (no caching: large and rarely needed twice)."""
        try:
            with Image.open(self.path) as im:
                return np.asarray(im)
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            log.debug("cannot decode %s: %s", self.path, exc)
            return None


_IMAGE_CACHE: dict[tuple[str, int, int], ImageFacts] = {}


def image_facts(path: Path | None) -> ImageFacts | None:
    """Open an image with PIL ``verify()`` (the benchmark's validity test) and note its size; cached by mtime.

    Args:
        path: The image file, or None.

    Returns:
        None when there is no file; otherwise the facts (``valid=False`` with the reason when unreadable).
    """
    if path is None:
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    if not path.is_file():
        return ImageFacts(path, False, error=f"{path.name} is not a file")
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    cached = _IMAGE_CACHE.get(key)
    if cached is not None:
        return cached
    facts: ImageFacts
    try:
        with Image.open(path) as im:
            im.verify()
            size = (int(im.size[0]), int(im.size[1]))
        facts = ImageFacts(path, size[0] > 0 and size[1] > 0, size, "" if min(size) > 0 else "empty image")
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        facts = ImageFacts(path, False, error=f"{path.name} cannot be opened as an image ({exc})")
    if len(_IMAGE_CACHE) > 50_000:
        _IMAGE_CACHE.clear()
    _IMAGE_CACHE[key] = facts
    return facts


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
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, f"{ANNOTATIONS_DIR}/{self.index}.json is missing"
        except (OSError, UnicodeDecodeError) as exc:
            return None, f"{ANNOTATIONS_DIR}/{self.index}.json cannot be read ({exc})"
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
        """The annotation value at a dotted path, or None."""
        return get_path(self.annotation, dotted)

    def block(self, dotted: str) -> dict[str, Any]:
        """The dict at a dotted path, or ``{}`` when absent or not a dict."""
        value = self.get(dotted)
        return value if isinstance(value, dict) else {}

    @property
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
        value = self.get("record.image_path")
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

    @cached_property
    def n_json(self) -> int:
        """Manifest indices with a JSON-object annotation."""
        return sum(1 for s in self.samples.values() if s.annotation is not None)


def file_signature(path: Path) -> tuple[int, int] | None:
    """``(mtime_ns, size)`` of a file, or None when it does not exist (cache keys)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size

"""Value normalisers shared by the checks: placeholders, text tokens, dimensions, source stems.

They follow the benchmark's own rules (SPEC §3.1) so the ``mdsbench`` profile sees values the way the
reference
tools do; the ``evidence`` profile reuses them where the rule is sound.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

MISSING_TOKENS = frozenset(
    {"", "n/a", "na", "nan", "none", "not available", "not_applicable", "null", "tbd", "unk", "unknown"}
)
NULL_EQ_TOKENS = frozenset({"<none>", "<null>", "[null]", "__none__", "__null__"})
_PLACEHOLDER_LIKE = re.compile(r"^<[^<>]+>$")
_NEVER_PLACEHOLDER_NUMERIC = frozenset(
    {"label", "class_id", "category_id", "num_classes", "total", "train", "val", "test"}
)
_ZERO_IS_PLACEHOLDER = frozenset({"age_years", "length_chars", "confidence_global"})

ALLOWED_TASKS = ("classification", "segmentation", "detection")
ALLOWED_DIMS = ("2d", "3d", "video")
SPATIAL_BRANCH_BY_DIM = {"2d": "common", "3d": "three_d", "video": "video"}

# SPEC §3.1 source-stem normalisation: strip the first matching extension of this list, in this order.
_STEM_EXTENSIONS = (
    ".ome.tiff",
    ".ome.tif",
    ".nii.gz",
    ".nii",
    ".mha",
    ".tiff",
    ".tif",
    ".czi",
    ".dcm",
    ".dicom",
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".bmp",
    ".json",
    ".txt",
    ".npy",
    ".npz",
    ".h5",
    ".hdf5",
    ".mat",
    ".img",
    ".pgm",
    ".ppm",
    ".svs",
    ".vsi",
    ".avi",
    ".mp4",
    ".mov",
    ".webm",
    ".webp",
    ".pdf",
)
_STEM_SUFFIXES = ("_flair", "_t1ce", "_t1", "_t2", "_seg", "_mask")
_DYNAMIC_NUCLEAR = re.compile(r"(dynamicnuclearnet)/(test_\d+)/(frame_\d+)", re.IGNORECASE)
_TEST_RE = re.compile(r"test_\d+", re.IGNORECASE)
_FRAME_RE = re.compile(r"frame[_-]?\d+", re.IGNORECASE)
_BRAIN_RE = re.compile(r"^(brain_p\d+)_0000$")
_SHORT_ID_RE = re.compile(r"(?:sub_)?([pk])0*(\d+)(?:_dti)?")


def is_placeholder(value: Any, key: str = "") -> bool:
    """Whether a value counts as "not filled in" under the benchmark's placeholder rule (SPEC §3.1).

    Args:
        value: Any JSON value.
        key: The key it sits under; some keys treat 0 as a placeholder, others never treat numbers as one.

    Returns:
        True for None, placeholder strings, False, non-finite numbers, -1 (and 0 for a few keys), and empty
        containers or containers holding only placeholders.
    """
    key = key.lower()
    if value is None or value is False:
        return True
    if value is True:
        return False
    if isinstance(value, int | float):
        if key in _NEVER_PLACEHOLDER_NUMERIC:
            return False
        if not math.isfinite(value) or value == -1:
            return True
        return key in _ZERO_IS_PLACEHOLDER and value == 0
    if isinstance(value, str):
        text = value.strip().lower()
        return text in MISSING_TOKENS or text in NULL_EQ_TOKENS or bool(_PLACEHOLDER_LIKE.match(text))
    if isinstance(value, dict):
        return all(is_placeholder(v, str(k)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(is_placeholder(v, key) for v in value)
    return False


def nonmissing(value: Any) -> bool:
    """A non-placeholder string, True, a finite number (0 counts), or a container with a nonmissing
    element."""
    if value is True:
        return True
    if value is None or value is False:
        return False
    if isinstance(value, int | float):
        return math.isfinite(value)
    if isinstance(value, str):
        return not is_placeholder(value)
    if isinstance(value, dict):
        return any(nonmissing(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(nonmissing(v) for v in value)
    return False


def effectively_empty(value: Any) -> bool:
    """An inactive branch: missing, ``{}``, null, or holding only placeholders."""
    if value is None or value is False:
        return True
    if isinstance(value, dict):
        return all(effectively_empty(v) or is_placeholder(v, str(k)) for k, v in value.items())
    if isinstance(value, list):
        return all(effectively_empty(v) for v in value)
    return is_placeholder(value)


def norm_text(value: Any) -> str:
    """``strip().lower()`` of the string form; empty for None."""
    return "" if value is None else str(value).strip().lower()


_TOKEN_SEPARATORS = re.compile(r"[\s\-_/]+")
_TOKEN_DROPPED = re.compile(r"[^a-z0-9\u4e00-\u9fff ]+")


def norm_token(value: Any) -> str:
    """Lower-case, collapse ``[\\s-_/]`` runs to one space, drop other punctuation (SPEC §3.1)."""
    return _token_of_text(norm_text(value))


def clear_token_cache() -> None:
    """Forget memoised `norm_token` results (cold-start measurements)."""
    _token_of_text.cache_clear()


@lru_cache(maxsize=65_536)
def _token_of_text(text: str) -> str:
    # Cached: the checks normalise the same class names and path parts for every sample and candidate.
    return _TOKEN_DROPPED.sub("", _TOKEN_SEPARATORS.sub(" ", text)).strip()


def norm_dim(value: Any) -> str:
    """``2d`` / ``3d`` / ``video`` from a free-form dimension string; other strings pass through lowered."""
    text = norm_text(value).replace("-", "").replace(" ", "")
    if text.startswith("2d"):
        return "2d"
    if text.startswith("3d"):
        return "3d"
    if "video" in text:
        return "video"
    return text


def norm_modality(value: Any) -> str:
    """Canonical modality token (``ct``, ``mri``, ``microscopy``, ``ultrasound``, ``xray``) or the lowered
    string."""
    text = norm_text(value)
    if text in {"ct", "computedtomography"} or text.startswith("ct"):
        return "ct"
    if text in {"mri", "mr"} or text.startswith("mri"):
        return "mri"
    if "microscopy" in text:
        return "microscopy"
    if "ultrasound" in text or text == "us":
        return "ultrasound"
    if "xray" in text or "x-ray" in text:
        return "xray"
    return text


def source_stem(value: Any) -> str | None:
    """The benchmark's normalised source stem of a path or id (SPEC §3.1), or None when nothing is left."""
    if value is None or isinstance(value, bool):
        return None
    raw = str(value).strip().strip("'\"").replace("\\", "/")
    if not raw:
        return None
    dyn = _DYNAMIC_NUCLEAR.search(raw)
    if dyn:
        return _clean("_".join(dyn.groups()))
    base = raw.rsplit("/", 1)[-1]
    test = _TEST_RE.search(base)
    if test and not _FRAME_RE.search(base):
        return test.group(0).lower()
    lowered = base.lower()
    for ext in _STEM_EXTENSIONS:
        if lowered.endswith(ext):
            base = base[: -len(ext)]
            break
    stem = _clean(base)
    brain = _BRAIN_RE.match(stem)
    if brain:
        stem = brain.group(1)
    for suffix in _STEM_SUFFIXES:
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return stem or None


def source_aliases(value: Any) -> set[str]:
    """The stem plus its BIDS-style ``p``/``k`` id variants (``p23``, ``p023``, ``sub_p23``,
    ``sub_p23_dti``)."""
    stem = source_stem(value)
    if stem is None:
        return set()
    aliases = {stem}
    short = _SHORT_ID_RE.fullmatch(stem)
    if short:
        group, number = short.group(1), int(short.group(2))
        for n in (f"{number}", f"{number:02d}"):
            aliases.update({f"{group}{n}", f"sub_{group}{n}", f"sub_{group}{n}_dti"})
    return aliases


def _clean(text: str) -> str:
    text = text.lower().replace("-", "_").replace(" ", "_")
    return re.sub(r"[^a-z0-9_]", "", text)


def get_path(doc: Any, dotted: str) -> Any:
    """The value at a dotted path (``media_geometry.media.task_type``) of nested dicts, or None."""
    node = doc
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def string_leaves(node: Any, prefix: str) -> Iterator[tuple[str, str]]:
    """Every string leaf under a node with its dotted path, in document order (lists indexed ``[k]``)."""
    if isinstance(node, str):
        yield prefix, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from string_leaves(value, f"{prefix}.{key}")
    elif isinstance(node, list):
        for k, value in enumerate(node):
            yield from string_leaves(value, f"{prefix}[{k}]")

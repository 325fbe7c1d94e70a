"""Value normalisers and the placeholder / missing-value rules of the reference scorer (SPEC §3.1)."""

from __future__ import annotations

import math
import re
from typing import Any

from benchmark.score import constants as C

_TOKEN_SEP_RE = re.compile(r"[\s\-_/]+")
_TOKEN_DROP_RE = re.compile(r"[^a-z0-9\u4e00-\u9fff ]+")
_SLASHES_RE = re.compile(r"/+")


def is_number(value: Any) -> bool:
    """True for int/float values that are not bools (JSON numbers)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _placeholder_string(text: str) -> bool:
    s = text.strip()
    low = s.lower()
    return low in C.MISSING_TOKENS or low in C.NULL_EQ_TOKENS or bool(C.PLACEHOLDER_LIKE_RE.match(s))


def is_placeholder(value: Any, key: str | None = None) -> bool:
    """Whether ``value`` (found under ``key``) counts as an empty / placeholder value.

    Args:
        value: Any JSON value.
        key: The key it was found under; numbers under some keys get special treatment.

    Returns:
        True for None, placeholder strings, False, non-finite numbers, -1 (and 0 for age/length/confidence
        keys), and containers that are empty or hold only placeholders.
    """
    if value is None:
        return True
    if isinstance(value, bool):
        return value is False
    k = (key or "").lower()
    if is_number(value):
        if k in C.NEVER_PLACEHOLDER_NUMERIC_KEYS:
            return False
        if not math.isfinite(value):
            return True
        if value == -1:
            return True
        return k in C.ZERO_IS_PLACEHOLDER_KEYS and value == 0
    if isinstance(value, str):
        return _placeholder_string(value)
    if isinstance(value, dict):
        return all(is_placeholder(v, str(kk)) for kk, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(is_placeholder(v, key) for v in value)
    return False


def nonmissing(value: Any) -> bool:
    """Whether ``value`` carries information: a real string, True, a finite number (0 counts), or such a list.

    Args:
        value: Any JSON value.

    Returns:
        The reference scorer's ``nonmissing`` verdict.
    """
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if is_number(value):
        return math.isfinite(value)
    if isinstance(value, str):
        return not _placeholder_string(value)
    if isinstance(value, dict):
        return any(nonmissing(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(nonmissing(v) for v in value)
    return False


def norm_text(value: Any) -> str:
    """``str(value).strip().lower()``, with None as the empty string."""
    return "" if value is None else str(value).strip().lower()


def norm_token(value: Any) -> str:
    """Lower-case, collapse whitespace/``-``/``_``/``/`` runs to one space, drop other punctuation, strip."""
    s = _TOKEN_SEP_RE.sub(" ", norm_text(value))
    return _TOKEN_DROP_RE.sub("", s).strip()


def norm_dim(value: Any) -> str:
    """Normalise a dimension string to ``2d`` / ``3d`` / ``video`` (else the cleaned string)."""
    s = norm_text(value).replace("-", "").replace(" ", "")
    if s.startswith("2d"):
        return "2d"
    if s.startswith("3d"):
        return "3d"
    if "video" in s:
        return "video"
    return s


def norm_modality(value: Any) -> str:
    """Normalise a modality string (``CT*`` → ct, ``MR``/``MRI*`` → mri, ... else the lowered string)."""
    s = norm_text(value)
    if not s:
        return ""
    if s in ("ct", "computedtomography") or s.startswith("ct"):
        return "ct"
    if s in ("mri", "mr") or s.startswith("mri"):
        return "mri"
    if "microscopy" in s:
        return "microscopy"
    if "ultrasound" in s or s == "us":
        return "ultrasound"
    if "xray" in s or "x-ray" in s:
        return "xray"
    return s


def norm_full_path(value: Any) -> str:
    """Normalise a path for equality: backslashes to ``/``, collapse ``//``, strip ``/``, lower-case."""
    s = "" if value is None else str(value).strip().replace("\\", "/")
    return _SLASHES_RE.sub("/", s).strip("/").lower()


def round4(x: float) -> float:
    """Round to the reference scorer's 4 decimals."""
    return round(float(x), C.DECIMALS)


def mean(values: list[float]) -> float:
    """Arithmetic mean, 0.0 for an empty list."""
    return sum(values) / len(values) if values else 0.0

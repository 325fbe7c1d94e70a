"""The MDS-Bench value normalisers (SPEC §3.1), written once for the scorer, validator and suite generator.

Placeholder / missing-value rules, text tokens, dimensions, modalities, paths and source stems with their BIDS
aliases. None of it reads ground truth, so every layer may import it: `benchmark.score` (which must match the
reference scorer to 4 decimals), `validator` (whose ``mdsbench`` profile reproduces the reference S3/S4
validator) and `testbed.synth` (which writes ground-truth stems the scorer will accept). The key lists and
regexes are facts copied from the reference scorer; they live in ``data/mdsbench_constants.json`` next to this
module, together with the scorer's other constants (see `benchmark.score.constants`).

Importing this module reads that one small JSON file and nothing heavier than the standard library.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache, lru_cache
from importlib import resources
from typing import Any
from urllib.parse import unquote

CONSTANTS_FILE = "data/mdsbench_constants.json"
"""Where the reference scorer's constants live, relative to the `benchmark` package."""


@cache
def load_constants() -> dict[str, Any]:
    """Return the parsed reference-scorer constants file (read once per process).

    Returns:
        The mapping from constant name to value (key lists, regexes, weights, thresholds).

    Raises:
        FileNotFoundError: When the package was installed without its data file.
        json.JSONDecodeError: When the data file is not valid JSON.
    """
    text = resources.files("benchmark").joinpath(CONSTANTS_FILE).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


_C = load_constants()
_R = _C["REGEX"]

MISSING_TOKENS: frozenset[str] = frozenset(_C["MISSING_TOKENS"])
NULL_EQ_TOKENS: frozenset[str] = frozenset(_C["NULL_EQ_TOKENS"])
PLACEHOLDER_LIKE_RE = re.compile(_C["PLACEHOLDER_LIKE_RE"])
NEVER_PLACEHOLDER_NUMERIC_KEYS: frozenset[str] = frozenset(_C["NEVER_PLACEHOLDER_NUMERIC_KEYS"])
ZERO_IS_PLACEHOLDER_KEYS: frozenset[str] = frozenset(_C["ZERO_IS_PLACEHOLDER_KEYS"])
ALLOWED_TASKS: tuple[str, ...] = tuple(_C["ALLOWED_TASKS"])
SPATIAL_BRANCH_BY_DIM: dict[str, str] = dict(_C["SPATIAL_BRANCH_BY_DIM"])
ALLOWED_DIMS: tuple[str, ...] = tuple(SPATIAL_BRANCH_BY_DIM)
STEM_EXTENSIONS: tuple[str, ...] = tuple(_C["STEM_EXTENSIONS_STRIPPED"])
STEM_SUFFIXES: tuple[str, ...] = tuple(_C["STEM_SUFFIXES_STRIPPED"])

RADIAL_PATH_RE = re.compile(_R["radial_path"], re.I)
RADIAL_SUBJECT_RE = re.compile(_R["radial_subject"], re.I)
DYNAMICNUCLEARNET_RE = re.compile(_R["dynamicnuclearnet"], re.I)
TEST_ID_RE = re.compile(_R["test_id"], re.I)
FRAME_TOKEN_RE = re.compile(_R["frame_token"], re.I)
BRAIN_CHANNEL_RE = re.compile(_R["brain_channel"])
ALIAS_SHORT_RE = re.compile(_R["alias_short"])
ALIAS_BIDS_RE = re.compile(_R["alias_bids"])

_TOKEN_SEP_RE = re.compile(r"[\s\-_/]+")
_TOKEN_DROP_RE = re.compile(r"[^a-z0-9\u4e00-\u9fff ]+")
_SLASHES_RE = re.compile(r"/+")
_NON_STEM_RE = re.compile(r"[^a-z0-9_]+")


def is_number(value: Any) -> bool:
    """True for int/float values that are not bools (JSON numbers)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


@lru_cache(maxsize=65_536)
def _placeholder_string(text: str) -> bool:
    # Memoised: ~12k calls per scored dataset on ~100 distinct texts (field values, "", "unknown", ...).
    low = text.strip().lower()
    # PLACEHOLDER_LIKE_RE has no letters, so matching the lowered text is the same as matching the original.
    return low in MISSING_TOKENS or low in NULL_EQ_TOKENS or PLACEHOLDER_LIKE_RE.match(low) is not None


def is_placeholder(value: Any, key: str | None = None) -> bool:
    """Whether ``value`` (found under ``key``) counts as "not filled in" (SPEC §3.1).

    Args:
        value: Any JSON value.
        key: The key it was found under: numbers under some keys are never placeholders, and 0 is one under
            ``age_years`` / ``length_chars`` / ``confidence_global``.

    Returns:
        True for None, placeholder strings, False, non-finite numbers, -1 (and 0 for the keys above), and
        containers that are empty or hold only placeholders.
    """
    # Ordered by frequency (strings first); True/False are tested by identity before the number branch
    # because bool is an int subclass.
    if value is None or value is False:
        return True
    if value is True:
        return False
    if isinstance(value, str):
        return _placeholder_string(value)
    if isinstance(value, int | float):
        k = key.lower() if key else ""
        if k in NEVER_PLACEHOLDER_NUMERIC_KEYS:
            return False
        if not math.isfinite(value) or value == -1:
            return True
        return k in ZERO_IS_PLACEHOLDER_KEYS and value == 0
    if isinstance(value, dict):
        return all(is_placeholder(v, str(kk)) for kk, v in value.items())
    if isinstance(value, list | tuple):
        return all(is_placeholder(v, key) for v in value)
    return False


def nonmissing(value: Any) -> bool:
    """Whether ``value`` carries information: a real string, True, a finite number (0 counts), or such a list.

    Args:
        value: Any JSON value.

    Returns:
        The reference scorer's ``nonmissing`` verdict (SPEC §3.1).
    """
    if value is None or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, str):
        return not _placeholder_string(value)
    if isinstance(value, int | float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return any(nonmissing(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(nonmissing(v) for v in value)
    return False


def norm_text(value: Any) -> str:
    """``str(value).strip().lower()``, with None as the empty string."""
    return "" if value is None else str(value).strip().lower()


def norm_token(value: Any) -> str:
    """Lower-case, collapse whitespace/``-``/``_``/``/`` runs to one space, drop other punctuation, strip.

    Args:
        value: Any value; None gives the empty string.

    Returns:
        The token (SPEC §3.1 ``norm_token``); results are memoised per text.
    """
    return _token_of_text(norm_text(value))


@lru_cache(maxsize=65_536)
def _token_of_text(text: str) -> str:
    # Memoised: the validator normalises the same class names and path parts for every sample and candidate.
    return _TOKEN_DROP_RE.sub("", _TOKEN_SEP_RE.sub(" ", text)).strip()


def clear_token_cache() -> None:
    """Forget memoised :func:`norm_token` results (for cold-start measurements)."""
    _token_of_text.cache_clear()


def norm_dim(value: Any) -> str:
    """Normalise a dimension string to ``2d`` / ``3d`` / ``video`` (else the cleaned, lowered string)."""
    s = norm_text(value).replace("-", "").replace(" ", "")
    if s.startswith("2d"):
        return "2d"
    if s.startswith("3d"):
        return "3d"
    if "video" in s:
        return "video"
    return s


def norm_modality(value: Any) -> str:
    """Normalise a modality (``CT*`` → ct, ``MR``/``MRI*`` → mri, ...; else lowered: "XR" → "xr")."""
    s = norm_text(value)
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


def _cleanup(text: str) -> str:
    return _NON_STEM_RE.sub("", text.lower().replace("-", "_").replace(" ", "_"))


def normalize_source_stem(value: Any) -> str | None:
    """Normalise a path / id to the reference scorer's comparable source stem (SPEC §3.1).

    URL-unquote, ``\\`` → ``/``; the dataset-specific rules (medical-7 ``radial_…`` paths and subjects,
    DynamicNuclearNet ``…/test_k/frame_n``); then the basename, ``test_NN`` without a frame part →
    ``test_NN``, one known extension stripped, lower case with ``-``/space → ``_`` and other punctuation
    dropped, ``brain_pN_0000`` → ``brain_pN``, and one channel suffix (``_t1``, ``_seg``, ...) stripped.

    Args:
        value: A path, file name or identifier (any JSON value; non-strings are stringified, so True gives
            "true").

    Returns:
        The stem (lower-case ``[a-z0-9_]``), or None when nothing is left.

    Example:
        >>> normalize_source_stem("data/BraTS_001_flair.nii.gz")
        'brats_001'
    """
    if value is None or value == "":
        return None
    return _stem_of_text(str(value))


@lru_cache(maxsize=65_536)
def _stem_of_text(value: str) -> str | None:
    raw = unquote(value).strip().strip("'\"").replace("\\", "/")
    m = RADIAL_PATH_RE.search(raw)
    if m:
        return _cleanup(f"{m.group(1)}_{m.group(2)}_{m.group(3)}") or None
    m = RADIAL_SUBJECT_RE.match(raw)
    if m:
        return _cleanup(f"{m.group(2)}_{m.group(3)}_{m.group(1)}") or None
    base = raw.split("/")[-1]
    m = DYNAMICNUCLEARNET_RE.search(raw)
    if m:
        return _cleanup(f"{m.group(1)}_{m.group(2)}_{m.group(3)}") or None
    m = TEST_ID_RE.search(base)
    if m and not FRAME_TOKEN_RE.search(base):
        return m.group(1).lower()
    low = base.lower()
    for ext in STEM_EXTENSIONS:
        if low.endswith(ext):
            base = base[: -len(ext)]
            break
    s = _cleanup(base)
    m = BRAIN_CHANNEL_RE.match(s)
    if m:
        s = m.group(1)
    for suffix in STEM_SUFFIXES:
        if s.endswith(suffix):
            s = s[: -len(suffix)]
            break
    return s or None


def expand_aliases(stem: str | None) -> set[str]:
    """Return the stem plus its BIDS p/k aliases (``p23`` ≡ ``p023`` ≡ ``sub_p23`` ≡ ``sub_p23_dti``).

    Args:
        stem: A normalised stem (see :func:`normalize_source_stem`), or None.

    Returns:
        The aliases, empty for None or "".
    """
    if not stem:
        return set()
    out = {stem}
    m = ALIAS_SHORT_RE.fullmatch(stem) or ALIAS_BIDS_RE.fullmatch(stem)
    if m:
        g, n = m.group(1), int(m.group(2))
        out |= {
            f"{g}{n}",
            f"{g}{n:02d}",
            f"sub_{g}{n}",
            f"sub_{g}{n:02d}",
            f"sub_{g}{n}_dti",
            f"sub_{g}{n:02d}_dti",
        }
    return out


# The reference scorer's scan of trace values (SPEC §3.3, gate part A): a key matching its pattern, holding a
# path-like or short string. Read by the scorer and by the writers that record what it needs
# (`benchmark.source_stem`), so both apply one rule.
SCAN_KEY_RE = re.compile(_C["V2_SCAN_KEY_RE"], re.I)
PATH_HINT_RE = re.compile(_C["V2_PATH_HINT_RE"], re.I)
SCAN_VALUE_MAX_LEN: int = _C["SCAN_VALUE_MAX_LEN"]


@lru_cache(maxsize=4096)
def _scans_key(key: str) -> bool:
    # Memoised per key: the same few dozen keys recur in every annotation of every model.
    return SCAN_KEY_RE.search(key) is not None


def scanned_stem(key: Any, value: Any) -> str | None:
    """The normalised stem the reference scorer reads from one trace value, or None when it reads none.

    Args:
        key: The value's key (in ``extra``, ``raw`` or ``record``).
        value: The value.

    Returns:
        `normalize_source_stem` of a string the scorer scans (its key matches the scan pattern and it looks
        like a path or is short), else None.
    """
    if not isinstance(value, str) or not _scans_key(str(key)):
        return None
    text = value.strip()
    if PATH_HINT_RE.search(text) or len(text) <= SCAN_VALUE_MAX_LEN:
        return normalize_source_stem(value) or None
    return None

"""The reference scorer's constants, loaded once from the package's own data file.

Every key list, regex, weight and threshold the scorer needs lives in ``data/mdsbench_constants.json`` (facts
copied from the reference scorer, SPEC §3), so the code stays readable and the data stays auditable.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

METRIC_NAMES: tuple[str, ...] = ("SV", "SSC", "SC", "IC", "IV", "INR", "CF", "MSC", "MSJ", "SCJ", "E2E")
"""The eleven dataset metrics, in the order the CLI and tables print them."""

ROUNDED_METRICS: frozenset[str] = frozenset({"SV", "SC", "IC", "IV", "INR", "CF", "MSC"})
"""Metrics the reference evaluator rounds to 4 decimals; the others are unrounded means (conformance README).
"""

DECIMALS = 4


@cache
def raw() -> dict[str, Any]:
    """Return the parsed constants file (cached).

    Returns:
        The mapping from constant name to value.
    """
    text = (
        resources.files("benchmark.score")
        .joinpath("data/mdsbench_constants.json")
        .read_text(encoding="utf-8")
    )
    data: dict[str, Any] = json.loads(text)
    return data


def _set(name: str) -> frozenset[str]:
    return frozenset(raw()[name])


_C = raw()
_R = _C["REGEX"]

IMAGE_EXTS: tuple[str, ...] = tuple(_C["IMAGE_EXTS"])
ALLOWED_TASKS: tuple[str, ...] = tuple(_C["ALLOWED_TASKS"])
MISSING_TOKENS = _set("MISSING_TOKENS")
NULL_EQ_TOKENS = _set("NULL_EQ_TOKENS")
PLACEHOLDER_LIKE_RE = re.compile(_C["PLACEHOLDER_LIKE_RE"])
SOURCE_TRACE_KEYS: tuple[str, ...] = tuple(_C["SOURCE_TRACE_KEYS"])
RAW_SOURCE_KEYS: tuple[str, ...] = tuple(_C["RAW_SOURCE_KEYS"])
RECORD_TRACE_KEYS: tuple[str, ...] = tuple(_C["RECORD_TRACE_KEYS"])
EXTRA_NESTED_TRACE_KEYS: tuple[str, ...] = tuple(_C["EXTRA_NESTED_TRACE_KEYS"])
SCAN_VALUE_MAX_LEN: int = _C["SCAN_VALUE_MAX_LEN"]
NEVER_PLACEHOLDER_NUMERIC_KEYS = _set("NEVER_PLACEHOLDER_NUMERIC_KEYS")
ZERO_IS_PLACEHOLDER_KEYS = _set("ZERO_IS_PLACEHOLDER_KEYS")
ENUM_KEYS = _set("ENUM_KEYS")
PATH_KEY_CONTAINS: tuple[str, ...] = tuple(_C["PATH_KEY_RULE"]["contains_any"])
PATH_KEY_ENDSWITH: tuple[str, ...] = tuple(_C["PATH_KEY_RULE"]["endswith_any"])
SCHEMA_CHECK_NAMES: tuple[str, ...] = tuple(_C["SCHEMA_CHECK_NAMES"])
SCHEMA_DEFAULTS: dict[str, list[str]] = _C["SCHEMA_DEFAULTS"]
SPATIAL_BRANCH_BY_DIM: dict[str, str] = _C["SPATIAL_BRANCH_BY_DIM"]
STEM_EXTENSIONS: tuple[str, ...] = tuple(_C["STEM_EXTENSIONS_STRIPPED"])
STEM_SUFFIXES: tuple[str, ...] = tuple(_C["STEM_SUFFIXES_STRIPPED"])
MICROSCOPY_PATH_CANDIDATES: tuple[str, ...] = tuple(_C["DERIVE_MICROSCOPY_PATH_CANDIDATES"])
MRI_RD_PATHS: tuple[str, ...] = tuple(_C["DERIVE_MRI_RD_PATHS"])
MEDICAL7_NAME_KEYS: tuple[str, ...] = tuple(_C["DERIVE_MEDICAL7_NAME_KEYS"])
MEDICAL7_CFG_KEYS: tuple[str, ...] = tuple(_C["DERIVE_MEDICAL7_CFG_KEYS"])
MEDICAL7_PARAM_KEYS: tuple[str, ...] = tuple(_C["DERIVE_MEDICAL7_PARAM_KEYS"])
SOURCE_STEM_PRIORITY: tuple[str, ...] = tuple(_C["DERIVE_SOURCE_STEM_PRIORITY"])
PATH_HINT_RE = re.compile(_C["V2_PATH_HINT_RE"], re.I)
SCAN_KEY_RE = re.compile(_C["V2_SCAN_KEY_RE"], re.I)
SEMANTIC_ITEM_WEIGHTS: dict[str, float] = _C["SEMANTIC_ITEM_WEIGHTS"]
SEMANTIC_COMBINATION: dict[str, float] = _C["SEMANTIC_COMBINATION"]
E2E_THRESHOLDS: dict[str, Any] = _C["E2E_THRESHOLDS"]
GEOM3_FLOOR: float = _C["GEOM3_FLOOR"]
META_DEFAULT_REQUIRED_KEYS: tuple[str, ...] = tuple(_C["META_DEFAULT_REQUIRED_KEYS"])
META_DEFAULT_DV_REQUIRED: tuple[str, ...] = tuple(_C["META_DEFAULT_DV_REQUIRED"])
MAIN_TABLE_WEIGHTS: tuple[tuple[tuple[str, ...], float], ...] = tuple(
    (tuple(c["keys"]), float(c["weight"])) for c in _C["MAIN_TABLE_WEIGHTS"]
)

RADIAL_PATH_RE = re.compile(_R["radial_path"], re.I)
RADIAL_SUBJECT_RE = re.compile(_R["radial_subject"], re.I)
DYNAMICNUCLEARNET_RE = re.compile(_R["dynamicnuclearnet"], re.I)
TEST_ID_RE = re.compile(_R["test_id"], re.I)
FRAME_TOKEN_RE = re.compile(_R["frame_token"], re.I)
BRAIN_CHANNEL_RE = re.compile(_R["brain_channel"])
ALIAS_SHORT_RE = re.compile(_R["alias_short"])
ALIAS_BIDS_RE = re.compile(_R["alias_bids"])
NOTES_RES: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.I) for p in _R["notes"])
PATH_EXTENSION_RE = re.compile(_R["path_extension"], re.I)
MRI_RD_FILE_RE = re.compile(_R["mri_rd_file"], re.I)
FRAME_CAPTURE_RE = re.compile(_R["frame_capture"], re.I)

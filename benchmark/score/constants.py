"""The reference scorer's constants, loaded once from the `benchmark` package's data file.

Every key list, regex, weight and threshold the scorer needs lives in
``benchmark/data/mdsbench_constants.json`` (facts copied from the reference scorer, SPEC §3), so the code
stays readable and the data stays auditable. `benchmark.normalize` reads the file and owns the
value-normalisation constants (placeholder tokens, stem extensions and regexes) it shares with the validator
and the suite generator.
"""

from __future__ import annotations

import re
from typing import Any

from benchmark import normalize as _shared

# The value-normalisation constants live in benchmark.normalize (shared with the validator and the suite
# generator); bound here too so the scorer's modules keep one ``C.`` namespace.
ALLOWED_TASKS = _shared.ALLOWED_TASKS
DYNAMICNUCLEARNET_RE = _shared.DYNAMICNUCLEARNET_RE
MISSING_TOKENS = _shared.MISSING_TOKENS
NULL_EQ_TOKENS = _shared.NULL_EQ_TOKENS
SPATIAL_BRANCH_BY_DIM = _shared.SPATIAL_BRANCH_BY_DIM
STEM_EXTENSIONS = _shared.STEM_EXTENSIONS
TEST_ID_RE = _shared.TEST_ID_RE

raw = _shared.load_constants
"""Return the parsed constants file (cached); kept under its old name."""

METRIC_NAMES: tuple[str, ...] = ("SV", "SSC", "SC", "IC", "IV", "INR", "CF", "MSC", "MSJ", "SCJ", "E2E")
"""The eleven dataset metrics, in the order the CLI and tables print them."""

ROUNDED_METRICS: frozenset[str] = frozenset({"SV", "SC", "IC", "IV", "INR", "CF", "MSC"})
"""Metrics the reference evaluator rounds to 4 decimals; the others are unrounded means (conformance README).
"""

DECIMALS = 4


def _set(name: str) -> frozenset[str]:
    return frozenset(raw()[name])


_C = raw()
_R = _C["REGEX"]

IMAGE_EXTS: tuple[str, ...] = tuple(_C["IMAGE_EXTS"])
SOURCE_TRACE_KEYS: tuple[str, ...] = tuple(_C["SOURCE_TRACE_KEYS"])
RAW_SOURCE_KEYS: tuple[str, ...] = tuple(_C["RAW_SOURCE_KEYS"])
RECORD_TRACE_KEYS: tuple[str, ...] = tuple(_C["RECORD_TRACE_KEYS"])
EXTRA_NESTED_TRACE_KEYS: tuple[str, ...] = tuple(_C["EXTRA_NESTED_TRACE_KEYS"])
ENUM_KEYS = _set("ENUM_KEYS")
PATH_KEY_CONTAINS: tuple[str, ...] = tuple(_C["PATH_KEY_RULE"]["contains_any"])
PATH_KEY_ENDSWITH: tuple[str, ...] = tuple(_C["PATH_KEY_RULE"]["endswith_any"])
SCHEMA_CHECK_NAMES: tuple[str, ...] = tuple(_C["SCHEMA_CHECK_NAMES"])
SCHEMA_DEFAULTS: dict[str, list[str]] = _C["SCHEMA_DEFAULTS"]
MICROSCOPY_PATH_CANDIDATES: tuple[str, ...] = tuple(_C["DERIVE_MICROSCOPY_PATH_CANDIDATES"])
MRI_RD_PATHS: tuple[str, ...] = tuple(_C["DERIVE_MRI_RD_PATHS"])
MEDICAL7_NAME_KEYS: tuple[str, ...] = tuple(_C["DERIVE_MEDICAL7_NAME_KEYS"])
MEDICAL7_CFG_KEYS: tuple[str, ...] = tuple(_C["DERIVE_MEDICAL7_CFG_KEYS"])
MEDICAL7_PARAM_KEYS: tuple[str, ...] = tuple(_C["DERIVE_MEDICAL7_PARAM_KEYS"])
SOURCE_STEM_PRIORITY: tuple[str, ...] = tuple(_C["DERIVE_SOURCE_STEM_PRIORITY"])
SEMANTIC_ITEM_WEIGHTS: dict[str, float] = _C["SEMANTIC_ITEM_WEIGHTS"]
SEMANTIC_COMBINATION: dict[str, float] = _C["SEMANTIC_COMBINATION"]
E2E_THRESHOLDS: dict[str, Any] = _C["E2E_THRESHOLDS"]
GEOM3_FLOOR: float = _C["GEOM3_FLOOR"]
META_DEFAULT_REQUIRED_KEYS: tuple[str, ...] = tuple(_C["META_DEFAULT_REQUIRED_KEYS"])
META_DEFAULT_DV_REQUIRED: tuple[str, ...] = tuple(_C["META_DEFAULT_DV_REQUIRED"])
MAIN_TABLE_WEIGHTS: tuple[tuple[tuple[str, ...], float], ...] = tuple(
    (tuple(c["keys"]), float(c["weight"])) for c in _C["MAIN_TABLE_WEIGHTS"]
)

NOTES_RES: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.I) for p in _R["notes"])
PATH_EXTENSION_RE = re.compile(_R["path_extension"], re.I)
MRI_RD_FILE_RE = re.compile(_R["mri_rd_file"], re.I)
FRAME_CAPTURE_RE = re.compile(_R["frame_capture"], re.I)

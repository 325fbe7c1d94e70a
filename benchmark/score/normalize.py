"""The scorer's value normalisers: the shared SPEC §3.1 rules plus the scorer's rounding helpers.

The placeholder / missing-value rules and the text, dimension, modality and path normalisers are written once
in `benchmark.normalize` (the validator and the suite generator use the same code); they are re-exported here
under the names the scorer's modules import.
"""

from __future__ import annotations

from typing import Any

from benchmark.normalize import (
    is_number,
    is_placeholder,
    nonmissing,
    norm_dim,
    norm_full_path,
    norm_modality,
    norm_text,
    norm_token,
)
from benchmark.score import constants as C

__all__ = [
    "as_dict",
    "is_number",
    "is_placeholder",
    "mean",
    "nonmissing",
    "norm_dim",
    "norm_full_path",
    "norm_modality",
    "norm_text",
    "norm_token",
    "round4",
]


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (malformed input scores as absent)."""
    return value if isinstance(value, dict) else {}


def round4(x: float) -> float:
    """Round to the reference scorer's 4 decimals."""
    return round(float(x), C.DECIMALS)


def mean(values: list[float]) -> float:
    """Arithmetic mean, 0.0 for an empty list."""
    return sum(values) / len(values) if values else 0.0

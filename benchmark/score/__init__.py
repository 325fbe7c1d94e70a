"""The eleven MDS-Bench metrics: the `official` profile (reference scorer) and the corrected `strict` one.

Public API: :func:`score_dataset`, :func:`score_candidate`, :func:`score_prediction`, :func:`score_root`,
:func:`macro`, :class:`ScoringRules` (alias `Profile`) and the closed `RulesName`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmark.score.aggregate import macro
    from benchmark.score.dataset import DatasetScore, score_prediction
    from benchmark.score.evaluate import score_candidate, score_dataset, score_root, write_results
    from benchmark.score.profiles import OFFICIAL, STRICT, Profile, RulesName, ScoringRules

# Loaded on first use (PEP 562): `medstrat score --help` and a lookup of the profile names must not
# pay for numpy, pydantic's ground-truth models and the metric modules (docs/performance.md, start-up).
_LAZY = {
    "macro": "aggregate",
    "DatasetScore": "dataset",
    "score_prediction": "dataset",
    "score_candidate": "evaluate",
    "score_dataset": "evaluate",
    "score_root": "evaluate",
    "write_results": "evaluate",
    "OFFICIAL": "profiles",
    "STRICT": "profiles",
    "Profile": "profiles",
    "RulesName": "profiles",
    "ScoringRules": "profiles",
}


def __getattr__(name: str) -> Any:
    """Import the public name's module on first access."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "OFFICIAL",
    "STRICT",
    "DatasetScore",
    "Profile",
    "RulesName",
    "ScoringRules",
    "macro",
    "score_candidate",
    "score_dataset",
    "score_prediction",
    "score_root",
    "write_results",
]

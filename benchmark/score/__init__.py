"""The eleven MDS-Bench metrics: the `official` profile (reference scorer) and the corrected `strict` one.

Public API: :func:`score_dataset`, :func:`score_candidate`, :func:`score_prediction`, :func:`score_root`,
:func:`macro`, :class:`Profile`.
"""

from benchmark.score.aggregate import macro
from benchmark.score.dataset import DatasetScore, score_prediction
from benchmark.score.evaluate import score_candidate, score_dataset, score_root, write_results
from benchmark.score.profiles import OFFICIAL, STRICT, Profile

__all__ = [
    "OFFICIAL",
    "STRICT",
    "DatasetScore",
    "Profile",
    "macro",
    "score_candidate",
    "score_dataset",
    "score_prediction",
    "score_root",
    "write_results",
]

"""Validator meta-evaluation: how well each check and the total score of a validator profile separate stored
candidates' samples that pass official E2E from those that fail, and (``--fit``) check weights learned
from the truth with leave-one-dataset-out cross-validation.

    medstrat validator-eval RUN [RUN ...] [--validators evidence,mdsbench] [--fit [BASE]]
                                         [--out DIR]

Analysis only: the truth comes from the scorer (ground truth of the stored runs' datasets), never into a
run. See docs/validator.md ("Measuring the validator").
"""

from experiments.analysis.validator_eval.collect import Evidence, SampleRow, collect
from experiments.analysis.validator_eval.fit import FitResult, leave_one_dataset_out, write_fitted
from experiments.analysis.validator_eval.tables import check_frame, fit_frame, total_frame

__all__ = [
    "Evidence",
    "FitResult",
    "SampleRow",
    "check_frame",
    "collect",
    "fit_frame",
    "leave_one_dataset_out",
    "total_frame",
    "write_fitted",
]

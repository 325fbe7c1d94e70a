"""``python -m experiments.validator_eval``: short for ``python -m experiments.analysis.validator_eval``."""

from core.command_names import short_name

__getattr__ = short_name(__name__, "experiments.analysis.validator_eval")

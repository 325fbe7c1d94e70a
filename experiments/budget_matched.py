"""``python -m experiments.budget_matched``: short for ``python -m experiments.analysis.budget_matched``."""

from core.command_names import short_name

__getattr__ = short_name(__name__, "experiments.analysis.budget_matched")

"""``python -m experiments.passk``: short for ``python -m experiments.analysis.passk``."""

from core.command_names import short_name

__getattr__ = short_name(__name__, "experiments.analysis.passk")

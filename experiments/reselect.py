"""``python -m experiments.reselect``: short for ``python -m experiments.selection.reselect``."""

from core.command_names import short_name

__getattr__ = short_name(__name__, "experiments.selection.reselect")

"""``python -m experiments.merge``: short for ``python -m experiments.run.merge``."""

from core.command_names import short_name

__getattr__ = short_name(__name__, "experiments.run.merge")

"""``python -m experiments.leaderboard``: short for ``python -m experiments.selection.leaderboard``."""

from core.command_names import short_name

__getattr__ = short_name(__name__, "experiments.selection.leaderboard")

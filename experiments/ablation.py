"""``python -m experiments.ablation``: short for ``python -m experiments.analysis.ablation``."""

from core.command_names import short_name

__getattr__ = short_name(__name__, "experiments.analysis.ablation")

"""`python -m experiments`: the Hydra app that runs strategies S0-S4 over a benchmark.

The run itself arrives with the strategies; today the app composes and prints its configuration.
"""

from experiments._config_path import compose_config, config_dir

__all__ = ["compose_config", "config_dir"]

"""`python -m experiments`: the Hydra app that runs strategies S0-S4 over a benchmark, and what studies runs.

Sub-packages, each importing only those listed before it (checked by
``tests/architecture/test_experiments_layering.py``): `stored` (reading run folders back) and `publish`
(statistics, the table writer), `report` (a run's HTML page), `run` (config → plan → the run folder),
`selection` (reselection, the selector leaderboard), `analysis` (ablation, pass@k, budget-matched, validator
meta-evaluation, the sweep page). The modules at this level are the command line's: `__main__` (the app),
`callbacks` (Hydra's), `cli` (the ``medstrat`` console script and its subcommands), `help`, `validator_file`,
`_config_path`.
"""

from experiments._config_path import compose_config, config_dir

__all__ = ["compose_config", "config_dir"]

"""Selection research on stored candidates: re-selecting a finished run's candidates with another selector
(`reselect`, a run that generates nothing), ranking every selector on them (`leaderboard`, its judge and
per-agent columns in `leaderboard_roles`, its figure in `leaderboard_figure`). Built on the run's public
pieces (`experiments.run.plan`, `experiments.run.experiment.run_experiment`) and the shared tables and
statistics of `experiments.publish`; never on `experiments.analysis`.
"""

"""Selection research on stored candidates: re-selecting a finished run's candidates with another selector
(`reselect`, a run that generates nothing), ranking every selector on them (`leaderboard`, with its judge
selectors, per-agent columns and figure). Built on the run's public
pieces (`experiments.run.plan`, `experiments.run.experiment.run_experiment`) and the shared tables and
statistics of `experiments.publish`; never on `experiments.analysis`.
"""

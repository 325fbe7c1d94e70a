"""Experiment tracking (optional): runs, sweeps, reselections and leaderboards logged to MLflow.

Off by default. ``pip install "medstrat[tracking]"``, then ``python -m experiments tracking=mlflow`` (a
``conf/tracking/`` group wiring `experiments.tracking.callback.MlflowCallback` into ``hydra.callbacks``);
``tracking.uri=...`` picks another store or a tracking server. What is logged is read from the run folder's
files (`experiments.tracking.record`), so this package depends on the run folder format only. Nothing
is imported from here by a run without tracking: MLflow stays out of ``sys.modules`` (docs/experiments.md).
"""

"""The Hydra callback of ``tracking=mlflow``: each finished run is logged to MLflow, a sweep as a parent run.

Wired by configuration only (``conf/tracking/mlflow.yaml`` adds it to ``hydra.callbacks``), so a run without
tracking never instantiates it and never imports MLflow. It runs after the ablation callback at a sweep's end
(Hydra calls ``on_*_end`` in reverse order, and the group's entry is merged before ``config.yaml``'s own), so
the parent run gets the ablation tables and every job's final report.
"""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

if TYPE_CHECKING:
    from experiments.tracking.mlflow_store import TrackingSettings

__all__ = ["MlflowCallback"]


def _settings(config: DictConfig) -> TrackingSettings | None:
    from experiments.tracking.mlflow_store import tracking_settings

    node = OmegaConf.to_container(config.tracking, resolve=True) if "tracking" in config else None
    plain = {str(k): v for k, v in node.items()} if isinstance(node, dict) else None
    return tracking_settings(plain, Path(str(config.hydra.runtime.cwd)))


def _multirun(config: DictConfig) -> bool:
    return str(config.hydra.mode) == "RunMode.MULTIRUN"


class MlflowCallback(Callback):
    """Logs every job's run folder, and a sweep's parent run, to the store of ``tracking.uri``.

    A single run that ends with an exit code of its own (3 incomplete, 4 nothing usable) leaves Hydra before
    ``on_job_end``; it is logged when the process exits instead, with what its folder holds.
    """

    def __init__(self) -> None:
        self._pending: tuple[TrackingSettings, Path] | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Open the sweep's parent run."""
        from experiments.tracking.record import record_sweep_start

        settings = _settings(config)
        if settings is not None:
            overrides = [str(o) for o in config.hydra.overrides.task]
            record_sweep_start(settings, Path(str(config.hydra.sweep.dir)), overrides)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Remember a single run's folder, to log it at exit should the run leave Hydra with an exit code."""
        settings = _settings(config)
        if settings is None or _multirun(config):
            return
        self._pending = (settings, Path(str(config.hydra.runtime.output_dir)))
        atexit.register(self._at_exit)

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        """Log the job's run folder (nested under the sweep's run in a sweep)."""
        from hydra.core.utils import JobStatus

        from experiments.tracking.record import record_run

        self._pending = None
        settings = _settings(config)
        if settings is None:
            return
        sweep_dir = Path(str(config.hydra.sweep.dir)) if _multirun(config) else None
        failed = getattr(job_return, "status", None) == JobStatus.FAILED
        record_run(settings, Path(str(config.hydra.runtime.output_dir)), sweep_dir=sweep_dir, failed=failed)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Attach the sweep's tables, figures and report to the parent run and close it."""
        from experiments.tracking.record import record_sweep_end

        settings = _settings(config)
        if settings is not None:
            record_sweep_end(settings, Path(str(config.hydra.sweep.dir)))

    def _at_exit(self) -> None:
        if self._pending is None:
            return
        from experiments.tracking.record import record_run

        settings, run_dir = self._pending
        self._pending = None
        if (run_dir / "metrics.json").is_file():  # the run finished its outputs, then exited 3 or 4
            record_run(settings, run_dir)

    def __getstate__(self) -> dict[str, Any]:
        # A launcher that pickles the callbacks to its workers (joblib) sends no pending exit hook.
        return {"_pending": None}

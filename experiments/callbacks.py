"""Hydra callbacks: check a run's config before Hydra creates (or rewrites) its folder, and at the end of a
sweep (``-m strategy=s0,s1,s2,s3,s4``) write the ablation and the sweep's report."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from experiments.run.folder import claim_run_folder, claim_sweep_folder

__all__ = ["AblationCallback", "Preflight", "PreflightFailed"]

log = logging.getLogger(__name__)


class AblationCallback(Callback):
    """Runs `experiments.analysis.ablation.write_ablation` on the sweep folder once every job has finished."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Write ``ablation.{md,csv,tex,png}`` into the sweep folder (a failure is logged, never raised)."""
        sweep_dir = Path(str(config.hydra.sweep.dir))
        if config.get("run", {}).get("dry_run"):
            self._forecast(sweep_dir)
            return
        from experiments.analysis.ablation import write_ablation

        try:
            written = write_ablation(sweep_dir)
        except Exception:  # the runs are done and saved; a table bug must not turn the sweep into a failure
            log.exception("could not write the ablation tables for %s", sweep_dir)
            return
        print(f"ablation: {', '.join(str(p) for p in written)}")
        self._banner(sweep_dir)
        self._reports(sweep_dir)

    @staticmethod
    def _forecast(sweep_dir: Path) -> None:
        """A dry-run sweep: one row per job and the total, printed and written (``forecast.json``/``.md``)."""
        from experiments.run.forecast import write_sweep_forecast

        try:
            text = write_sweep_forecast(sweep_dir)
        except Exception:  # each job's forecast.json is written; a table bug must not fail the sweep
            log.exception("could not write the sweep's forecast for %s", sweep_dir)
            return
        print(text)
        print(f"forecast: {sweep_dir / 'forecast.json'} (no model was called)", file=sys.stderr)

    @staticmethod
    def _banner(sweep_dir: Path) -> None:
        """The mechanics-check banner on the console when a run of the sweep used `rules` or `simulated`."""
        from experiments.analysis.ablation import load_runs
        from experiments.stored.mechanics import sweep_banner

        line = sweep_banner(r.agent for r in load_runs(sweep_dir))
        if line is not None:
            print(line, file=sys.stderr)

    @staticmethod
    def _reports(sweep_dir: Path) -> None:
        """The sweep's own report.html, and each job's report again so it shows the sweep's ablation figure
        (the jobs wrote theirs before the figure existed). Failures are logged, never raised."""
        from experiments.analysis.ablation import load_runs
        from experiments.analysis.sweep_report import build_sweep_report
        from experiments.report import write_report

        for run in load_runs(sweep_dir):
            if (run.run_dir / "report.html").is_file():
                write_report(run.run_dir)
        try:
            print(f"sweep report: {build_sweep_report(sweep_dir).resolve().as_uri()}")
        except Exception:  # the runs and tables are saved; a page bug must not fail the sweep
            log.exception("could not write the sweep report for %s", sweep_dir)


class PreflightFailed(BaseException):
    """A single run's config failed `experiments.run.experiment.preflight` before Hydra created the run
    folder.

    Hydra logs and ignores an ``Exception`` raised by a callback, so the failure travels as a
    ``BaseException`` to ``python -m experiments`` (`experiments.__main__.cli`), which prints its one line.

    Args:
        error: The original error (its message is what the user sees).
    """

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _claim(claim: Callable[[], Path | None]) -> Path | None:
    """Run a folder claim (`experiments.run.folder`), its refusal raised as `PreflightFailed`."""
    try:
        return claim()
    except OSError as exc:  # the old run could not be moved aside (permissions, another file system)
        raise PreflightFailed(OSError(f"cannot move the old run aside ({exc})")) from exc
    except Exception as exc:
        raise PreflightFailed(exc) from exc


class Preflight(Callback):
    """Checks a single run's config (resume, names, options) before Hydra creates or rewrites its folder, then
    takes the folder's lock (`experiments.run.lock`); checks a sweep's folder before Hydra writes into it.

    A folder holding another run or sweep is refused (`experiments.run.folder`), a bad option leaves no run
    folder behind, a refused resume does not overwrite the old run's ``.hydra/config.yaml``, and a second run
    into a busy folder is refused before it writes anything. The jobs of a sweep are checked by the run itself
    (each has its own overrides).
    """

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Raise `PreflightFailed` when ``hydra.sweep.dir`` holds another sweep (before ``multirun.yaml``)."""
        sweep_dir = Path(str(config.hydra.sweep.dir))
        overrides = [str(o) for o in config.hydra.overrides.task]
        moved = _claim(lambda: claim_sweep_folder(config.get("run", {}), overrides, sweep_dir))
        if moved is not None:
            print(
                f"note: moved the sweep in {sweep_dir} aside to {moved} (run.replace=true)", file=sys.stderr
            )

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Raise `PreflightFailed` when `experiments.run.experiment.preflight` refuses the config."""
        from experiments.run.lock import abandon_run_folder, hold_run_folder, takeover_note

        run_dir = Path(str(config.hydra.run.dir))
        # Before Hydra writes `.hydra/` and its log: a folder holding another run keeps every byte.
        moved = _claim(lambda: claim_run_folder(config.get("run", {}), run_dir))
        if moved is not None:
            print(f"note: moved the run in {run_dir} aside to {moved} (run.replace=true)", file=sys.stderr)
        if config.get("run", {}).get("dry_run"):
            return  # a forecast builds no agent (needs no key), writes only forecast.json, checks its options
        try:
            # First, before the preflight's imports: a second run into a busy folder is refused at once,
            # before Hydra writes `.hydra/` into it, leaving the first run's files untouched.
            dead = hold_run_folder(run_dir)
        except OSError as exc:  # read-only or missing parent, a file in the way: the user's path, exit 2
            error = OSError(f"hydra.run.dir={run_dir}: cannot create or lock the run folder ({exc})")
            raise PreflightFailed(error) from exc
        except Exception as exc:
            raise PreflightFailed(exc) from exc
        if dead is not None:
            # Printed, not logged: Hydra has not set up the job's logging yet, so a warning would be lost.
            print(takeover_note(run_dir, dead), file=sys.stderr)
        from experiments.run.experiment import preflight

        try:
            preflight(config, run_dir)
        except Exception as exc:
            abandon_run_folder(run_dir)  # a refused config leaves no folder (nor a lock file) behind
            raise PreflightFailed(exc) from exc

"""What is logged for each kind of result: a run, a sweep (its runs' parent), a reselection, a leaderboard.

Each function reads finished folders (`experiments.tracking.run_folder`) and logs them through
`experiments.tracking.mlflow_store`; each is guarded (a failure is one warning line, never an exception).
MLflow is imported only inside these functions, when tracking is on.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from experiments.tracking.mlflow_store import (
    TrackingSettings,
    guarded,
    open_store,
    stored_link,
    tracking_settings,
)
from experiments.tracking.run_folder import (
    artifact_files,
    provenance_tags,
    run_metrics,
    run_params,
    safe_key,
    sweep_artifacts,
)

if TYPE_CHECKING:
    from experiments.tracking.mlflow_store import MlflowStore

__all__ = [
    "record_leaderboard",
    "record_reselection",
    "record_run",
    "record_sweep_end",
    "record_sweep_start",
]

_broken: set[str] = set()
"""Stores that failed in this process: warned about once, then left alone (a sweep of 20 jobs against a
server that is down prints one line, not 21)."""


def _store(settings: TrackingSettings) -> MlflowStore | None:
    if settings.uri in _broken:
        return None
    _broken.add(settings.uri)  # removed below once the store answers; a failure in between keeps it
    store = open_store(settings)
    store.experiment_id()
    _broken.discard(settings.uri)
    return store


def _run_tags(run_dir: Path, kind: str) -> dict[str, str]:
    tags = {**provenance_tags(), "kind": kind, "run_dir": str(run_dir.resolve())}
    overrides = run_dir / ".hydra" / "overrides.yaml"
    if overrides.is_file():
        tags["overrides"] = " ".join(
            line.removeprefix("- ").strip() for line in overrides.read_text(encoding="utf-8").splitlines()
        )
    params = run_params(run_dir)
    for key in ("strategy.name", "agent.name", "agent.model", "selector.name", "validator.profile"):
        if params.get(key) not in (None, "null"):
            tags[key.split(".")[0]] = params[key]
    return tags


def _log_run(
    store: MlflowStore,
    run_dir: Path,
    kind: str,
    *,
    parent_run_id: str | None = None,
    experiment_id: str | None = None,
    tags: Mapping[str, str] | None = None,
    failed: bool = False,
) -> str:
    metrics = run_metrics(run_dir)
    run_id = store.open_run(
        run_dir,
        run_dir.name,
        {**_run_tags(run_dir, kind), **(tags or {})},
        experiment_id=experiment_id,
        parent_run_id=parent_run_id,
        started_s_ago=metrics.get("wall_s", 0.0),
    )
    store.log(run_id, params=run_params(run_dir), metrics=metrics)
    if metrics.get("incomplete"):
        store.log(run_id, tags={"incomplete": "true"})
    store.log_files(run_id, artifact_files(run_dir))
    store.finish(run_id, failed=failed or not metrics)
    return run_id


def record_run(
    settings: TrackingSettings, run_dir: Path, *, sweep_dir: Path | None = None, failed: bool = False
) -> None:
    """Log one ``python -m experiments`` run: its config as params, the metrics, provenance and artifacts.

    Args:
        settings: Where to log.
        run_dir: The run folder (a job of a sweep, or a single run).
        sweep_dir: The sweep folder of a job: its MLflow run is the parent.
        failed: The job raised (the MLflow run is marked FAILED with what the folder holds).
    """
    with guarded(settings):
        store = _store(settings)
        if store is None:
            return
        # None too when the sweep folder was logged to another store (an earlier sweep into it)
        parent = stored_link(sweep_dir, settings.uri) if sweep_dir is not None else None
        _log_run(
            store,
            run_dir,
            "run",
            parent_run_id=parent["run_id"] if parent else None,
            experiment_id=parent["experiment_id"] if parent else None,
            failed=failed,
        )


def record_sweep_start(settings: TrackingSettings, sweep_dir: Path, overrides: Sequence[str]) -> None:
    """Open the sweep's parent run (its jobs nest under it) and log the sweep's command-line overrides.

    Args:
        settings: Where to log.
        sweep_dir: The sweep folder (created here if Hydra has not yet: ``tracking.json`` goes into it).
        overrides: The sweep's overrides (``strategy=s0,s3``, ...): one param each.
    """
    with guarded(settings):
        store = _store(settings)
        if store is None:
            return
        sweep_dir.mkdir(parents=True, exist_ok=True)
        tags = {**provenance_tags(), "kind": "sweep", "run_dir": str(sweep_dir.resolve())}
        tags["overrides"] = " ".join(overrides)
        run_id = store.open_run(sweep_dir, sweep_dir.name, tags)
        params = {}
        for item in overrides:
            key, sep, value = item.partition("=")
            if sep:
                params[safe_key(f"sweep.{key.lstrip('+~')}")] = value
        store.log(run_id, params=params)


def record_sweep_end(settings: TrackingSettings, sweep_dir: Path) -> None:
    """Attach the ablation tables, figures and sweep report to the parent run and close it; each job's
    report again (the ablation callback rewrote them with the sweep's figure).

    Args:
        settings: Where to log.
        sweep_dir: The sweep folder.
    """
    with guarded(settings):
        link = stored_link(sweep_dir, settings.uri)
        store = _store(settings) if link is not None else None
        if store is None or link is None:
            return
        store.log_files(link["run_id"], sweep_artifacts(sweep_dir))
        for job in sorted(p for p in sweep_dir.iterdir() if p.is_dir()):
            child = stored_link(job, settings.uri)
            if child is not None:
                page = [f for f in artifact_files(job) if f.name in ("report.html", "assets")]
                store.log_files(child["run_id"], page)
        store.finish(link["run_id"])


def record_reselection(node: Any, run_dir: Path, source_dir: Path) -> None:
    """Log a reselection (``medstrat reselect``) beside the run it re-ranked.

    The reselection's config inherits the source's ``tracking`` node, so a logged run's reselections are
    logged too (``tracking.backend=none`` turns that off; ``tracking.backend=mlflow`` turns it on for a
    source that was not logged). When the source was logged (its ``tracking.json``), the reselection goes
    to the same store and experiment, tagged ``source_run`` = the source's MLflow run id.

    Args:
        node: The reselection config's ``tracking`` node (None or ``backend: none``: nothing is logged, and
            MLflow is not imported).
        run_dir: The reselection's run folder.
        source_dir: The source run folder.
    """
    if isinstance(node, DictConfig):
        node = OmegaConf.to_container(node, resolve=True)
    settings = tracking_settings(node if isinstance(node, Mapping) else None, Path.cwd())
    if settings is None:
        return
    source = stored_link(source_dir)
    if source is not None and source.get("tracking_uri"):
        settings = TrackingSettings(source["tracking_uri"], settings.experiment, settings.timeout_s)
    with guarded(settings):
        store = _store(settings)
        if store is None:
            return
        tags = {"source_run_dir": str(source_dir.resolve())}
        if source is not None:
            tags["source_run"] = source["run_id"]
        _log_run(
            store,
            run_dir,
            "reselect",
            experiment_id=source["experiment_id"] if source else None,
            tags=tags,
        )


def _leaderboard_metrics(table: Path) -> dict[str, float]:
    """``<validator>/<selector>/<column>`` for every numeric cell of ``selectors.csv``."""
    out: dict[str, float] = {}
    with table.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            where = f"{row.get('validator', '')}/{row.get('selector', '')}"
            for column, cell in row.items():
                if column in ("validator", "selector") or cell in (None, ""):
                    continue
                try:
                    out[safe_key(f"{where}/{column}")] = float(cell)
                except ValueError:
                    continue
    return out


def record_leaderboard(out_dir: Path, runs: Sequence[Path], written: Sequence[Path]) -> None:
    """Log a selector leaderboard (``medstrat leaderboard``) when its source runs were logged.

    The leaderboard goes to the store and experiment of the first logged source run, tagged ``source_run``
    (that run's MLflow id) and ``source_runs`` (every logged source's); each row of ``selectors.csv`` is
    a metric ``<validator>/<selector>/<column>``. Sources that were never logged: nothing happens (and
    MLflow is not imported).

    Args:
        out_dir: The leaderboard's folder (``tracking.json`` is written into it).
        runs: The source run folders.
        written: The files the leaderboard wrote (logged as artifacts).
    """
    links = [link for link in (stored_link(r) for r in runs) if link is not None]
    if not links:
        return
    first = links[0]
    settings = TrackingSettings(first["tracking_uri"])
    with guarded(settings):
        store = _store(settings)
        if store is None:
            return
        tags = {
            **provenance_tags(),
            "kind": "leaderboard",
            "run_dir": str(out_dir.resolve()),
            "source_run": first["run_id"],
            "source_runs": ",".join(link["run_id"] for link in links),
            "source_run_dirs": ",".join(str(r.resolve()) for r in runs),
        }
        run_id = store.open_run(
            out_dir, f"leaderboard_{out_dir.parent.name}", tags, experiment_id=first["experiment_id"]
        )
        table = out_dir / "selectors.csv"
        store.log(run_id, metrics=_leaderboard_metrics(table) if table.is_file() else {})
        store.log_files(run_id, [p for p in written if p.is_file()])
        store.finish(run_id)

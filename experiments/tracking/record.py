"""What is logged for each kind of result: a run, a sweep (its runs' parent), a reselection, a leaderboard.

What is logged is read from the run folder's files only (never from the run's internals): the run folder
format is the contract. ``config.json`` (the composed config), ``metrics.json`` / ``metrics_strict.json`` (the
eleven metrics per profile, macro and per dataset), ``usage.json`` (tokens, calls, dollars, cache hits, failed
datasets), ``samples.jsonl`` (per-sample decisions), ``roles.json`` (per-agent win rates), ``run.json`` (wall
time, reselection source) become plain dicts here; `experiments.tracking.mlflow_store` turns them into its
entities. Each ``record_*`` function is guarded (a failure is one warning line, never an exception). MLflow is
imported only inside these functions, when tracking is on.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from experiments.stored.run_folder import METRICS, ROLES, RUN_INFO, USAGE, json_or_empty, read_samples
from experiments.tracking.mlflow_store import (
    TrackingSettings,
    guarded,
    open_store,
    stored_link,
    tracking_settings,
)

if TYPE_CHECKING:
    from experiments.tracking.mlflow_store import MlflowStore

__all__ = [
    "SWEEP_ARTIFACTS",
    "artifact_files",
    "provenance_tags",
    "record_leaderboard",
    "record_reselection",
    "record_run",
    "record_sweep_end",
    "record_sweep_start",
    "run_metrics",
    "run_params",
    "safe_key",
    "sweep_artifacts",
]

PROFILE_FILES = METRICS
"""The two scorer profiles and the file each writes (`experiments.stored.run_folder`)."""

RUN_ARTIFACTS = (
    "report.html",
    "metrics.json",
    "metrics_strict.json",
    "usage.json",
    "run.json",
    "config.json",
    "roles.md",
    "roles.json",
    "forecast.json",
    "forecast_vs_actual.json",
)
"""A run's files kept beside its numbers (``samples.jsonl`` and the candidates stay in the folder)."""

SWEEP_ARTIFACTS = (
    "ablation.md",
    "ablation.csv",
    "ablation.tex",
    "ablation.png",
    "ablation_cost.png",
    "ablation_thresholds.csv",
    "ablation_budget.csv",
    "passk.csv",
    "passk.png",
    "report.html",
    "forecast.json",
    "forecast.md",
)
"""The sweep folder's tables, figures and page (``experiments.callbacks.AblationCallback``)."""

USAGE_METRICS = {
    "tokens": "total_tokens",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "calls": "calls",
    "retries": "retries",
    "cache_hits": "cache_hits",
    "usd": "cost_usd",
}
"""Metric name -> key of ``usage.json``'s ``total``."""

_VERSIONED = ("medstrat", "mlflow-skinny", "mlflow", "litellm", "hydra-core", "numpy", "pandas", "pydicom")
"""Packages whose versions are tagged on every run (the ones that change what a run computes or logs)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. :/]")
"""Characters MLflow refuses in metric and param names (its docs: alphanumerics, ``_ - . space : /``)."""


def _read_json(path: Path) -> Any:
    """The JSON document at ``path``, or None when the run did not write it (the one reader decides how)."""
    return json_or_empty(path) or None


def safe_key(name: str) -> str:
    """``name`` with the characters MLflow refuses in a key replaced by ``_`` (agent labels may hold any)."""
    return _UNSAFE.sub("_", name)


def _flatten(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping) and value:
        for key, sub in value.items():
            yield from _flatten(sub, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


def run_params(run_dir: Path) -> dict[str, str]:
    """The run's composed config (``run.json``, else ``config.json``) flattened to dotted keys, as strings.

    Lists and empty mappings are kept as JSON (``benchmark.datasets=["a", "b"]``), None as ``"null"``: a
    researcher filters on exactly what the command line said.

    Args:
        run_dir: The run folder.

    Returns:
        ``{"strategy.name": "s3", "run.seed": "0", ...}``; empty when the folder holds no config.
    """
    # run.json first: a reselection records there the agent that made its candidates (config.json names
    # the replay stand-in); config.json is the config of a run that stopped before writing run.json.
    config = (_read_json(run_dir / RUN_INFO) or {}).get("config") or _read_json(run_dir / "config.json")
    if not isinstance(config, Mapping):
        return {}
    config = {k: v for k, v in config.items() if k != "tracking"}  # where it is logged is not what it ran
    out: dict[str, str] = {}
    for key, value in _flatten(config, ""):
        out[safe_key(key)] = value if isinstance(value, str) else json.dumps(value)
    return out


def _numbers(prefix: str, values: Any) -> dict[str, float]:
    """``<prefix>/<key>`` for every number of a mapping (None: nothing)."""
    numbers = (values or {}).items()
    return {safe_key(f"{prefix}/{k}"): float(v) for k, v in numbers if isinstance(v, int | float)}


def _profile_metrics(profile: str, doc: Mapping[str, Any]) -> dict[str, float]:
    out = _numbers(profile, doc.get("macro"))
    for dataset, values in (doc.get("datasets") or {}).items():
        out.update(_numbers(f"{profile}/{dataset}", values))
    return out


def _missing_samples(run_dir: Path) -> int:
    """Samples that some candidate did not reach because a limit or the budget stopped it."""
    return sum(1 for row in read_samples(run_dir) if row.get("missing_in_candidates"))


def run_metrics(run_dir: Path) -> dict[str, float]:
    """Every number a researcher compares runs on, from the run folder.

    ``official/E2E`` … ``strict/E2E`` (the eleven metrics and any registered extra, macro over datasets),
    ``official/<dataset>/E2E`` per dataset, the usage totals (``tokens``, ``calls``, ``usd``, ``cache_hits``,
    …), ``selector_fallbacks``, ``incomplete`` (0/1), ``failed_datasets``, ``samples_missing_in_candidates``,
    ``wall_s``, and per agent of a pool ``roles/<agent>/win_rate`` (with candidates, tokens, dollars).

    Args:
        run_dir: The run folder.

    Returns:
        Metric name -> value; empty for a folder the run never finished.
    """
    out: dict[str, float] = {}
    docs = {p: _read_json(run_dir / f) for p, f in PROFILE_FILES.items()}
    for profile, doc in docs.items():
        if isinstance(doc, Mapping):
            out.update(_profile_metrics(profile, doc))
    official = docs["official"] if isinstance(docs["official"], Mapping) else {}
    if official:
        out["selector_fallbacks"] = float((official.get("selector_fallbacks") or {}).get("total", 0))
        out["incomplete"] = float(bool(official.get("incomplete")))
        out["samples_missing_in_candidates"] = float(_missing_samples(run_dir))
    usage = _read_json(run_dir / USAGE)
    if isinstance(usage, Mapping):
        total = usage.get("total") or {}
        for name, key in USAGE_METRICS.items():
            if isinstance(total.get(key), int | float):
                out[name] = float(total[key])
        out["candidates"] = float(usage.get("candidates") or 0)
        out["failed_datasets"] = float(len(usage.get("errors") or {}))
        out["budget_hit"] = float(bool((usage.get("budget") or {}).get("hit")))
    out.update(_forecast_metrics(run_dir))
    info = _read_json(run_dir / RUN_INFO)
    if isinstance(info, Mapping) and isinstance(info.get("wall_s"), int | float):
        out["wall_s"] = float(info["wall_s"])
    roles = _read_json(run_dir / ROLES)
    if isinstance(roles, Mapping):
        for label, row in (roles.get("agents") or {}).items():
            out.update(_numbers(f"roles/{label}", row))
        out.update(_numbers("roles/judge", roles.get("judge")))
    return out


def _forecast_metrics(run_dir: Path) -> dict[str, float]:
    """``forecast/<key>_<low|expected|high>`` from ``forecast.json`` (a dry run's only numbers), and
    ``forecast/actual_over_expected_<key>`` from ``forecast_vs_actual.json`` after a run with a forecast."""
    out: dict[str, float] = {}
    forecast = _read_json(run_dir / "forecast.json")
    total = forecast.get("total") if isinstance(forecast, Mapping) else None
    for key in ("calls", "tokens", "usd"):
        span = (total or {}).get(key)
        if isinstance(span, Mapping):
            out.update(
                {f"forecast/{key}_{b}": float(span[b]) for b in ("low", "expected", "high") if b in span}
            )
    versus = _read_json(run_dir / "forecast_vs_actual.json")
    if isinstance(versus, Mapping):
        for key, row in versus.items():
            ratio = row.get("actual_over_expected") if isinstance(row, Mapping) else None
            if isinstance(ratio, int | float):
                out[f"forecast/actual_over_expected_{key}"] = float(ratio)
    return out


def artifact_files(run_dir: Path, names: Sequence[str] = RUN_ARTIFACTS) -> list[Path]:
    """The run's report, metrics files and role table that exist, with the report's ``assets/`` folder (the
    page links its style sheet, script and thumbnails relative to itself)."""
    files = [run_dir / name for name in names if (run_dir / name).is_file()]
    if (run_dir / "report.html").is_file() and (run_dir / "assets").is_dir():
        files.append(run_dir / "assets")
    return files


def sweep_artifacts(sweep_dir: Path) -> list[Path]:
    """The ablation tables, figures and sweep report that exist in ``sweep_dir`` (with the page's assets)."""
    return artifact_files(sweep_dir, SWEEP_ARTIFACTS)


def _git_commit(folder: Path) -> str | None:
    """The commit of the checkout holding ``folder``, or None outside a git checkout (an installed wheel)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def provenance_tags() -> dict[str, str]:
    """The code a run ran: the git commit of this checkout (MLflow's ``mlflow.source.git.commit``) and the
    versions of Python and of the packages that decide what a run computes (``version.<package>``)."""
    tags = {"version.python": sys.version.split()[0]}
    for package in _VERSIONED:
        try:
            tags[f"version.{package}"] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    commit = _git_commit(Path(__file__).resolve().parent)
    if commit is not None:
        tags["mlflow.source.git.commit"] = commit
    return tags


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

"""What a tracker records about a run, read from the run folder's files only (never from the run's internals).

The run folder format is the contract: ``config.json`` (the composed config), ``metrics.json`` /
``metrics_strict.json`` (the eleven metrics per profile, macro and per dataset), ``usage.json`` (tokens,
calls, dollars, cache hits, failed datasets), ``samples.jsonl`` (per-sample decisions), ``roles.json``
(per-agent win rates), ``run.json`` (wall time, reselection source). Nothing here imports a tracker: the
MLflow side (`experiments.tracking.mlflow_store`) turns these plain dicts into its entities.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from experiments.stored.run_folder import METRICS, ROLES, RUN_INFO, USAGE, json_or_empty, read_samples

__all__ = [
    "SWEEP_ARTIFACTS",
    "artifact_files",
    "provenance_tags",
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

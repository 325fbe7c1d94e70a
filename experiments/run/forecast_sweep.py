"""A dry-run sweep's forecast (``-m ... run.dry_run=true``): each job's ``forecast.json`` as one row, and the
sweep's total, printed at the sweep's end (`experiments.callbacks.AblationCallback`) and written to the sweep
folder as ``forecast.json`` and ``forecast.md``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from core.atomic import atomic_write_json, atomic_write_text
from experiments.run.forecast import FORECAST_FILE, show_count, show_span, show_usd

__all__ = ["sweep_forecast", "write_sweep_forecast"]


def _overrides(job: Path) -> list[str]:
    """The job's command-line overrides (Hydra's ``.hydra/overrides.yaml``)."""
    try:
        found = yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return []
    return [str(o) for o in found or [] if not str(o).startswith(("run.dry_run", "hydra."))]


def sweep_forecast(sweep_dir: Path) -> dict[str, Any]:
    """Every job's forecast total and the sweep's total.

    Args:
        sweep_dir: The sweep folder (one sub-folder per job, each with its ``forecast.json``).

    Returns:
        ``{"jobs": {folder: {"overrides", "total", "over_budget"}}, "total", "notes", "shared_overrides"}``
        (a job's ``overrides`` leave out those every job has).
    """
    jobs: dict[str, Any] = {}
    notes: list[str] = []
    paths = sorted(sweep_dir.glob(f"*/{FORECAST_FILE}"), key=lambda p: _job_number(p.parent.name))
    overrides = {p.parent.name: _overrides(p.parent) for p in paths}
    shared = set.intersection(*(set(o) for o in overrides.values())) if overrides else set()
    for path in paths:
        doc = json.loads(path.read_text(encoding="utf-8"))
        jobs[path.parent.name] = {
            "overrides": " ".join(o for o in overrides[path.parent.name] if o not in shared),
            "total": doc["total"],
            "over_budget": doc["budget"].get("over"),
        }
        notes += [n for n in doc.get("notes", []) if n not in notes]
    totals = [j["total"] for j in jobs.values()]
    total: dict[str, Any] = {}
    for key in ("calls", "prompt_tokens", "completion_tokens", "tokens", "conversations"):
        total[key] = {b: sum(t[key][b] for t in totals) for b in ("low", "expected", "high")}
    usd = [t.get("usd") for t in totals]
    total["usd"] = (
        None
        if not usd or any(u is None for u in usd)
        else {b: sum(float(u[b]) for u in usd if u is not None) for b in ("low", "expected", "high")}
    )
    total["samples"] = sum(t["samples"] for t in totals)
    total["candidates"] = {b: sum(t["candidates"][b] for t in totals) for b in ("low", "high")}
    shown = [o for o in next(iter(overrides.values()), []) if o in shared]
    return {"jobs": jobs, "total": total, "notes": notes, "shared_overrides": " ".join(shown)}


def _job_number(name: str) -> int:
    head = name.split("_", 1)[0]
    return int(head) if head.isdigit() else 10**9


def write_sweep_forecast(sweep_dir: Path) -> str:
    """Write the sweep's ``forecast.json`` and ``forecast.md``; return the table that was written."""
    doc = sweep_forecast(sweep_dir)
    width = max([len("job"), *(len(f"{k} {j['overrides']}") for k, j in doc["jobs"].items())])
    head = f"{'job':<{width}} {'samples':>7} {'cand':>5} {'calls':>18} {'tokens':>22} {'USD':>26}"
    shared = f"; every job: {doc['shared_overrides']}" if doc["shared_overrides"] else ""
    lines = [f"forecast of the sweep {sweep_dir} ({len(doc['jobs'])} jobs{shared})", head]
    for name, job in doc["jobs"].items():
        lines.append(_row(f"{name} {job['overrides']}", job["total"], width))
    lines.append(_row("total", doc["total"], width))
    lines += [f"{name}: {job['over_budget']}" for name, job in doc["jobs"].items() if job["over_budget"]]
    lines += [f"note: {n}" for n in doc["notes"]]
    text = "\n".join(lines)
    atomic_write_json(sweep_dir / FORECAST_FILE, doc, durable=False)
    atomic_write_text(sweep_dir / "forecast.md", "```\n" + text + "\n```\n", durable=False)
    return text


def _row(label: str, t: dict[str, Any], width: int) -> str:
    cand = t["candidates"]
    cands = str(cand["high"]) if cand["low"] == cand["high"] else f"{cand['low']}-{cand['high']}"
    return (
        f"{label:<{width}} {t['samples']:>7} {cands:>5} {show_span(t['calls'], show_count):>18} "
        f"{show_span(t['tokens'], show_count):>22} {show_span(t.get('usd'), show_usd):>26}"
    )

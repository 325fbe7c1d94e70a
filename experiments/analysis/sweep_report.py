"""The report of a sweep folder (``python -m experiments -m ...``): the ablation tables and figures, a link to
each job's own report, and what each strategy kept for the same sample, side by side.

    medstrat report MULTIRUN_DIR

Read-only on the jobs; it writes ``report.html`` and ``assets/`` into the sweep folder (and the ablation files
when the sweep has none yet).
"""

from __future__ import annotations

import html
import logging
import math
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from agents.base import OUTPUT_SUBDIR
from benchmark.fields import TASK_TYPE
from benchmark.score.constants import METRIC_NAMES
from core.atomic import atomic_write_text
from experiments.analysis.ablation import COST_COLUMNS, STAT_COLUMNS, write_ablation
from experiments.publish.stats import CI_METHOD, TEST_METHOD
from experiments.report.assets import CSS
from experiments.report.build import REPORT_NAME
from experiments.report.roles import sweep_roles_html
from experiments.report.thumbs import Thumbnailer
from experiments.stored.mechanics import sweep_banner
from experiments.stored.run_folder import ROLES, read_json
from experiments.stored.sweep import RunData, groups, load_runs
from strategies.mechanics import find_image, get_path, read_annotation

__all__ = ["build_sweep_report", "is_sweep"]

log = logging.getLogger(__name__)

e = html.escape

FIGURES = ("ablation.png", "ablation_cost.png")

SWEEP_CSS = """
img.fig { display: block; max-width: 100%; height: auto; margin: 6px 0 14px; }
table.side td { text-align: left; }
table.side figure { margin: 0; }
table.side figure img, table.side .noimg { width: 120px; height: 120px; }
table.side td.pass { background: #ecfdf3; } table.side td.fail { background: #fef3f2; }
body.disagree-only tr.agree { display: none; }
.wide { overflow-x: auto; max-width: 100%; }
"""

SWEEP_JS = """
document.getElementById('only-disagree').addEventListener('change', function (ev) {
  document.body.classList.toggle('disagree-only', ev.target.checked);
  document.body.dataset.shown = String(document.querySelectorAll('tr.sample:not([hidden])').length -
    (ev.target.checked ? document.querySelectorAll('tr.sample.agree').length : 0));
});
"""


def is_sweep(folder: Path) -> bool:
    """A folder without its own ``metrics.json`` whose sub-folders hold runs (or with ``multirun.yaml``)."""
    if (folder / "metrics.json").is_file():
        return False
    if (folder / "multirun.yaml").is_file():
        return True
    return (
        any((p / "metrics.json").is_file() for p in folder.iterdir() if p.is_dir())
        if folder.is_dir()
        else False
    )


def _cell(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return '<td class="muted">n/a</td>'
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, (int, float)):
        return f"<td>{value:.{digits}f}</td>" if isinstance(value, float) else f"<td>{value}</td>"
    return f'<td class="l">{e(str(value))}</td>'


def _table(frame: pd.DataFrame, columns: list[str], table_id: str) -> str:
    cols = [c for c in columns if c in frame.columns]
    head = "".join(f"<th>{e(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(_cell(None if pd.isna(row[c]) else row[c]) for c in cols) + "</tr>"
        for _, row in frame.iterrows()
    )
    return f'<div class="wide"><table id="{table_id}"><tr>{head}</tr>{body}</table></div>'


def _rel(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target, start)).as_posix()


def _jobs(sweep: Path, runs: list[RunData]) -> str:
    rows = []
    for run in runs:
        report = run.run_dir / REPORT_NAME
        link = (
            f'<a href="{e(_rel(report, sweep))}">{e(run.run_dir.name)}</a>'
            if report.is_file()
            else f'{e(run.run_dir.name)} <span class="muted">(no report.html)</span>'
        )
        e2e = run.metrics.get("macro", {}).get("E2E")
        flag = ' <span class="bad">INCOMPLETE</span>' if run.incomplete else ""
        rows.append(
            f'<tr><td class="l">{e(run.label)}</td>{_cell(run.seed)}'
            f'<td class="l">{link}{flag}</td>{_cell(e2e)}</tr>'
        )
    head = "<tr><th>strategy</th><th>seed</th><th>run</th><th>E2E</th></tr>"
    return f'<table id="jobs">{head}{"".join(rows)}</table>'


def _kept(run: RunData, dataset: str, index: int, thumb: Thumbnailer) -> dict[str, Any]:
    out = run.run_dir / "selected" / dataset / OUTPUT_SUBDIR
    ann = read_annotation(out, index)
    image = find_image(out, index, ann) if ann is not None else None
    return {
        "thumb": thumb(image),
        "task": get_path(ann, TASK_TYPE) if ann else None,
        "label": get_path(ann, "tasks.classification.label") if ann else None,
        "present": ann is not None,
    }


def _side_by_side(sweep: Path, runs: list[RunData], thumb: Thumbnailer) -> tuple[str, int]:
    """One row per (dataset, index), one column per strategy (its lowest seed)."""
    firsts = [members[0] for members in groups(runs).values()]
    rows_by_key: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for run in firsts:
        for row in run.samples:
            key = (str(row["dataset"]), int(row["index"]))
            rows_by_key.setdefault(key, {})[run.label] = row
    head = "<th>sample</th>" + "".join(
        f"<th>{e(r.label)}{'' if r.seed is None else f' · seed {r.seed}'}</th>" for r in firsts
    )
    body = []
    for (dataset, index), by_label in sorted(rows_by_key.items()):
        cells = []
        verdicts = set()
        for run in firsts:
            kept_row = by_label.get(run.label)
            if kept_row is None:
                cells.append('<td class="muted">not run</td>')
                continue
            row = kept_row
            scored = (row.get("scores") or {}).get("official") or {}
            passed = bool(scored.get("e2e"))
            verdicts.add(passed)
            kept = _kept(run, dataset, index, thumb)
            decision = row.get("decision") or {}
            img = (
                f'<img src="{e(kept["thumb"])}" alt="{e(run.label)} {e(dataset)} #{index}" loading="lazy">'
                if kept["thumb"]
                else '<div class="noimg">no image</div>'
            )
            cells.append(
                f'<td class="{"pass" if passed else "fail"}"><figure>{img}</figure>'
                f"E2E {'pass' if passed else 'fail'} · candidate {e(str(decision.get('candidate')))}"
                f" · validator {float(row.get('validator_total') or 0.0):.3f}<br>"
                f'<span class="muted">{e(str(kept["task"]))}'
                f"{'' if kept['label'] in (None, '') else ' · ' + e(str(kept['label']))}</span></td>"
            )
        agree = "agree" if len(verdicts) <= 1 else "disagree"
        body.append(
            f'<tr class="sample {agree}"><td class="l">{e(dataset)}<br>#{index}</td>{"".join(cells)}</tr>'
        )
    table = f'<div class="wide"><table class="side" id="side"><tr>{head}</tr>{"".join(body)}</table></div>'
    return table, len(body)


def build_sweep_report(sweep_dir: str | Path) -> Path:
    """Write ``report.html`` and ``assets/`` for a sweep folder.

    Args:
        sweep_dir: The multirun folder.

    Returns:
        The path of ``report.html``.

    Raises:
        FileNotFoundError: No run folder under ``sweep_dir``.
    """
    sweep = Path(sweep_dir)
    runs = load_runs(sweep) if sweep.is_dir() else []
    if not runs:
        raise FileNotFoundError(f"no run folders (with metrics.json) under {sweep_dir}")
    if not (sweep / "ablation.csv").is_file() or not all((sweep / f).is_file() for f in FIGURES):
        write_ablation(sweep)
    summary = pd.read_csv(sweep / "ablation.csv")
    assets = sweep / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    atomic_write_text(assets / "report.css", CSS + SWEEP_CSS)
    atomic_write_text(assets / "sweep.js", SWEEP_JS)
    figures = []
    for name in FIGURES:
        if (sweep / name).is_file():
            shutil.copyfile(sweep / name, assets / name)
            figures.append(f'<img class="fig" src="assets/{name}" alt="{name}">')
    thumb = Thumbnailer(assets)
    side, n = _side_by_side(sweep, runs, thumb)
    n_seeds = max(len(m) for m in groups(runs).values())
    mechanics = sweep_banner(r.agent for r in runs)
    notes = f'<p class="note">{e(mechanics)}</p>' if mechanics is not None else ""
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>sweep · {e(sweep.name)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="assets/report.css"></head>'
        f'<body data-shown="{n}"><header><h1>Sweep · {e(sweep.name)}</h1>'
        f'<p class="muted">{e(str(sweep))} · {len(runs)} runs · up to {n_seeds} seeds per strategy</p>'
        f"{notes}</header>"
        "<main><h2>Ablation (official profile, macro over datasets; mean over seeds)</h2>"
        + _table(summary, ["strategy", "seeds", *METRIC_NAMES, "E2E_sd"], "ablation")
        + "<h2>Cost per run (mean over seeds)</h2>"
        + _table(summary, ["strategy", *COST_COLUMNS, "E2E/USD"], "cost")
        + "<h2>E2E with datasets as the unit (bootstrap CI, paired sign-flip test vs S0)</h2>"
        + f'<p class="muted">{e(CI_METHOD)} (E2E_lo, E2E_hi; dE2E_lo, dE2E_hi for the difference vs S0); '
        f"{e(TEST_METHOD)}.</p>"
        + _table(summary, list(STAT_COLUMNS), "stats")
        + sweep_roles_html(
            [
                (
                    r.label + ("" if r.seed is None else f" · seed {r.seed}"),
                    read_json(r.run_dir / ROLES),
                )
                for r in runs
            ]
        )
        + "<h2>Figures</h2>"
        + f'<p class="muted">Bars and points: macro mean over datasets (mean over seeds); error bars: '
        f"{e(CI_METHOD)}; every y-axis from 0.</p>"
        + "".join(figures)
        + "<h2>Runs</h2>"
        + _jobs(sweep, runs)
        + "<h2>Per sample: what each strategy kept</h2>"
        + '<p><label><input type="checkbox" id="only-disagree"> only samples where the strategies '
        "disagree on E2E</label></p>"
        + side
        + '</main><script src="assets/sweep.js"></script></body></html>\n'
    )
    target = atomic_write_text(sweep / REPORT_NAME, page)
    log.info("sweep report: %s (%d samples, %d thumbnails)", target, n, thumb.written)
    return target

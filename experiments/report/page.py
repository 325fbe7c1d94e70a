"""HTML for the report: metrics tables, the per-dataset table, the filter bar, one section per sample."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable
from typing import Any

from benchmark.score.constants import METRIC_NAMES
from experiments.report.collect import CandidateView, DatasetView, RunView, SampleRow
from experiments.report.jsondiff import differing_paths, json_html
from experiments.report.roles import roles_html

__all__ = ["FAIL_KEYS", "failing", "render_page"]

Thumb = Callable[[Any], "str | None"]

# Per-sample scorer values (samples.jsonl) → the filter key shown to the user.
FAIL_KEYS = {
    "source_score": "source",
    "schema_valid_score": "schema",
    "semantic_score": "semantic",
    "content_fidelity_score": "content",
    "pair_valid": "pair",
    "e2e": "e2e",
}

e = html.escape


def failing(sample: SampleRow) -> list[str]:
    """Filter keys of the metrics this sample fails under the official profile (plus ``validator``)."""
    out = []
    values = sample.scores.get("official") or {}
    for key, name in FAIL_KEYS.items():
        value = values.get(key)
        if value is False or (
            isinstance(value, (int, float)) and not isinstance(value, bool) and value < 1.0
        ):
            out.append(name)
    if not values:
        out.append("unscored")
    if sample.validator_total is not None and sample.validator_total < 1.0 - 1e-9:
        out.append("validator")
    return out


def _num(value: Any) -> str:
    if isinstance(value, bool):
        return '<td class="ok">yes</td>' if value else '<td class="bad">no</td>'
    if isinstance(value, (int, float)):
        cls = ' class="bad"' if value < 1.0 - 1e-9 else ""
        return f"<td{cls}>{value:.4f}</td>"
    return '<td class="muted">n/a</td>'


def _metrics_table(run: RunView) -> str:
    if not run.metrics:
        return '<p class="muted">No metrics (the run did not reach scoring).</p>'
    head = "".join(f"<th>{m}</th>" for m in METRIC_NAMES)
    rows = []
    for profile, doc in run.metrics.items():
        macro = doc.get("macro") or {}
        rows.append(
            f"<tr><td>{e(profile)}</td>" + "".join(_num(macro.get(m)) for m in METRIC_NAMES) + "</tr>"
        )
    return f'<table id="metrics"><tr><th>profile</th>{head}</tr>{"".join(rows)}</table>'


def _miss_table(run: RunView) -> str:
    # Simulated candidates only (metrics.json "miss_rates", docs/strategies.md): one row per mistake type.
    doc = next((d["miss_rates"] for d in run.metrics.values() if d.get("miss_rates")), None)
    if not doc or not doc.get("selectors"):
        return ""
    labels = list(doc["selectors"])
    kinds = sorted({k for counts in doc["selectors"].values() for k in counts})
    head = "".join(f"<th>{e(label)}</th>" for label in labels)
    rows = []
    for kind in kinds:
        info = (doc.get("types") or {}).get(kind, {})
        cells = []
        for label in labels:
            cell = doc["selectors"][label].get(kind)
            if cell is None:
                cells.append('<td class="muted">—</td>')
                continue
            cls = ' class="bad"' if cell["misses"] else ""
            cells.append(f"<td{cls}>{cell['misses']}/{cell['opportunities']}</td>")
        rows.append(
            f"<tr><td>{e(kind)}</td><td>{e(str(info.get('category', '')))}</td>"
            f"<td>{'yes' if info.get('raw_evidence') else 'no'}</td>{''.join(cells)}</tr>"
        )
    return (
        '<h2>Miss rate per mistake type (SIMULATION)</h2><p class="muted">misses/opportunities: the '
        "selection kept the mistake although a candidate without it existed</p>"
        f'<table id="miss-rates"><tr><th>mistake</th><th>category</th><th>raw evidence</th>{head}</tr>'
        f"{''.join(rows)}</table>"
    )


def _dataset_table(datasets: Iterable[DatasetView]) -> str:
    rows = []
    for d in datasets:
        tasks = sorted({s.task for s in d.samples}) or ["?"]
        off, strict = d.metrics.get("official", {}), d.metrics.get("strict", {})
        n_pass = sum(1 for s in d.samples if (s.scores.get("official") or {}).get("e2e"))
        error = f'<span class="bad">{e(d.error)}</span>' if d.error else ""
        rows.append(
            f'<tr><td><a href="#" data-goto="{e(d.name)}">{e(d.name)}</a></td>'
            f'<td class="l">{e(", ".join(tasks))}</td>'
            f"<td>{len(d.samples)}</td><td>{n_pass}</td>"
            + "".join(_num(off.get(m)) for m in ("SV", "SC", "CF", "MSC", "E2E"))
            + _num(strict.get("E2E"))
            + f"<td>{int(d.usage.get('total_tokens', 0) or 0)}</td>"
            + f"<td>{float(d.usage.get('cost_usd', 0) or 0):.4f}</td>"
            f'<td class="l">{error}</td></tr>'
        )
    head = (
        "<tr><th>dataset</th><th class='l'>task</th><th>samples</th><th>E2E pass</th><th>SV</th><th>SC</th>"
        "<th>CF</th><th>MSC</th><th>E2E</th><th>E2E strict</th><th>tokens</th><th>USD</th>"
        "<th class='l'>error</th></tr>"
    )
    return f'<table id="datasets">{head}{"".join(rows)}</table>'


def _options(values: Iterable[str], label: str) -> str:
    opts = [f'<option value="">all {label}</option>'] + [
        f'<option value="{e(v)}">{e(v)}</option>' for v in values
    ]
    return "".join(opts)


def _filters(run: RunView) -> str:
    datasets = [d.name for d in run.datasets]
    tasks = sorted({s.task for d in run.datasets for s in d.samples})
    fails = ["any", *FAIL_KEYS.values(), "validator", "unscored"]
    return (
        '<nav id="filters">'
        f'<label>dataset <select id="f-dataset">{_options(datasets, "datasets")}</select></label>'
        f'<label>task <select id="f-task">{_options(tasks, "tasks")}</select></label>'
        f'<label>failing <select id="f-fail">{_options(fails, "samples")}</select></label>'
        '<span id="shown" class="muted"></span>'
        '<span class="muted"><kbd>j</kbd>/<kbd>k</kbd> or arrows: next/previous sample</span></nav>'
    )


def _figure(view: CandidateView, thumb: Thumb, caption: str, cls: str) -> str:
    src = thumb(view.image)
    if src:
        img = f'<img src="{e(src)}" loading="lazy" alt="{e(caption)}">'
    else:
        why = "no image written" if view.image is None else "image cannot be decoded"
        img = f'<div class="noimg">{why}</div>'
    title = f' title="{e(view.status)}"' if view.status else ""
    return f'<figure class="{cls}"{title}>{img}<figcaption>{e(caption)}</figcaption></figure>'


def _gallery(sample: SampleRow, thumb: Thumb) -> str:
    chosen = str(sample.decision.get("candidate", ""))
    parts = [_figure(sample.selected, thumb, "selected", "sel")]
    for cand in sample.candidates:
        cls = "chosen" if cand.key == chosen else ""
        label = f"candidate {cand.key}" + (" ✓" if cls else "")
        if cand.status and not cand.status.startswith("ok"):
            label += f" ({cand.status.split(':')[0]})"
        parts.append(_figure(cand, thumb, label, cls))
    return f'<div class="gallery">{"".join(parts)}</div>'


def _scores(sample: SampleRow) -> str:
    if not sample.scores:
        return '<p class="muted">not scored</p>'
    head = "".join(f"<th>{e(name)}</th>" for name in FAIL_KEYS.values())
    rows = [
        f"<tr><td>{e(profile)}</td>" + "".join(_num((values or {}).get(k)) for k in FAIL_KEYS) + "</tr>"
        for profile, values in sample.scores.items()
    ]
    return f'<table class="scores"><tr><th>scorer</th>{head}</tr>{"".join(rows)}</table>'


def _checks(sample: SampleRow) -> str:
    if not sample.checks:
        return '<p class="muted">no validator results</p>'
    failed = [c for c in sample.checks if c["score"] < 1.0 - 1e-9]
    rows = "".join(
        f"<tr><td>{e(c['name'])}</td>{_num(c['score'])}<td>{c['weight']:.2f}</td>"
        f'<td class="l">{e(c["message"])}</td></tr>'
        for c in sorted(sample.checks, key=lambda c: c["score"])
    )
    total = f"{sample.validator_total:.4f}" if sample.validator_total is not None else "n/a"
    return (
        f"<details{' open' if failed else ''}><summary>validator"
        + (f" ({e(sample.checks_from)}'s stored report, as selected)" if sample.checks_from else "")
        + f": total {total}, "
        f"{len(failed)} of {len(sample.checks)} checks not passed</summary>"
        '<table class="checks"><tr><th>check</th><th>score</th><th>weight</th>'
        '<th class="l">message</th></tr>'
        f"{rows}</table></details>"
    )


def _decision(sample: SampleRow) -> str:
    d = sample.decision
    if not d:
        return '<p class="muted">no decision recorded</p>'
    extra = {k: v for k, v in d.items() if k not in ("candidate", "reason", "score", "index")}
    score = d.get("score")
    score_text = f"{score:.4f}" if isinstance(score, (int, float)) else "n/a"
    return (
        f'<p class="decision">decision: candidate <b>{e(str(d.get("candidate")))}</b>'
        f" · validator {score_text}"
        f" · reason: {e(str(d.get('reason', '')))}</p>"
        "<details><summary>decision details</summary>"
        f"<pre>{e(json.dumps(extra, indent=1, default=str))}</pre></details>"
    )


def _sample(sample: SampleRow, thumb: Thumb) -> str:
    fails = failing(sample)
    docs = [c.annotation for c in sample.candidates]
    diff = differing_paths(docs)
    sid = f"s-{sample.dataset}-{sample.index}"
    gt = (
        "<details><summary>ground truth (expected fields)</summary>"
        f"<pre>{e(json.dumps(sample.gt, indent=1))}</pre>"
        "</details>"
        if sample.gt is not None
        else '<p class="muted">no ground truth for this index</p>'
    )
    badge = " ".join(f'<span class="bad">{e(f)}</span>' for f in fails) or '<span class="ok">all pass</span>'
    return (
        f'<section class="sample" id="{e(sid)}" data-dataset="{e(sample.dataset)}"'
        f' data-task="{e(sample.task)}"'
        f' data-fail="{e(" ".join(fails))}">'
        f"<h3>{e(sample.dataset)} · #{sample.index} · {e(sample.task)} · {badge}</h3>"
        f"{_gallery(sample, thumb)}{_decision(sample)}"
        f'<div class="cols"><div><b>selected JSON</b> <span class="muted">({len(diff)} fields differ across '
        f"candidates, highlighted)</span><pre>{json_html(sample.selected.annotation, diff)}</pre></div>"
        f"<div>{_scores(sample)}{_checks(sample)}{gt}</div></div></section>"
    )


def render_page(run: RunView, thumb: Thumb, ablation_src: str | None) -> str:
    """The whole ``report.html`` text.

    Args:
        run: The loaded run folder.
        thumb: Maps an image path (or None) to its thumbnail's relative URL (or None).
        ablation_src: Relative URL of the ablation figure copied into ``assets/``, if any.

    Returns:
        The HTML document.
    """
    notes = "".join(f'<p class="note">{e(n)}</p>' for n in run.notes)
    figure = (
        f'<h2>Ablation</h2><img id="ablation" src="{e(ablation_src)}" alt="ablation figure">'
        if ablation_src
        else ""
    )
    samples = "".join(_sample(s, thumb) for d in run.datasets for s in d.samples)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(run.title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="assets/report.css"></head><body>'
        f"{_filters(run)}<header><h1>{e(run.title)}</h1>"
        f'<p class="muted">{e(str(run.run_dir))}</p>{notes}</header><main>'
        f"<h2>Metrics (macro over datasets)</h2>{_metrics_table(run)}{_miss_table(run)}"
        f"{roles_html(run.roles)}{figure}"
        f"<h2>Datasets</h2>{_dataset_table(run.datasets)}"
        f"<h2>Samples</h2>{samples or '<p class=muted>no samples</p>'}</main>"
        '<script src="assets/report.js"></script></body></html>\n'
    )

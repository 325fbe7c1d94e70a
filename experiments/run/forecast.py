"""The forecast: what a run (or each job of a ``-m`` sweep) will call and cost, before any paid call.

``run.dry_run=true`` prints it and stops; ``run.forecast=true`` prints it before a real run and, at the end,
compares it with what the run spent (``forecast_vs_actual.json``, a line under the table). Per dataset and in
total: samples, candidates, conversations, calls, prompt/completion tokens and USD, each as
``expected (low-high)``, written to ``forecast.json``. A dry-run sweep's jobs are one row each in the sweep
folder's ``forecast.json`` and ``forecast.md`` (`write_sweep_forecast`).

How: the strategy's registry entry says how many ``generate``/``revise`` calls it makes per dataset
(`strategies.base.agent_work`); a measured profile of the agent's conversations says what one candidate of a
dataset of that size costs; LiteLLM's price map or ``agent.price`` turns tokens into dollars (`price_of`).
The profile comes from ``forecast.from_run=RUN`` (a stored run's traces), ``forecast.pilot=K`` (K samples per
dataset run first, one candidate each: real calls, `run_pilot`) or, by default, the prior measured on the
offline replay (``forecast_prior.json``, the bundled suite; ``perf/forecast_prior.py`` remakes it). Nothing
here calls a model but the pilot.

A guided candidate (``agent.mode=guided``, `agents.llm.guided`) is a plan request, one to three fresh
requests per sample (the slice or frame of a volume or video, the mask file of a segmentation, the
annotation) and a ``data_meta`` request; none of them carries a history, so a candidate costs the plan, the
data_meta and the samples times the measured cost of one sample's steps (`guided_cost`).

A LiteLLM candidate (tools mode) is one conversation for a dataset of at most ``agent.batch_size``
samples, else a plan conversation, one per batch and a ``data_meta`` conversation (`agents.llm.phases`).
Inside a conversation the prompt grows turn by turn (the history is resent; old tool results are stubbed, so
it grows more slowly later), which is why tokens are not proportional to samples: a profile keeps each
measured conversation's per-call prompt and completion tokens, and a conversation of ``m`` samples is
predicted as ``calls per sample × m`` calls whose prompts follow the measured per-turn curve (extended past
its end by the slope of its last quarter).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from core.atomic import atomic_write_json, atomic_write_text, read_json_or_none
from experiments.run.plan import RunSettings, StrategyWork, agents, strategy_work

if TYPE_CHECKING:
    from benchmark.discover import Dataset

__all__ = [
    "FORECAST_FILE",
    "PILOT_DIR",
    "PRIOR_FILE",
    "VERSUS_FILE",
    "Conversation",
    "Cost",
    "Price",
    "Profile",
    "Speed",
    "candidate_cost",
    "compare_with_actual",
    "dry_run",
    "fit_speed",
    "forecast_run",
    "format_forecast",
    "guided_cost",
    "load_prior",
    "over_budget",
    "price_of",
    "profiles_from_folder",
    "profiles_from_json",
    "profiles_to_json",
    "run_pilot",
    "show_count",
    "show_span",
    "show_usd",
    "speed_from_folder",
    "sweep_forecast",
    "write_sweep_forecast",
]

FORECAST_FILE = "forecast.json"
VERSUS_FILE = "forecast_vs_actual.json"
FLOOR = (0.8, 1.25)
"""The narrowest range given around the expected value (x0.8 to x1.25): one measured source cannot show how
much a model's conversations vary, so a range from it alone would be falsely tight."""

KEYS = ("calls", "prompt_tokens", "completion_tokens", "tokens", "conversations")
BOUNDS = ("low", "expected", "high")


@dataclass(frozen=True)
class Source:
    """Where the forecast's profiles come from (``forecast.from_run``, ``forecast.pilot`` or the prior), and
    the server's speed measured there (None: the prior, whose calls were a fake server's)."""

    kind: str
    profiles: dict[str, dict[str, Profile]]
    detail: dict[str, Any]
    speed: Speed | None = None


def _forecast_node(settings: RunSettings) -> Mapping[str, Any]:
    node = settings.config.get("forecast")
    return node if isinstance(node, Mapping) else {}


def check_options(settings: RunSettings) -> tuple[Path | None, int | None]:
    """``forecast.from_run`` and ``forecast.pilot``, checked.

    Raises:
        ValueError: A folder that holds no run with model calls, a pilot below 1, or both options at once.
    """
    node = _forecast_node(settings)
    from_run, pilot = node.get("from_run"), node.get("pilot")
    if from_run is not None and pilot is not None:
        raise ValueError("forecast.from_run and forecast.pilot are two sources: give one of them")
    path = None
    if from_run is not None:
        path = Path(str(from_run)).expanduser()
        if not path.is_dir():
            raise ValueError(f"forecast.from_run={from_run}: no such run folder")
    if pilot is not None:
        try:
            pilot = int(pilot)
        except (TypeError, ValueError):
            raise ValueError(f"forecast.pilot={pilot!r}: expected a number of samples per dataset") from None
        if pilot < 1:
            raise ValueError(f"forecast.pilot={pilot}: expected at least 1 sample per dataset")
    return path, pilot


def _source(settings: RunSettings, run_dir: Path, datasets: Sequence[Dataset]) -> Source:
    path, pilot = check_options(settings)
    if path is not None:
        profiles = profiles_from_folder(path)
        if not profiles:
            raise ValueError(
                f"forecast.from_run={path}: no model call in its traces (candidates/**/trace_*.jsonl); "
                "give a run of a model-calling agent"
            )
        return Source("run", profiles, {"path": str(path)}, speed_from_folder(path))
    if pilot is not None:
        folder, spent = run_pilot(settings, run_dir, datasets, pilot)
        return Source(
            "pilot",
            profiles_from_folder(folder),
            {"samples": pilot, "folder": str(folder), **spent},
            speed_from_folder(folder),
        )
    profiles, provenance = load_prior(mode=str(settings.agent.get("mode") or "tools"))
    return Source("prior", profiles, provenance)


def _pooled(measured: Mapping[str, Profile]) -> Profile:
    pooled = Profile()
    for p in measured.values():
        pooled.sample.extend(p.sample)
        for label, convs in p.fixed.items():
            pooled.fixed.setdefault(label, []).extend(convs)
    return pooled


def _stages(source: Source) -> dict[str, tuple[dict[str, Profile], Profile]]:
    """Per stage, the measured profiles by dataset and their pool (a revision unmeasured: the generations)."""
    out = {}
    for stage in ("generate", "revise"):
        measured = {d: s[stage] for d, s in source.profiles.items() if stage in s}
        if not measured:
            measured = {d: s["generate"] for d, s in source.profiles.items() if "generate" in s}
        out[stage] = (measured, _pooled(measured))
    return out


@dataclass(frozen=True)
class _Shape:
    samples: int
    batch_size: int
    generations: tuple[int, int]
    revisions: tuple[int, int]
    guided: bool = False
    plans: int = 1

    def cost(self, own: Profile, pooled: Profile, revise: bool, most: bool = False) -> Cost:
        """One candidate's (or revision's) cost under this shape: the guided mode's fresh steps, else the
        tools/script mode's growing conversations."""
        if self.guided:
            return guided_cost(self.samples, own, [pooled], revise=revise, most=most, plans=self.plans)
        return candidate_cost(self.samples, self.batch_size, own, [pooled], revise=revise)


def _dataset_costs(
    shape: _Shape,
    stages: Mapping[str, tuple[dict[str, Profile], Profile]],
    name: str,
    seen: dict[tuple[str, int], list[Cost]],
) -> list[Cost]:
    """[generate low, expected, high, revise low, expected, high] for one candidate of one dataset.

    Expected: the dataset's own profile when the source measured it, else the pool of all. Low and high: the
    least and the most any measured dataset's profile predicts for this dataset's size, at least `FLOOR`."""
    out: list[Cost] = []
    for stage, (measured, pooled) in stages.items():
        revise = stage == "revise"
        own = measured.get(name, pooled)
        expected = shape.cost(own, pooled, revise)
        # What every measured profile predicts depends on the size only: datasets of one size share it.
        others = seen.get((stage, shape.samples))
        if others is None:
            others = [shape.cost(p, pooled, revise) for p in measured.values()]
            if shape.guided:  # a model may take every step for a sample where the measured one took fewer
                others.append(shape.cost(own, pooled, revise, most=True))
            seen[(stage, shape.samples)] = others
        low = min([expected, *others], key=lambda c: c.tokens)
        high = max([expected, *others], key=lambda c: c.tokens)
        out += [_floor(low, expected, FLOOR[0], min), expected, _floor(high, expected, FLOOR[1], max)]
    return out


def _floor(bound: Cost, expected: Cost, factor: float, pick: Any) -> Cost:
    scaled = expected.times(factor)
    return Cost(
        pick(bound.calls, scaled.calls),
        pick(bound.prompt_tokens, scaled.prompt_tokens),
        pick(bound.completion_tokens, scaled.completion_tokens),
        expected.conversations,
    )


def _range(low: Cost, mid: Cost, high: Cost, price: Price) -> dict[str, Any]:
    bounds = dict(zip(BOUNDS, (low, mid, high), strict=True))
    doc: dict[str, Any] = {k: {b: round(float(getattr(c, k)), 1) for b, c in bounds.items()} for k in KEYS}
    usd = {b: price.usd(c.prompt_tokens, c.completion_tokens) for b, c in bounds.items()}
    doc["usd"] = None if None in usd.values() else {b: float(v or 0.0) for b, v in usd.items()}
    return doc


def _sum(docs: Sequence[Mapping[str, Any]], rounded: bool = True) -> dict[str, Any]:
    """The spans of ``docs`` summed (a job's rounded to 0.1); USD None when one is unknown."""
    out: dict[str, Any] = {}
    for key in KEYS:
        sums = {b: sum(d[key][b] for d in docs) for b in BOUNDS}
        out[key] = {b: round(v, 1) for b, v in sums.items()} if rounded else sums
    usd = [d.get("usd") for d in docs]
    out["usd"] = (
        None
        if not usd or any(u is None for u in usd)
        else {b: sum(float(u[b]) for u in usd if u is not None) for b in BOUNDS}
    )
    return out


def _counts(docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "samples": sum(d["samples"] for d in docs),
        "candidates": {b: sum(d["candidates"][b] for d in docs) for b in ("low", "high")},
    }


def _notes(settings: RunSettings, work: StrategyWork, calls_model: bool, source: Source) -> list[str]:
    notes = []
    if not work.declared:
        notes.append(
            f"strategy {work.kind} declares no generations: assumed {work.generations[1]} candidates, "
            "no revision"
        )
    if not calls_model:
        notes.append(f"agent {settings.agent_name} makes no model call: zero calls, zero tokens, $0")
    mode = str(settings.agent.get("mode") or "tools")
    if calls_model and mode == "script" and source.kind == "prior":
        notes.append(
            f"agent.mode={mode}: the prior is the tools mode's (offline replay); "
            "forecast.pilot=K measures this mode"
        )
    if calls_model and mode == "guided":
        notes.append(
            "agent.mode=guided: a plan, 1-3 requests per sample (slice or frame of a volume or video, mask "
            "file of a segmentation, annotation) and data_meta, each a fresh request; the high bound takes 3"
        )
    if work.pooled:
        notes.append("strategy.pool: every candidate is priced at agent.model")
    if work.early_stop:
        notes.append("strategy.early_stop_at: may make fewer candidates than forecast (the high bound)")
    if work.judged:
        notes.append("the judge's calls are not in the forecast")
    if source.kind == "prior":
        notes.append(
            f"rates: the prior ({source.detail.get('mode', 'tools')} mode, an offline run's calls, tokens "
            "estimated as characters/4); forecast.pilot=K or forecast.from_run=RUN measure your model"
        )
    if calls_model and source.speed is None:
        notes.append(
            "wall time unknown: the prior has no server speed; forecast.pilot=K (K samples per dataset, real "
            "calls) or forecast.from_run=RUN (a stored run on this server) measure it"
        )
    return notes


def forecast_run(settings: RunSettings, run_dir: Path, datasets: Sequence[Dataset]) -> dict[str, Any]:
    """The forecast of one run (one job of a sweep), written to ``run_dir/forecast.json``.

    Args:
        settings: The run's settings (`experiments.run.plan.read_settings`).
        run_dir: The run folder (the pilot's calls go to ``forecast_pilot/`` inside it).
        datasets: The run's datasets (`experiments.run.suite.select_datasets`).

    Returns:
        The forecast document.

    Raises:
        ValueError: A bad ``forecast.*`` option.
        UnknownNameError: An unknown strategy or agent.
    """
    work = strategy_work(settings)
    generations, revisions = work.generations, work.revisions
    agent = settings.agent
    target = agent.get("_target_")
    factory = agents.get(str(agent.get("name", "rules"))) if not target else None
    calls_model = bool(getattr(factory, "calls_model", False)) if factory is not None else True
    source = _source(settings, run_dir, datasets) if calls_model else Source("none", {}, {})
    mode = str(agent.get("mode") or "tools")
    batch = int(agent.get("batch_size") or 8)
    batch = 10**9 if mode == "script" else batch  # script mode is one conversation whatever the size
    plans = work.plans if work.plans > 1 else int(agent.get("plans") or 1)
    price = price_of(agent.get("model"), agent.get("price")) if calls_model else Price(0, 0, "no model calls")
    reviser = work.reviser or {}
    revise_price = price_of(reviser.get("model"), reviser.get("price")) if reviser.get("model") else price
    stages = _stages(source)
    seen: dict[tuple[str, int], list[Cost]] = {}
    rows: dict[str, Any] = {}
    for d in datasets:
        samples = len(d.entries())
        shape = _Shape(samples, batch, generations, revisions, guided=mode == "guided", plans=plans)
        if calls_model:
            g_lo, g_mid, g_hi, r_lo, r_mid, r_hi = _dataset_costs(shape, stages, d.name, seen)
        else:
            g_lo = g_mid = g_hi = r_lo = r_mid = r_hi = Cost()
        gen = _range(
            g_lo.times(generations[0]), g_mid.times(generations[1]), g_hi.times(generations[1]), price
        )
        rev = _range(
            r_lo.times(revisions[0]), r_mid.times(revisions[1]), r_hi.times(revisions[1]), revise_price
        )
        total = _sum([gen, rev])
        total["samples"] = samples
        total["candidates"] = {"low": generations[0] + revisions[0], "high": generations[1] + revisions[1]}
        rows[d.name] = total
    grand = _sum(list(rows.values()))
    grand["datasets"] = len(rows)
    grand |= _counts(list(rows.values()))
    doc: dict[str, Any] = {
        "job": {
            "strategy": work.name,
            "agent": settings.agent_name,
            "model": agent.get("model") if calls_model else None,
            "mode": mode if calls_model else None,
            "seed": settings.seed,
            "batch_size": batch if mode != "script" else None,
        },
        "work": {"generations": list(generations), "revisions": list(revisions)},
        "source": {"kind": source.kind, **source.detail},
        "price": {
            "source": price.source,
            "known": price.known,
            "prompt_usd_per_mtok": price.prompt * 1e6,
            "completion_usd_per_mtok": price.completion * 1e6,
        },
        "datasets": rows,
        "total": grand,
        "notes": _notes(settings, work, calls_model, source),
    }
    doc["wall"] = _wall(grand, source.speed, settings) if calls_model else None
    if revise_price is not price:
        doc["reviser_price"] = {"source": revise_price.source, "known": revise_price.known}
    if source.kind in ("run", "pilot"):
        doc["profiles"] = profiles_to_json(source.profiles)
    doc["budget"] = {
        "max_tokens": settings.run.get("budget_tokens"),
        "max_usd": settings.run.get("budget_usd"),
        "over": over_budget(doc, settings.run),
    }
    atomic_write_json(run_dir / FORECAST_FILE, doc, durable=False)  # cheap to make again
    return doc


def in_flight(settings: RunSettings) -> int:
    """Calls the server works on at once: ``agent.server.slots`` when set (a local server: 1 by default),
    else ``run.concurrency``."""
    server = settings.agent.get("server")
    slots = server.get("slots") if isinstance(server, Mapping) else None
    if isinstance(slots, int) and not isinstance(slots, bool) and slots >= 1:
        return slots
    try:
        return settings.concurrency
    except ValueError:
        return 1


def _wall(total: Mapping[str, Any], speed: Speed | None, settings: RunSettings) -> dict[str, Any] | None:
    """The run's wall time from the server's measured speed: its tokens at that speed, ``in_flight`` at
    once (the framework's own time, small beside a model's, is left out)."""
    if speed is None:
        return None
    parallel = in_flight(settings)
    seconds = {
        b: speed.seconds(Cost(0, total["prompt_tokens"][b], total["completion_tokens"][b])) / parallel
        for b in ("low", "expected", "high")
    }
    prompt_tps, completion_tps = speed.rates()
    return {
        "seconds": seconds,
        "prompt_tokens_per_s": prompt_tps,
        "completion_tokens_per_s": completion_tps,
        "measured_calls": speed.calls,
        "in_flight": parallel,
    }


def show_seconds(x: float) -> str:
    """A duration for a table (``42s``, ``12.5 min``, ``3.2 h``)."""
    if x >= 3600:
        return f"{x / 3600:.1f} h"
    if x >= 60:
        return f"{x / 60:.1f} min"
    return f"{x:.0f}s"


def _wall_line(wall: Mapping[str, Any] | None) -> str | None:
    if wall is None:
        return None
    rate = wall["prompt_tokens_per_s"], wall["completion_tokens_per_s"]
    shown = [f"{r:,.0f} {what} tok/s" for r, what in zip(rate, ("prompt", "completion"), strict=True) if r]
    return (
        f"wall time: {show_span(wall['seconds'], show_seconds)} at the measured server speed "
        f"({', '.join(shown) or 'no measurable cost'}; {wall['measured_calls']} calls; "
        f"{wall['in_flight']} in flight)"
    )


def over_budget(doc: Mapping[str, Any], run: Mapping[str, Any]) -> str | None:
    """One line when the budget is below the forecast's high bound (None when it covers it, or no budget)."""
    total = doc["total"]
    lines = []
    tokens = run.get("budget_tokens")
    if tokens is not None and float(tokens) < total["tokens"]["high"]:
        lines.append(_over("run.budget_tokens", float(tokens), total["tokens"], show_count))
    usd = run.get("budget_usd")
    if usd is not None and total.get("usd") is not None and float(usd) < total["usd"]["high"]:
        lines.append(_over("run.budget_usd", float(usd), total["usd"], show_usd))
    return "; ".join(lines) or None


def _over(key: str, limit: float, span: Mapping[str, float], show: Callable[[float], str]) -> str:
    share = limit / span["expected"] if span["expected"] else math.inf
    when = (
        f"it would stop at about {share:.0%} of the expected work"
        if share < 1
        else "it covers the expected cost but not the high bound"
    )
    return (
        f"OVER BUDGET: {key}={limit:g} but the forecast is {show(span['expected'])} "
        f"({show(span['low'])}-{show(span['high'])}); {when}"
    )


def show_count(x: float) -> str:
    """A count shortened for a table (``186.8k``, ``1.2M``)."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.3g}{unit}"
    return f"{x:.0f}"


def show_usd(x: float) -> str:
    """Dollars for a table (four significant digits under $1)."""
    return f"${x:.4g}" if x < 1 else f"${x:,.2f}"


def show_span(span: Mapping[str, float] | None, show: Callable[[float], str]) -> str:
    """``expected (low-high)``; one value when the bounds agree; ``unknown`` without a span (no price)."""
    if span is None:
        return "unknown"
    if span["low"] == span["high"]:
        return show(span["expected"])
    return f"{show(span['expected'])} ({show(span['low'])}-{show(span['high'])})"


def format_forecast(doc: Mapping[str, Any]) -> str:
    """The forecast as a terminal table: a title, one row per dataset, the total, the notes."""
    job, total, price = doc["job"], doc["total"], doc["price"]
    agent = job["agent"] + (f" {job['model']} ({job['mode']})" if job.get("model") else "")
    priced = (
        f"price {price['source']}: ${price['prompt_usd_per_mtok']:.3g}/"
        f"${price['completion_usd_per_mtok']:.3g} per Mtok (prompt/completion)"
        if price["known"]
        else f"USD unknown: {price['source']}"
    )
    title = (
        f"forecast · {job['strategy']} · seed {job['seed']} · agent {agent} · "
        f"rates: {doc['source']['kind']} · {priced}"
    )
    head = (
        f"{'dataset':<32} {'samples':>7} {'cand':>5} {'conv':>6} {'calls':>18} {'prompt tok':>22} "
        f"{'compl tok':>22} {'USD':>26}"
    )
    rows = [title, head, *(_row(name[:32], r) for name, r in doc["datasets"].items())]
    rows.append(_row(f"total ({total['datasets']} datasets)", total))
    wall = _wall_line(doc.get("wall"))
    if wall is not None:
        rows.append(wall)
    if doc["budget"].get("over"):
        rows.append(doc["budget"]["over"])
    rows += [f"note: {n}" for n in doc.get("notes", [])]
    return "\n".join(rows)


def _cands(cand: Mapping[str, int]) -> str:
    return str(cand["high"]) if cand["low"] == cand["high"] else f"{cand['low']}-{cand['high']}"


def _row(name: str, r: Mapping[str, Any]) -> str:
    return (
        f"{name:<32} {r['samples']:>7} {_cands(r['candidates']):>5} "
        f"{show_count(r['conversations']['expected']):>6} "
        f"{show_span(r['calls'], show_count):>18} {show_span(r['prompt_tokens'], show_count):>22} "
        f"{show_span(r['completion_tokens'], show_count):>22} {show_span(r.get('usd'), show_usd):>26}"
    )


def dry_run(settings: RunSettings, run_dir: Path) -> dict[str, Any]:
    """``run.dry_run=true``: the forecast of this run (or sweep job), with no model call (but a pilot's).

    Args:
        settings: The run's settings (`experiments.run.plan.read_settings`, the one reader of the config).
        run_dir: The run folder (``forecast.json`` is written there).

    Returns:
        The forecast document.
    """
    from experiments.run.options import check_benchmark
    from experiments.run.suite import benchmark_root, select_datasets

    check_benchmark(settings.benchmark)
    check_options(settings)  # a bad option is refused before the suite is looked at
    root = benchmark_root(settings.benchmark)
    benchmark = settings.benchmark
    datasets = select_datasets(
        root, benchmark.get("datasets"), benchmark.get("shard"), samples=settings.samples
    )
    return forecast_run(settings, run_dir, datasets)


def compare_with_actual(run_dir: Path, usage: Mapping[str, Any], wall_s: float | None = None) -> str | None:
    """Compare ``forecast.json`` with what the run spent; write ``forecast_vs_actual.json``.

    Args:
        run_dir: The run folder.
        usage: The run's ``usage.json`` content (its ``total``).
        wall_s: The run's wall time so far (compared with the forecast's, when it had one).

    Returns:
        One line for the run's table, or None when the run had no forecast.
    """
    import json

    path = run_dir / FORECAST_FILE
    if not path.is_file():
        return None
    document = json.loads(path.read_text(encoding="utf-8"))
    forecast = document["total"]
    actual = usage.get("total") or {}
    out: dict[str, Any] = {}
    for key, actual_key in (
        ("calls", "calls"),
        ("prompt_tokens", "prompt_tokens"),
        ("completion_tokens", "completion_tokens"),
        ("tokens", "total_tokens"),
        ("usd", "cost_usd"),
    ):
        span = forecast.get(key)
        value = float(actual.get(actual_key) or 0.0)
        if span is None:
            out[key] = {"forecast": None, "actual": value}
            continue
        expected = float(span["expected"])
        out[key] = {
            "forecast": span,
            "actual": value,
            "actual_over_expected": value / expected if expected else None,
            "within_range": float(span["low"]) <= value <= float(span["high"]),
        }
    wall = document.get("wall")
    if wall is not None and wall_s is not None:
        out["wall_s"] = {"forecast": wall["seconds"], "actual": wall_s}
    atomic_write_json(run_dir / VERSUS_FILE, out, durable=False)
    t = out["tokens"]
    ratio = t.get("actual_over_expected")
    shown = f"{ratio:.2f}x the expected" if ratio is not None else "no tokens were forecast"
    inside = "inside" if t.get("within_range") else "OUTSIDE"
    return (
        f"forecast vs actual: {show_count(t['actual'])} tokens spent, {shown} "
        f"({show_count(t['forecast']['expected'])}, range {show_count(t['forecast']['low'])}-"
        f"{show_count(t['forecast']['high'])}: "
        f"{inside}); calls {out['calls']['actual']:.0f} vs {out['calls']['forecast']['expected']:.0f}"
        + (
            f"; wall {show_seconds(wall_s)} vs {show_seconds(wall['seconds']['expected'])}"
            if wall is not None and wall_s is not None
            else ""
        )
        + f" ({VERSUS_FILE})"
    )


def print_forecast(doc: Mapping[str, Any]) -> None:
    """The forecast on stderr (a real run's stdout keeps only its results table)."""
    print(format_forecast(doc), file=sys.stderr)


# -- prices ----------------------------------------------------------------------------------------
# LiteLLM's price map is read from the file LiteLLM itself loads offline (what
# ``LITELLM_LOCAL_MODEL_COST_MAP=True`` makes it use; `agents.model.client.import_litellm` sets that) without
# importing litellm: the import takes seconds, the file ~40 ms, and a sweep's forecast must print in a few
# seconds. The lookup is the map's key as written (``gemini/gemini-2.5-flash``), else the name after the
# provider prefix when the entry's provider is that prefix (``openai/gpt-4o-mini`` -> ``gpt-4o-mini``).

MAP_FILE = "model_prices_and_context_window_backup.json"


@dataclass(frozen=True)
class Price:
    """Dollars per token, and where the price comes from.

    Attributes:
        prompt: Dollars per prompt token.
        completion: Dollars per completion token.
        source: ``agent.price``, ``litellm`` (with the map's key) or why there is none.
        known: False when neither the config nor LiteLLM prices the model (USD is then "unknown").
    """

    prompt: float
    completion: float
    source: str
    known: bool = True

    def usd(self, prompt_tokens: float, completion_tokens: float) -> float | None:
        """The cost of these tokens, or None for an unpriced model."""
        return prompt_tokens * self.prompt + completion_tokens * self.completion if self.known else None


@functools.cache
def _litellm_map() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    data = read_json_or_none(Path(spec.origin).parent / MAP_FILE)
    return data if isinstance(data, dict) else {}


def _map_entry(model: str) -> tuple[str, Mapping[str, Any]] | None:
    table = _litellm_map()
    entry = table.get(model)
    if isinstance(entry, Mapping):
        return model, entry
    provider, _, name = model.partition("/")
    entry = table.get(name) if name else None
    if isinstance(entry, Mapping) and str(entry.get("litellm_provider", "")).startswith(provider):
        return name, entry
    return None


def price_of(model: str | None, price: Mapping[str, Any] | None) -> Price:
    """The price of a role's calls.

    Args:
        model: The role's LiteLLM model string (None for an agent without one).
        price: The role's ``price`` node (``input_per_mtok``, ``output_per_mtok``: dollars per million
            tokens; None entries count as unset), used for a model LiteLLM's map does not price, as in the
            run (`agents.model.client.ModelClient`: the map wins when it has the model).

    Returns:
        The price (``known`` False when nobody prices the model).
    """
    found = _map_entry(str(model)) if model else None
    if found is not None:
        key, entry = found
        prompt, completion = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if prompt or completion:
            return Price(float(prompt or 0.0), float(completion or 0.0), f"litellm ({key})")
    given = {k: v for k, v in (price or {}).items() if v is not None}
    if given:
        return Price(
            float(given.get("input_per_mtok", 0.0)) / 1e6,
            float(given.get("output_per_mtok", 0.0)) / 1e6,
            "agent.price",
        )
    return Price(0.0, 0.0, f"LiteLLM has no price for {model}; give agent.price.*", known=False)


# -- measured conversations ------------------------------------------------------------------------

PRIOR_FILE = Path(__file__).with_name("forecast_prior.json")
"""The default profiles: the offline replay of the rules baseline on the bundled suite (tools mode)."""

FIXED = ("plan", "meta")
"""Conversation labels whose cost does not depend on the sample count (`agents.llm.phases`)."""


@dataclass(frozen=True)
class Conversation:
    """One measured conversation.

    Attributes:
        samples: Samples it covered (0 for the plan and the ``data_meta`` conversation).
        prompts: Prompt tokens of each call, in order.
        completions: Completion tokens of each call.
    """

    samples: int
    prompts: tuple[int, ...]
    completions: tuple[int, ...]


@dataclass(frozen=True)
class Cost:
    """Calls and tokens of some model work (a conversation, a candidate, a dataset, a job)."""

    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    conversations: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.conversations + other.conversations,
        )

    def times(self, k: float) -> Cost:
        """This cost ``k`` times over."""
        return Cost(
            self.calls * k, self.prompt_tokens * k, self.completion_tokens * k, self.conversations * k
        )

    @property
    def tokens(self) -> float:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Profile:
    """The measured conversations of one dataset for one stage (``generate`` or ``revise``).

    Attributes:
        sample: Conversations over samples (the whole dataset, a batch, one sample).
        fixed: Per label of `FIXED`, its measured conversations.
    """

    sample: list[Conversation] = field(default_factory=list)
    fixed: dict[str, list[Conversation]] = field(default_factory=dict)

    def conversation(self, samples: int) -> Cost:
        """The predicted cost of one conversation over ``samples`` samples (zero when nothing is measured)."""
        if not self.sample or samples <= 0:
            return Cost()
        per_sample, completion = self._rates
        calls = max(1, round(per_sample * samples))
        curve = self.curve
        prompt = sum(_at(curve, t) for t in range(calls))
        return Cost(calls, prompt, calls * completion, 1)

    @functools.cached_property
    def _rates(self) -> tuple[float, float]:
        """Calls per sample and completion tokens per call of the conversations over samples."""
        convs = self.sample
        per_sample = sum(len(c.prompts) for c in convs) / max(1, sum(c.samples for c in convs))
        completions = [x for c in convs for x in c.completions]
        return per_sample, sum(completions) / max(1, len(completions))

    @functools.cached_property
    def curve(self) -> list[float]:
        """Mean prompt tokens at each turn of the conversations over samples (built once, on first use: a
        profile is complete before it is asked for a prediction)."""
        return _curve(self.sample)

    def sample_step(self) -> Cost:
        """The mean cost of one sample's steps (guided mode: every conversation over samples is one sample's
        fresh requests); zero when nothing is measured."""
        samples = sum(c.samples for c in self.sample)
        return _per(self.sample, samples) if samples else Cost()

    def fixed_cost(self, label: str) -> Cost | None:
        """The mean cost of the ``plan`` or ``meta`` conversation, or None when none was measured."""
        convs = self.fixed.get(label) or []
        return _per(convs, len(convs)) if convs else None


def _per(convs: Sequence[Conversation], n: int) -> Cost:
    """The calls and tokens of ``convs`` divided by ``n``, as one conversation."""
    return Cost(
        sum(len(c.prompts) for c in convs) / n,
        sum(sum(c.prompts) for c in convs) / n,
        sum(sum(c.completions) for c in convs) / n,
        1,
    )


def _curve(convs: Sequence[Conversation]) -> list[float]:
    """Mean prompt tokens at each turn, over the conversations that reached it."""
    length = max(len(c.prompts) for c in convs)
    out = []
    for t in range(length):
        values = [c.prompts[t] for c in convs if len(c.prompts) > t]
        out.append(sum(values) / len(values))
    return out


def _at(curve: Sequence[float], t: int) -> float:
    """The curve at turn ``t``; past its end, its last value plus the slope of its last quarter."""
    if t < len(curve):
        return curve[t]
    window = max(1, len(curve) // 4)
    last = len(curve) - 1
    slope = (curve[last] - curve[max(0, last - window)]) / window if last > 0 else 0.0
    return curve[last] + max(0.0, slope) * (t - last)


def candidate_cost(
    samples: int,
    batch_size: int,
    own: Profile,
    fallback: Sequence[Profile],
    *,
    revise: bool = False,
) -> Cost:
    """The predicted cost of one candidate (or one revision) of a dataset in the tools mode.

    Args:
        samples: The dataset's samples.
        batch_size: ``agent.batch_size``.
        own: The profile used for the conversations over samples.
        fallback: Profiles asked, in order, for a ``plan``/``meta`` conversation ``own`` did not measure.
        revise: A revision: no plan conversation (it reuses the candidate's).

    Returns:
        Calls, tokens and conversations.
    """
    if samples <= batch_size:
        return own.conversation(samples)
    sizes = [batch_size] * (samples // batch_size) + ([samples % batch_size] if samples % batch_size else [])
    total = Cost()
    for size in sizes:
        total = total + own.conversation(size)
    for label in FIXED[1:] if revise else FIXED:
        total = total + _fixed(label, own, fallback)
    return total


GUIDED_MOST_STEPS = 3
"""The most requests the guided mode makes for one sample: the slice (or frame), the mask file, the annotation
(`agents.llm.guided`), retries aside."""


def guided_cost(
    samples: int,
    own: Profile,
    fallback: Sequence[Profile],
    *,
    revise: bool = False,
    most: bool = False,
    plans: int = 1,
) -> Cost:
    """The predicted cost of one guided candidate (or one revision) of a dataset.

    Args:
        samples: The dataset's samples.
        own: The profile whose sample steps are used.
        fallback: Profiles asked, in order, for a ``plan``/``meta`` cost ``own`` did not measure.
        revise: A revision: no plan request (the candidate's plan is reused), one request per sample.
        most: The high bound: every sample takes `GUIDED_MOST_STEPS` requests (a model that plans a volume
            or a segmentation where the measured one did not), each as large as the measured ones.
        plans: Plans sampled per candidate (``agent.plans``, ``strategy=plans``): each is one plan request,
            and more than one adds the request that asks a plan the data contradicts again (counted always:
            the forecast errs high, as it comes before paying).

    Returns:
        Calls, tokens and steps (as conversations).
    """
    step = own.sample_step()
    if most and step.calls and step.calls < GUIDED_MOST_STEPS:
        step = step.times(GUIDED_MOST_STEPS / step.calls)
    total = step.times(samples)
    for label in FIXED[1:] if revise else FIXED:
        asked = plans + 1 if plans > 1 else 1
        total = total + _fixed(label, own, fallback).times(asked if label == "plan" else 1)
    return total


def _fixed(label: str, own: Profile, fallback: Sequence[Profile]) -> Cost:
    """The ``plan`` or ``meta`` cost of the first profile that measured it (zero when none did)."""
    return next((c for p in (own, *fallback) if (c := p.fixed_cost(label)) is not None), Cost())


@dataclass(frozen=True)
class Speed:
    """How fast a server answered: seconds per prompt token and per completion token, fitted on the measured
    calls' latencies (``latency = prompt × s_prompt + completion × s_completion``, least squares, both >= 0).

    Attributes:
        prompt_s: Seconds per prompt token (0: too fast to measure).
        completion_s: Seconds per completion token.
        calls: The calls it was measured on.
    """

    prompt_s: float
    completion_s: float
    calls: int

    def seconds(self, cost: Cost) -> float:
        """The server time of ``cost``'s calls, one after another."""
        return cost.prompt_tokens * self.prompt_s + cost.completion_tokens * self.completion_s

    def rates(self) -> tuple[float | None, float | None]:
        """(prompt tokens/s, completion tokens/s); None where the fit found no cost."""
        return (
            1 / self.prompt_s if self.prompt_s > 0 else None,
            1 / self.completion_s if self.completion_s > 0 else None,
        )


def fit_speed(calls: Sequence[tuple[int, int, float]]) -> Speed | None:
    """The `Speed` of ``(prompt tokens, completion tokens, seconds)`` calls; None without a timed call."""
    calls = [c for c in calls if c[2] > 0 and (c[0] or c[1])]
    if not calls:
        return None
    pp = sum(p * p for p, _, _ in calls)
    cc = sum(c * c for _, c, _ in calls)
    pc = sum(p * c for p, c, _ in calls)
    pt = sum(p * t for p, _, t in calls)
    ct = sum(c * t for _, c, t in calls)
    det = pp * cc - pc * pc
    a = (pt * cc - ct * pc) / det if det > 0 else -1.0
    b = (ct * pp - pt * pc) / det if det > 0 else -1.0
    # A negative share means one kind of token explains the time alone: fit that one (non-negative least
    # squares in two unknowns).
    if a < 0 or b < 0:
        a_only = pt / pp if pp else 0.0
        b_only = ct / cc if cc else 0.0
        err_a = sum((t - a_only * p) ** 2 for p, _, t in calls)
        err_b = sum((t - b_only * c) ** 2 for _, c, t in calls)
        a, b = (a_only, 0.0) if err_a <= err_b else (0.0, b_only)
    return Speed(max(0.0, a), max(0.0, b), len(calls))


def speed_from_folder(folder: Path) -> Speed | None:
    """The server's speed measured on the calls of a run (or pilot) folder's traces (cache hits left out).

    A call's latency also holds the time it waited for the server's slot (a one-slot local server given a
    candidate's samples at once queues them), so each call is timed by its service: its latency less its
    ``slot_wait_s``; in a trace without it, its latency or, when less, the time since its candidate's
    previous answer.

    Args:
        folder: A folder holding agent traces (``trace_*.jsonl``), any depth.

    Returns:
        The speed, or None when no call was timed.
    """
    calls: list[tuple[int, int, float]] = []
    for path in sorted(folder.rglob("trace_*.jsonl")):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        previous: float | None = None
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") != "model_call" or event.get("cached"):
                continue
            latency, done = float(event.get("latency_s") or 0.0), float(event.get("t") or 0.0)
            if "slot_wait_s" in event:
                service = max(0.0, latency - float(event.get("slot_wait_s") or 0.0))
            elif previous is not None and done > previous:
                service = min(latency, done - previous)
            else:
                service = latency
            previous = done
            calls.append(
                (int(event.get("prompt_tokens") or 0), int(event.get("completion_tokens") or 0), service)
            )
    return fit_speed(calls)


# -- reading traces -----------------------------------------------------------------------------


def _samples_of(label: str, samples: int, batch_size: int) -> int:
    """Samples a conversation covered, from its label (``batch k/n``, ``sample i``, ``dataset``)."""
    if label.startswith("batch ") and "/" in label:
        k = int(label.split()[1].split("/")[0])
        return max(0, min(batch_size, samples - (k - 1) * batch_size))
    if label.startswith(("sample ", "revise ")):  # a guided step of one sample (generate or revise)
        return 1
    return samples


def _trace_conversations(path: Path) -> tuple[str, str, list[tuple[str, Conversation]]] | None:
    """(dataset, stage, (label, conversation) pairs) of one ``trace_*.jsonl``; None without a start event."""
    start: dict[str, Any] | None = None
    calls: dict[str, list[tuple[int, int]]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line cut by a crash: the rest still counts
        if event.get("event") == "start" and start is None:
            start = event
        elif event.get("event") == "model_call":
            label = str(event.get("conversation") or "dataset")
            usage = (int(event.get("prompt_tokens") or 0), int(event.get("completion_tokens") or 0))
            calls.setdefault(label, []).append(usage)
    if start is None:
        return None
    samples, batch = int(start.get("samples") or 0), int(start.get("batch_size") or 1)
    convs = [
        (
            label,
            Conversation(
                0 if label in FIXED else _samples_of(label, samples, batch),
                tuple(p for p, _ in made),
                tuple(c for _, c in made),
            ),
        )
        for label, made in calls.items()
    ]
    stage = "revise" if start.get("mode") == "revise" else "generate"
    return str(start.get("dataset") or path.parent.parent.name), stage, convs


def profiles_from_folder(folder: Path) -> dict[str, dict[str, Profile]]:
    """Every profile measured in a run (or pilot) folder: dataset -> stage -> profile.

    Args:
        folder: A folder holding agent traces (``trace_generate.jsonl``, ``trace_revise.jsonl``), any depth.

    Returns:
        The profiles; empty when no trace has a model call (a ``rules`` run).
    """
    out: dict[str, dict[str, Profile]] = {}
    for path in sorted(folder.rglob("trace_*.jsonl")):
        found = _trace_conversations(path)
        if found is None:
            continue
        dataset, stage, convs = found
        profile = out.setdefault(dataset, {}).setdefault(stage, Profile())
        for label, conv in convs:
            if label in FIXED:
                profile.fixed.setdefault(label, []).append(conv)
            elif conv.prompts and conv.samples > 0:
                profile.sample.append(conv)
    return {d: s for d, s in out.items() if any(p.sample for p in s.values())}


def profiles_to_json(profiles: Mapping[str, Mapping[str, Profile]]) -> dict[str, Any]:
    """Profiles as plain JSON (the prior file, ``forecast.json``'s record of what was measured)."""

    def conv(c: Conversation) -> dict[str, Any]:
        return {"samples": c.samples, "prompts": list(c.prompts), "completions": list(c.completions)}

    return {
        d: {
            stage: {
                "sample": [conv(c) for c in p.sample],
                **{k: [conv(c) for c in v] for k, v in p.fixed.items()},
            }
            for stage, p in stages.items()
        }
        for d, stages in profiles.items()
    }


def profiles_from_json(data: Mapping[str, Any]) -> dict[str, dict[str, Profile]]:
    """The inverse of `profiles_to_json`."""

    def conv(c: Mapping[str, Any]) -> Conversation:
        return Conversation(int(c["samples"]), tuple(c["prompts"]), tuple(c["completions"]))

    out: dict[str, dict[str, Profile]] = {}
    for d, stages in data.items():
        for stage, p in stages.items():
            fixed = {k: [conv(c) for c in v] for k, v in p.items() if k in FIXED}
            out.setdefault(d, {})[stage] = Profile([conv(c) for c in p.get("sample", [])], fixed)
    return out


def load_prior(mode: str = "tools") -> tuple[dict[str, dict[str, Profile]], dict[str, Any]]:
    """The prior profiles (`PRIOR_FILE`) of an agent mode and their provenance (how and when they were
    measured).

    Args:
        mode: ``tools`` (also the script mode's stand-in) or ``guided`` (its own key of the file).

    Raises:
        ValueError: The file is missing or unreadable (a broken install).
    """
    path = PRIOR_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"the forecast's prior {path} cannot be read ({exc})") from exc
    used = "guided" if mode == "guided" and isinstance(data.get("guided"), dict) else "tools"
    data = data["guided"] if used == "guided" else data
    return profiles_from_json(data["profiles"]), {"mode": used, **dict(data.get("provenance") or {})}


# -- the pilot (forecast.pilot=K) ------------------------------------------------------------------

PILOT_DIR = "forecast_pilot"


def run_pilot(
    settings: RunSettings, run_dir: Path, datasets: Sequence[Dataset], samples: int
) -> tuple[Path, dict[str, Any]]:
    """Run one candidate (``generate`` only, through the run's own agent config) on the first ``samples``
    samples of each dataset, into ``<run>/forecast_pilot/<dataset>/``: real model calls.

    A K above ``agent.batch_size`` makes the pilot run the dataset in phases (plan, batches, ``data_meta``),
    so every kind of conversation the run will have is measured; with a smaller K the forecast takes the plan
    and ``data_meta`` conversations from the prior.

    Args:
        settings: The run's settings.
        run_dir: The run folder.
        datasets: The run's datasets.
        samples: Samples per dataset (K).

    Returns:
        The pilot folder and what it spent (``calls``, ``tokens``, ``usd``, ``cache_hits``).

    Raises:
        FatalAgentError: A failure every call would share (rejected key, unknown model, dead endpoint).
    """
    import asyncio
    import dataclasses

    from agents.base import Candidate, Task, Usage
    from agents.instructions import resolve_instructions
    from core.cli_errors import run_coroutine
    from experiments.run.options import run_budget
    from experiments.run.plan import build_agent, task_options
    from experiments.run.pools import close_agent
    from experiments.run.suite import benchmark_root

    folder = run_dir / PILOT_DIR
    options = task_options(settings.agent, settings.seed)
    instructions = resolve_instructions(benchmark_root(settings.benchmark), settings.instructions)
    options["options"] = {**options["options"], "instructions": {k: v.text for k, v in instructions.items()}}
    tasks = []
    for d in datasets:
        task = Task.from_dataset(d, folder / d.name, **options)
        tasks.append(dataclasses.replace(task, entries=task.entries[:samples]))
    # The run's budget limits bound the pilot too: it never spends more than the run would be allowed.
    agent = build_agent(settings.agent, budget=run_budget(settings.run))
    slots = asyncio.Semaphore(max(1, settings.concurrency))

    async def one(task: Task) -> Candidate:
        async with slots:
            return await agent.generate(task)

    async def every() -> list[Candidate]:
        return list(await asyncio.gather(*(one(t) for t in tasks)))

    try:
        made = run_coroutine(every())
    finally:
        close_agent(agent)
    spent = sum((c.usage for c in made), Usage())
    return folder, {
        "calls": spent.calls,
        "tokens": spent.total_tokens,
        "usd": spent.cost_usd,
        "cache_hits": spent.cache_hits,
    }


# -- a dry-run sweep ---------------------------------------------------------------------------------


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
    total = _sum(totals, rounded=False) | _counts(totals)
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
        lines.append(_job_row(f"{name} {job['overrides']}", job["total"], width))
    lines.append(_job_row("total", doc["total"], width))
    lines += [f"{name}: {job['over_budget']}" for name, job in doc["jobs"].items() if job["over_budget"]]
    lines += [f"note: {n}" for n in doc["notes"]]
    text = "\n".join(lines)
    atomic_write_json(sweep_dir / FORECAST_FILE, doc, durable=False)
    atomic_write_text(sweep_dir / "forecast.md", "```\n" + text + "\n```\n", durable=False)
    return text


def _job_row(label: str, t: dict[str, Any], width: int) -> str:
    return (
        f"{label:<{width}} {t['samples']:>7} {_cands(t['candidates']):>5} "
        f"{show_span(t['calls'], show_count):>18} "
        f"{show_span(t['tokens'], show_count):>22} {show_span(t.get('usd'), show_usd):>26}"
    )

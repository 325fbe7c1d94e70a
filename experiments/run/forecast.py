"""The forecast: what a run (or each job of a ``-m`` sweep) will call and cost, before any paid call.

``run.dry_run=true`` prints it and stops; ``run.forecast=true`` prints it before a real run and, at the end,
compares it with what the run spent (``forecast_vs_actual.json``, a line under the table). Per dataset and in
total: samples, candidates, conversations, calls, prompt/completion tokens and USD, each as
``expected (low-high)``, written to ``forecast.json``.

How: the strategy's registry entry says how many ``generate``/``revise`` calls it makes per dataset
(`strategies.base.agent_work`); a measured profile of the agent's conversations says what one candidate of a
dataset of that size costs (`experiments.run.forecast_rates`); LiteLLM's price map or ``agent.price`` turns
tokens into dollars (`experiments.run.forecast_price`). The profile comes from ``forecast.from_run=RUN`` (a
stored run's traces), ``forecast.pilot=K`` (K samples per dataset run first, one candidate each: real calls)
or, by default, the prior measured on the offline replay. Nothing here calls a model but the pilot.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.atomic import atomic_write_json
from experiments.run.forecast_price import Price, price_of
from experiments.run.forecast_rates import (
    Cost,
    Profile,
    Speed,
    candidate_cost,
    guided_cost,
    load_prior,
    profiles_from_folder,
    profiles_to_json,
    speed_from_folder,
)
from experiments.run.plan import RunSettings, StrategyWork, agents, strategy_work

if TYPE_CHECKING:
    from benchmark.discover import Dataset

__all__ = [
    "FORECAST_FILE",
    "VERSUS_FILE",
    "compare_with_actual",
    "dry_run",
    "forecast_run",
    "format_forecast",
    "over_budget",
    "show_count",
    "show_span",
    "show_usd",
]

FORECAST_FILE = "forecast.json"
VERSUS_FILE = "forecast_vs_actual.json"
FLOOR = (0.8, 1.25)
"""The narrowest range given around the expected value (x0.8 to x1.25): one measured source cannot show how
much a model's conversations vary, so a range from it alone would be falsely tight."""

KEYS = ("calls", "prompt_tokens", "completion_tokens", "tokens", "conversations")


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
        from experiments.run.forecast_pilot import run_pilot

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
    def values(c: Cost) -> dict[str, float]:
        return {k: round(float(getattr(c, k)), 1) for k in KEYS}

    doc: dict[str, Any] = {
        k: {"low": values(low)[k], "expected": values(mid)[k], "high": values(high)[k]} for k in KEYS
    }
    doc["usd"] = _usd(low, mid, high, price)
    return doc


def _usd(low: Cost, mid: Cost, high: Cost, price: Price) -> dict[str, float] | None:
    costs = [price.usd(c.prompt_tokens, c.completion_tokens) for c in (low, mid, high)]
    if any(c is None for c in costs):
        return None
    return {"low": float(costs[0] or 0.0), "expected": float(costs[1] or 0.0), "high": float(costs[2] or 0.0)}


def _sum(docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in KEYS:
        out[key] = {b: round(sum(d[key][b] for d in docs), 1) for b in ("low", "expected", "high")}
    usd = [d.get("usd") for d in docs]
    out["usd"] = (
        None
        if any(u is None for u in usd)
        else {b: sum(float(u[b]) for u in usd if u is not None) for b in ("low", "expected", "high")}
    )
    return out


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
    grand["samples"] = sum(r["samples"] for r in rows.values())
    grand["candidates"] = {b: sum(r["candidates"][b] for r in rows.values()) for b in ("low", "high")}
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


def format_forecast(doc: Mapping[str, Any], *, per_dataset: bool = True) -> str:
    """The forecast as a terminal table: a title, one row per dataset (optional), the total, the notes."""
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
    rows = [title, head]
    names = list(doc["datasets"]) if per_dataset else []
    for name in names:
        rows.append(_row(name[:32], doc["datasets"][name]))
    rows.append(_row(f"total ({total['datasets']} datasets)", total))
    wall = _wall_line(doc.get("wall"))
    if wall is not None:
        rows.append(wall)
    if doc["budget"].get("over"):
        rows.append(doc["budget"]["over"])
    rows += [f"note: {n}" for n in doc.get("notes", [])]
    return "\n".join(rows)


def _row(name: str, r: Mapping[str, Any]) -> str:
    cand = r["candidates"]
    cands = str(cand["high"]) if cand["low"] == cand["high"] else f"{cand['low']}-{cand['high']}"
    return (
        f"{name:<32} {r['samples']:>7} {cands:>5} {show_count(r['conversations']['expected']):>6} "
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

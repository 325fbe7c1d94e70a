"""The S0-S4 strategy study on a real local model: resumable runs, then E2E, metrics, cost and S1/S2's edits.

Runs ``python -m experiments`` once per (dataset, seed, strategy) on the bundled and replica datasets, each
into its own folder ``OUT/runs/<dataset>/seed<S>/<strategy>``, then analyses what exists without any model
call (S4 and the selectors are computed from the S3 runs' stored candidates):

    python -m agents.serve ... &        # or llama.cpp / vLLM / Ollama on an OpenAI-compatible port
    python perf/strategy_study.py --api-base http://127.0.0.1:8765/v1
    python perf/strategy_study.py --analyse                   # the tables and the figure only
    python perf/strategy_study.py --dry-run --api-base URL    # the commands only

- **Shared request cache.** S3, S0, S1 and S2 of one (dataset, seed) share
  ``OUT/cache/<dataset>-seed<S>.sqlite`` and S3 runs first: S0's candidate and S1/S2's first generation are
  S3's candidate 0 (same run seed, candidate index 0, sampling parameters and prompts:
  `strategies.mechanics.generate_many`, `agents.llm.agent._params`), so the cache answers them and only the
  revisions are bought. ``plans`` gets its own cache (its cost is bought).
- **Resumable.** A folder with ``run.json`` (a run's last write: `experiments.run.folder.HeldRun.finished`)
  is skipped; one that holds an unfinished run is resumed in place (``run.resume=true``). Each run's command,
  exit code and seconds are appended to ``OUT/study.jsonl``; a failed run (exit other than 0 and 3) is
  recorded and the study goes on.
- **Analysis** (``--analyse``: only this part): per strategy, E2E and the eleven metrics (mean over samples
  per dataset, as ``metrics.json`` holds them, then over seeds, then over datasets) with dataset-bootstrap
  95 % CIs; S4 by ``medstrat reselect RUN strategy=s4`` and the selectors by ``medstrat leaderboard`` on the
  S3 runs; cost as bought (from the agents' traces; a cache hit costs no second); per field, what S1/S2
  changed against S3's candidate 0 and whether the sample's scores rose or fell. Writes ``OUT/study.md`` and
  ``OUT/study.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from benchmark.score.constants import METRIC_NAMES
from experiments._config_path import config_dir
from experiments.publish.stats import bootstrap_ci
from experiments.run.folder import held_run
from experiments.stored.run_folder import CANDIDATES, RUN_INFO
from experiments.stored.sweep import RunData, load_runs

BUNDLED = ("synth-fundus-npy", "synth-chest-xray-dicom", "synth-dermoscopy-jpg", "synth-abdomen-nrrd")
"""Default bundled datasets: segmentation (.npy, NRRD 3D), detection (DICOM), classification (JPEG)."""
REPLICA = ("10602767_folder", "4975777_folder", "5002837_folder", "5005236_folder")
"""The replica suite's development datasets (conf/benchmark/replica.yaml)."""
STRATEGIES = ("s3", "s0", "s1", "s2", "plans")
SHARED_CACHE = ("s3", "s0", "s1", "s2")
"""Strategies whose first generation is S3's candidate 0: one request cache per (dataset, seed)."""
REVISERS = ("s1", "s2")
SELECTORS = ("validator_max", "first", "random", "majority")
"""Selectors ranked by ``medstrat leaderboard``; the oracle is its ``oracle_E2E`` column (the selector itself
reads ground truth and is refused there without ``analysis.oracle``)."""
N_BOOT = 2000
EXIT_OK, EXIT_INCOMPLETE = 0, 3
MODEL_AGENTS = ("local", "litellm")
"""Agents that call a model: they take ``agent.cache`` (and ``agent.api_base``)."""
ANNOTATIONS = "agent1_data_organization/standardized_annotations"


@dataclass(frozen=True)
class Job:
    """One run of the study.

    Attributes:
        suite: The benchmark config (``bundled`` or ``replica``).
        dataset: The one dataset it runs.
        seed: ``run.seed``.
        strategy: The strategy config name.
    """

    suite: str
    dataset: str
    seed: int
    strategy: str

    def run_dir(self, out: Path) -> Path:
        """``OUT/runs/<dataset>/seed<S>/<strategy>``."""
        return out / "runs" / self.dataset / f"seed{self.seed}" / self.strategy

    def cache(self, out: Path) -> Path:
        """The request cache: shared by S0-S3 of one (dataset, seed); a file of its own otherwise."""
        stem = f"{self.dataset}-seed{self.seed}"
        if self.strategy not in SHARED_CACHE:
            stem += f"-{self.strategy}"
        return out / "cache" / f"{stem}.sqlite"

    def label(self) -> str:
        """``dataset seed S strategy`` for progress lines."""
        return f"{self.dataset} seed{self.seed} {self.strategy}"


def jobs(args: argparse.Namespace) -> list[Job]:
    """Every run in making order: seed by seed (a study stopped early has whole seeds), the bundled and the
    replica datasets taking turns, per (dataset, seed) S3 first (the shared cache gets candidate 0)."""
    order = sorted(args.strategies, key=lambda s: (s != "s3", args.strategies.index(s)))
    bundled = [("bundled", d) for d in args.bundled]
    replica = [("replica", d) for d in args.replica]
    turns = [
        pair
        for i in range(max(len(bundled), len(replica)))
        for pair in (bundled[i : i + 1] + replica[i : i + 1])
    ]
    return [Job(suite, d, seed, s) for seed in args.seeds for suite, d in turns for s in order]


def command(args: argparse.Namespace, job: Job, *, resume: bool = False) -> list[str]:
    """The ``python -m experiments`` command line of one run."""
    cmd = [sys.executable, "-m", "experiments", f"strategy={job.strategy}", f"agent={args.agent}"]
    if args.agent in MODEL_AGENTS:
        if args.api_base:
            cmd.append(f"agent.api_base={args.api_base}")
        cmd.append(f"agent.cache={job.cache(args.out)}")
    cmd += [
        f"run.seed={job.seed}",
        f"benchmark={job.suite}",
        f"benchmark.datasets=[{job.dataset}]",
        f"benchmark.samples={args.samples}",
    ]
    if job.strategy in ("s3", "s4", "plans"):
        cmd.append(f"strategy.n={args.n}")
    cmd += ["run.report=false", f"hydra.run.dir={job.run_dir(args.out)}"]
    if resume:
        cmd.append("run.resume=true")
    return cmd


def strategy_available(name: str) -> bool:
    """Whether ``strategy=name`` has a config in this checkout."""
    return (config_dir() / "strategy" / f"{name}.yaml").is_file()


def _record(out: Path, entry: Mapping[str, Any]) -> None:
    with (out / "study.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")


def _clock(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(max(0.0, seconds)))


def run_study(args: argparse.Namespace) -> list[list[str]]:
    """Make every run not finished yet; return the commands issued (printed only with ``--dry-run``)."""
    todo = jobs(args)
    missing = sorted({j.strategy for j in todo if not strategy_available(j.strategy)})
    for name in missing:
        print(
            f"{name}: skipped (no conf/strategy/{name}.yaml in this checkout: "
            f"strategy={name} is not available)"
        )
    todo = [j for j in todo if j.strategy not in missing]
    issued: list[list[str]] = []
    made: list[float] = []
    for i, job in enumerate(todo, 1):
        run_dir = job.run_dir(args.out)
        held = held_run(run_dir)
        if held is not None and held.finished:
            print(f"[{i}/{len(todo)}] {job.label()}: finished before, skipped")
            continue
        cmd = command(args, job, resume=held is not None)
        issued.append(cmd)
        if args.dry_run:
            print(" ".join(cmd))
            continue
        job.cache(args.out).parent.mkdir(parents=True, exist_ok=True)
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=args.out, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        made.append(wall)
        status = {EXIT_OK: "ok", EXIT_INCOMPLETE: "incomplete"}.get(done.returncode, "failed")
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **job.__dict__,
            "run_dir": str(run_dir),
            "resumed": held is not None,
            "command": cmd,
            "exit": done.returncode,
            "status": status,
            "wall_s": round(wall, 2),
        }
        if status == "failed":
            entry["stderr_tail"] = done.stderr.strip()[-400:]
        _record(args.out, entry)
        left = sum(1 for j in todo[i:] if not _finished(j.run_dir(args.out)))
        eta = left * sum(made) / len(made)
        why = f": {done.stderr.strip().splitlines()[-1][:160]}" if status == "failed" and done.stderr else ""
        print(
            f"[{i}/{len(todo)}] {job.label()}: {status} (exit {done.returncode}) in {_clock(wall)}, "
            f"ETA {_clock(eta)} for {left} run(s){why}",
            flush=True,
        )
    return issued


def _finished(run_dir: Path) -> bool:
    held = held_run(run_dir)
    return held is not None and held.finished


# -- derived runs: S4 and the selectors, from the S3 runs' stored candidates (no model call) -----------------


def _medstrat(*args: str) -> list[str]:
    return [sys.executable, "-m", "experiments.cli", *args]


def derived(out: Path, *, dry_run: bool = False) -> list[list[str]]:
    """S4 per finished S3 run (``medstrat reselect RUN strategy=s4``) and the selector leaderboard."""
    issued: list[list[str]] = []
    s3_runs = sorted(p.parent for p in (out / "runs").glob(f"*/seed*/s3/{RUN_INFO}"))
    for s3 in s3_runs:
        target = out / "derived" / s3.parent.parent.name / s3.parent.name / "s4"
        if _finished(target):
            continue
        cmd = _medstrat("reselect", str(s3), "strategy=s4", "run.report=false", f"hydra.run.dir={target}")
        issued.append(cmd)
        if not dry_run:
            target.parent.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode not in (EXIT_OK, EXIT_INCOMPLETE):
                print(f"s4 of {s3}: reselect exit {done.returncode}: {done.stderr.strip()[-200:]}")
    if s3_runs:
        cmd = _medstrat(
            "leaderboard",
            *map(str, s3_runs),
            "--selectors",
            ",".join(SELECTORS),
            "--validators",
            "evidence",
            "--out",
            str(out / "leaderboard"),
        )
        issued.append(cmd)
        if not dry_run:
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != EXIT_OK:
                print(f"leaderboard: exit {done.returncode}: {done.stderr.strip()[-200:]}")
    return issued


# -- reading the runs --------------------------------------------------------------------------------------


@dataclass
class Cost:
    """Model calls of a run or a candidate: all of them, and those bought (not answered by the cache)."""

    calls: int = 0
    bought: int = 0
    prompt: int = 0
    completion: int = 0
    bought_prompt: int = 0
    bought_completion: int = 0
    seconds: float = 0.0
    """Seconds of the bought calls (a cache hit costs none)."""

    def __add__(self, other: Cost) -> Cost:
        return Cost(*(a + b for a, b in zip(self.__dict__.values(), other.__dict__.values(), strict=True)))


def trace_cost(folder: Path) -> Cost:
    """The model calls in the agent traces under ``folder`` (`agents.llm.conversation`'s ``model_call``)."""
    cost = Cost()
    if not folder.exists():
        return cost
    for path in sorted(folder.rglob("trace*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill: the rest counts
            if event.get("event") != "model_call":
                continue
            prompt, completion = (
                int(event.get("prompt_tokens") or 0),
                int(event.get("completion_tokens") or 0),
            )
            cost.calls += 1
            cost.prompt += prompt
            cost.completion += completion
            if not event.get("cached"):
                cost.bought += 1
                cost.bought_prompt += prompt
                cost.bought_completion += completion
                cost.seconds += float(event.get("latency_s") or 0.0)
    return cost


def _where(run: RunData) -> tuple[str, int]:
    """(dataset, seed) of a study run from its folder ``.../<dataset>/seed<S>/<strategy>``."""
    return run.run_dir.parent.parent.name, int(run.run_dir.parent.name.removeprefix("seed"))


def load_study(out: Path) -> list[RunData]:
    """Every finished run of the study and the derived S4 runs (the ablation's reader, `load_runs`)."""
    runs = [r for base in ("runs", "derived") if (out / base).is_dir() for r in load_runs(out / base)]
    return [r for r in runs if (r.run_dir / RUN_INFO).is_file()]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def metric_frame(runs: Sequence[RunData]) -> pd.DataFrame:
    """Per strategy: each metric's macro mean (samples, then seeds, then datasets) and E2E's bootstrap CI."""
    rows = []
    for strategy in _strategy_order(runs):
        members = [r for r in runs if r.strategy == strategy]
        row: dict[str, Any] = {"strategy": strategy, "datasets": 0, "runs": len(members)}
        for metric in METRIC_NAMES:
            per: dict[str, list[float]] = {}
            for run in members:
                for dataset, value in run.per_dataset(metric).items():
                    per.setdefault(dataset, []).append(value)
            per_dataset = {d: _mean(v) for d, v in per.items()}
            row[metric] = _mean(list(per_dataset.values()))
            row["datasets"] = len(per_dataset)
            lo, hi = bootstrap_ci(per_dataset, n_boot=N_BOOT, seed=0)
            row[f"{metric}_lo"], row[f"{metric}_hi"] = lo, hi
        rows.append(row)
    return pd.DataFrame(rows)


def dataset_frame(runs: Sequence[RunData], metric: str = "E2E") -> pd.DataFrame:
    """Per dataset (rows) and strategy (columns): ``metric``, mean over the seeds run, and the seeds."""
    rows = []
    for dataset in sorted({_where(r)[0] for r in runs}):
        row: dict[str, Any] = {"dataset": dataset}
        seeds: set[int] = set()
        for strategy in _strategy_order(runs):
            values = [
                v
                for r in runs
                if r.strategy == strategy and _where(r)[0] == dataset
                for v in r.per_dataset(metric).values()
            ]
            seeds |= {_where(r)[1] for r in runs if r.strategy == strategy and _where(r)[0] == dataset}
            row[strategy] = _mean(values)
        row["seeds"] = len(seeds)
        rows.append(row)
    return pd.DataFrame(rows)


def _strategy_order(runs: Sequence[RunData]) -> list[str]:
    names = {r.strategy for r in runs}
    known = ["s0", "s1", "s2", "s3", "s4", "plans"]
    return [s for s in known if s in names] + sorted(names - set(known))


def _candidate0(out: Path, dataset: str, seed: int) -> Path:
    return out / "runs" / dataset / f"seed{seed}" / "s3" / CANDIDATES / dataset / "0"


def cost_frame(out: Path, runs: Sequence[RunData]) -> pd.DataFrame:
    """Per strategy, per sample: calls, tokens and seconds as bought, and as the strategy alone would cost.

    As bought: the run's own uncached calls (S0 and S1/S2's first generation are S3's candidate 0 from the
    shared cache). The strategy's own cost adds, for S0/S1/S2, the bought cost of S3's candidate 0 where the
    run's candidate 0 was answered by the cache; S4 and the selectors cost what S3 did. A resumed run's calls
    made before it stopped come back from the cache at no cost: such runs are counted in ``resumed runs``.
    """
    resumed = _resumed(out)
    rows = []
    for strategy in _strategy_order(runs):
        bought, own, samples, again = Cost(), Cost(), 0, 0
        for run in (r for r in runs if r.strategy == strategy):
            dataset, seed = _where(run)
            samples += len(run.samples)
            again += str(run.run_dir) in resumed
            if strategy == "s4":  # a reselection: its candidates are the S3 run's, bought there
                own = own + trace_cost(run.run_dir / CANDIDATES)
                continue
            cost = trace_cost(run.run_dir / CANDIDATES)
            bought, own = bought + cost, own + cost
            first = run.run_dir / CANDIDATES / dataset / "0"
            if (
                strategy in ("s0", *REVISERS)
                and (first_cost := trace_cost(first)).calls
                and not first_cost.bought
            ):
                replayed = trace_cost(_candidate0(out, dataset, seed))
                own.seconds += replayed.seconds
                own.bought += replayed.bought
        n = max(samples, 1)
        rows.append(
            {
                "strategy": strategy,
                "samples": samples,
                "calls/sample": own.calls / n,
                "bought calls/sample": bought.bought / n,
                "prompt tok/sample": own.prompt / n,
                "completion tok/sample": own.completion / n,
                "bought prompt tok/sample": bought.bought_prompt / n,
                "bought completion tok/sample": bought.bought_completion / n,
                "bought s/sample": bought.seconds / n,
                "strategy s/sample": own.seconds / n,
                "resumed runs": again,
            }
        )
    return pd.DataFrame(rows)


def _resumed(out: Path) -> set[str]:
    """The run folders the study resumed (``study.jsonl``): their cost misses what was bought before."""
    path = out / "study.jsonl"
    if not path.is_file():
        return set()
    last = {}  # a run made again from scratch after a resumed attempt counts as its last attempt says
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            last[str(entry["run_dir"])] = bool(entry.get("resumed"))
    return {run for run, resumed in last.items() if resumed}


def selector_frame(out: Path) -> pd.DataFrame:
    """The leaderboard's rows (``selectors.csv``) with the oracle bound as a row of its own."""
    path = out / "leaderboard" / "selectors.csv"
    if not path.is_file():
        return pd.DataFrame()
    board = pd.read_csv(path)
    keep = ["selector", "E2E", "E2E_lo", "E2E_hi", "oracle_E2E", "gap_to_oracle", "n_datasets"]
    board = board[[c for c in keep if c in board.columns]]
    if "oracle_E2E" in board.columns and len(board):
        oracle = {"selector": "oracle (bound)", "E2E": board["oracle_E2E"].iloc[0], "gap_to_oracle": 0.0}
        board = pd.concat([board, pd.DataFrame([oracle])], ignore_index=True)
    return board


# -- what S1/S2 changed, per field -------------------------------------------------------------------------


def leaves(doc: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every leaf of a JSON document; a list is one leaf."""
    if isinstance(doc, dict) and doc:
        for key, value in doc.items():
            yield from leaves(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, doc


def _sample_score(row: Mapping[str, Any] | None) -> tuple[float, float] | None:
    """A sample's official scores as (E2E, mean of its numeric scores): what 'improved' compares."""
    scores = ((row or {}).get("scores") or {}).get("official")
    if not scores:
        return None
    numeric = [float(v) for k, v in scores.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    return float(bool(scores.get("e2e"))), _mean(numeric) if numeric else 0.0


@dataclass
class FieldChanges:
    """Per field: samples where it changed, and of those, where the sample's scores rose or fell."""

    changed: dict[str, int] = field(default_factory=dict)
    improved: dict[str, int] = field(default_factory=dict)
    worsened: dict[str, int] = field(default_factory=dict)


def _json_doc(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def field_changes(out: Path, runs: Sequence[RunData]) -> dict[str, FieldChanges]:
    """For each S1/S2 run: its selected annotations against S3's candidate 0, field by field.

    The per-sample scores of candidate 0 are the S0 run's rows of the same (dataset, seed): S0 is candidate 0.
    """
    by_where = {(r.strategy, *_where(r)): r for r in runs}
    result: dict[str, FieldChanges] = {}
    for strategy in REVISERS:
        changes = result.setdefault(strategy, FieldChanges())
        for (name, dataset, seed), run in sorted(by_where.items()):
            if name != strategy:
                continue
            base = _candidate0(out, dataset, seed) / ANNOTATIONS
            if not base.is_dir():
                continue
            s0 = by_where.get(("s0", dataset, seed))
            before = {(row["dataset"], int(row["index"])): row for row in (s0.samples if s0 else [])}
            for row in run.samples:
                stem = f"{int(row['index'])}.json"
                new = _json_doc(run.run_dir / "selected" / dataset / ANNOTATIONS / stem)
                old = _json_doc(base / stem)
                if new is None and old is None:
                    continue
                a, b = dict(leaves(old)), dict(leaves(new))
                fields = sorted(
                    p for p in a.keys() | b.keys() if a.get(p, "<absent>") != b.get(p, "<absent>")
                )
                was, now = _sample_score(before.get((dataset, int(row["index"])))), _sample_score(row)
                for path in fields:
                    changes.changed[path] = changes.changed.get(path, 0) + 1
                    if was is not None and now is not None and now != was:
                        bucket = changes.improved if now > was else changes.worsened
                        bucket[path] = bucket.get(path, 0) + 1
    return result


# -- the report ---------------------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def markdown(frame: pd.DataFrame) -> str:
    """A DataFrame as a Markdown table."""
    if frame.empty:
        return "(none)\n"
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"


def figure(metrics: pd.DataFrame, costs: pd.DataFrame, path: Path) -> None:
    """E2E per strategy with its dataset-bootstrap CI, and bought seconds per sample."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    names = list(metrics["strategy"])
    e2e = metrics["E2E"].to_numpy(dtype=float)
    lo = (e2e - metrics["E2E_lo"].to_numpy(dtype=float)).clip(min=0)
    hi = (metrics["E2E_hi"].to_numpy(dtype=float) - e2e).clip(min=0)
    left.bar(names, e2e, yerr=[lo, hi], capsize=4, color="tab:blue")
    left.set_ylim(0, 1.05)
    left.set_ylabel("E2E (official)")
    left.set_title(f"E2E, 95% dataset-bootstrap CI ({N_BOOT} draws)")
    seconds = costs.set_index("strategy").reindex(names)
    right.bar(names, seconds["strategy s/sample"].fillna(0.0), color="tab:orange", label="strategy")
    right.bar(names, seconds["bought s/sample"].fillna(0.0), color="tab:red", alpha=0.6, label="bought")
    right.set_ylabel("model seconds per sample")
    right.set_title("cost (cache hits cost 0 s)")
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def seconds_by_seed(out: Path, runs: Sequence[RunData]) -> pd.DataFrame:
    """Per strategy (rows) and seed (columns): `cost_frame`'s strategy seconds per sample."""
    columns = {}
    for seed in sorted({_where(r)[1] for r in runs}):
        frame = cost_frame(out, [r for r in runs if _where(r)[1] == seed])
        columns[f"seed {seed}"] = frame.set_index("strategy")["strategy s/sample"]
    return pd.DataFrame(columns).reset_index(names="strategy")


def analyse(out: Path) -> str:
    """Write ``OUT/study.md`` and ``OUT/study.png`` from the runs that exist; return the Markdown."""
    runs = load_study(out)
    if not runs:
        raise SystemExit(f"strategy_study: no finished run under {out / 'runs'}")
    metrics = metric_frame(runs)
    costs = cost_frame(out, runs)
    e2e = metrics[["strategy", "datasets", "runs", "E2E", "E2E_lo", "E2E_hi"]]
    parts = [
        "# Strategy study\n",
        f"Runs under `{out}`; E2E and metrics: official profile, mean over samples (per dataset), seeds, "
        f"then datasets; 95 % CI: percentile bootstrap over datasets ({N_BOOT} draws, seed 0). S4 is "
        "`medstrat reselect <S3 run> strategy=s4` (no model call).\n",
        "## E2E per strategy\n",
        markdown(e2e),
        "## The eleven metrics\n",
        markdown(metrics[["strategy", *METRIC_NAMES]]),
        "## Per dataset: E2E, SC and CF of each strategy (mean over seeds)\n",
        markdown(dataset_frame(runs, "E2E")),
        markdown(dataset_frame(runs, "SC")),
        markdown(dataset_frame(runs, "CF")),
        "## Cost per sample\n",
        "Bought: the run's own uncached calls (shared cache: S0 and S1/S2's first generation are S3's "
        "candidate 0). Strategy: what the strategy alone costs (S0/S1/S2 with S3's candidate 0; S4 = S3).\n",
        markdown(costs),
        "Strategy seconds per sample by seed (a seed run beside other work on the machine is slower):\n",
        markdown(seconds_by_seed(out, runs)),
        "## Selectors on the S3 candidates (`medstrat leaderboard`, validator evidence)\n",
        markdown(selector_frame(out)),
    ]
    for strategy, changes in field_changes(out, runs).items():
        rows = [
            {
                "field": path,
                "changed": count,
                "improved": changes.improved.get(path, 0),
                "worsened": changes.worsened.get(path, 0),
            }
            for path, count in sorted(changes.changed.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        parts += [
            f"## What {strategy.upper()} changed against S3's candidate 0, per field\n",
            "Samples where the field differs; improved/worsened: the sample's official (E2E, mean score) "
            "against S0's row (S0 is candidate 0).\n",
            markdown(pd.DataFrame(rows)),
        ]
    text = "\n".join(parts)
    (out / "study.md").write_text(text, encoding="utf-8")
    figure(metrics, costs, out / "study.png")
    return text


def _commands(out: Path) -> list[str]:
    """The run commands the study issued (``study.jsonl``), each once."""
    path = out / "study.jsonl"
    seen: dict[str, None] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            seen[" ".join(entry["command"])] = None
    return list(seen)


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--api-base", default=None, help="the model server, e.g. http://127.0.0.1:8765/v1")
    parser.add_argument("--out", type=Path, default=Path("perf/out/study"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--samples", type=int, default=3, help="benchmark.samples: samples per dataset")
    parser.add_argument("--n", type=int, default=3, help="candidates of S3 (and S4) and plans' sampled plans")
    parser.add_argument("--bundled", nargs="*", default=list(BUNDLED), help="bundled suite datasets")
    parser.add_argument("--replica", nargs="*", default=list(REPLICA), help="replica suite datasets")
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--agent", default="local", help="agent config (rules: offline)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    parser.add_argument("--analyse", action="store_true", help="only the analysis of what exists")
    args = parser.parse_args(argv)
    if args.agent == "local" and not args.api_base and not args.analyse:
        parser.error("--api-base is required with --agent local")
    args.out = args.out.resolve()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the study (unless ``--analyse``), the derived S4 runs and leaderboard, then the analysis."""
    args = parse(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if not args.analyse:
        run_study(args)
    extra = derived(args.out, dry_run=args.dry_run)
    if args.dry_run:
        for cmd in extra:
            print(" ".join(cmd))
        return 0
    print(analyse(args.out))
    print("## Commands the study ran\n")
    for line in _commands(args.out) + [" ".join(cmd) for cmd in extra]:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Our run against bare ``litellm.acompletion``, side by side, when the model is slow (issues 7 and 16).

Ours. ``run_experiment`` (the very code ``python -m experiments`` runs: Hydra config, ``run.concurrency``
candidates in flight, ``run.processes`` worker processes, the validator pool, export and scoring) with
``strategy=s3 strategy.n=N agent=litellm`` against the fake OpenAI server, which answers every request after
a fixed latency and runs in its own process (a real provider does not share the client's CPU). Every
candidate walks the same short conversation, built from the rules baseline's outputs
(`testbed.fakeserver.replay`): turn 1 renders every image (and mask), turn 2 writes every annotation, turn 3
writes ``data_meta.json`` and calls ``finish`` — a minimal valid candidate in ``T = 3`` model calls.

Bare. The server records every request body of our run. They are grouped back into conversations (a request
at turn t+1 extends one at turn t) and replayed with nothing but ``litellm.acompletion`` (same body: model,
messages, tools, sampling parameters; the same per-call pricing arguments our client passes) against a fresh
server with the same latency and the same answers, split the way the run splits its work: the same number of
client processes, datasets spread over them by work, each process with its share of the total concurrency
(a semaphore held for a whole conversation, as the run holds it for a whole candidate), a conversation's calls
in sequence. The bare clients are forked from the script's process once it has imported litellm and made its
first calls (LiteLLM's first call in a process costs ~0.4 s of CPU; our run's process is warm too), and
start sending together, on a signal.

Figures, per (latency, processes): model calls per second over the model-call phase on the server's clock
(first request's arrival to the last answer), for ours and for bare; ``ours / bare`` (target >= 0.90 at
200 ms); and the latency bound. The runner starts every candidate at once and each process lets its
share ``C_p`` of them talk to the model at a time; a candidate's calls are sequential. So the phase cannot
end before

    bound = T x L x max_p ceil(D_p x N / C_p)

(``L`` latency per call, ``D_p`` datasets of process p, ``N`` candidates each; the default 10 x 5 = 50
candidates fit in one wave of 64). ``bound / phase`` is 1.0 when no time is lost beyond the latency
(target >= 0.90 at 2 s). CPU: every client process's CPU during the phase (read from ``/proc``), and for the
main process the split by thread group: the event loop (LiteLLM's async path, our agent loop, strategy
code), LiteLLM's worker-thread hop, our tool pool, the validator pool, the rest.

``--light`` replaces the three turns by ``list_dir``, ``list_dir``, ``finish`` (no file written, so the
candidates end as failed and nothing is selected): the same scheduling with almost no tool work.

``--workdir`` puts the generated suite and our runs' folders elsewhere than the system temp folder (our
run writes every candidate's files, bare LiteLLM none, and on some disks creating a file costs 50x what it
costs on tmpfs: the script prints the probe of `perf/fs_probe.py` for the folder it used).
``--override KEY=VALUE`` adds a config override to our run (e.g. ``agent.tool_processes=1``).

    PYTHONPATH=. python perf/concurrency.py [--latency 0.2] [--second-latency 2.0] [--processes 1 2]
        [--concurrency 64] [--n 5] [--datasets 10] [--repeats 1] [--light] [--workdir DIR]
        [--override KEY=VALUE ...] [--json] [--figure PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tqdm

from testbed.fakeserver import (
    Reply,
    TurnScript,
    assistant_turn,
    tool_call,
)
from testbed.fakeserver.replay import replay_script

# perf/ is a folder of scripts: its sibling modules are importable when the script runs (sys.path[0]) and,
# for the tests that load it by path, once this folder is on sys.path.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from concurrency_figure import figure
from concurrency_replay import (
    API_KEY,
    MODEL,
    TIMEOUT_S,
    USAGE,
    Body,
    bound,
    close_loop,
    conversations,
    expect,
    our_pricing,
    replay_worker,
    split,
    warm_up,
)
from concurrency_replay import turn_of as turn_of  # re-exported: tests read the turn of a request here
from concurrency_server import Dispatch, ServerProcess
from cpu_sampler import CpuSampler
from fs_probe import describe

# Ten datasets whose raw files render in milliseconds. Even so, a candidate's tool work (about ten renders
# with PNG encoding, ten annotation writes with schema checks) is ~50-75 ms of CPU, i.e. ~3-4 s for 50
# candidates: at 200 ms latency that alone exceeds the bound on 2 cores (the "our tools" column), which is
# why ``--light`` exists.
# ``--datasets K`` takes the first K: the cheapest to generate and replay come first (the test uses 2).
DATASETS = (
    "synth-histology-png",
    "synth-fundus-npy",
    "synth-hand-xray-pgm",
    "synth-thyroid-us-bmp",
    "synth-chest-xray-dicom",
    "synth-dermoscopy-jpg",
    "synth-elastography-mat",
    "synth-glioma-h5",
    "synth-organ-npz-shards",
    "synth-polyp-coco-png",
    "synth-knee-mr-mat73",
    "synth-nuclei-tiff16",
)
TURNS = 3


def light_script() -> TurnScript:
    """Three turns with next to no tool work: two folder listings and ``finish``."""
    listing = tool_call("list_dir", {"path": "data"}, "list")
    turns = [assistant_turn(listing), assistant_turn(listing), assistant_turn(tool_call("finish", {}, "end"))]
    return TurnScript([Reply(s.content, s.tool_calls, USAGE) for s in turns])


def short_script(dataset_root: Path, work_dir: Path) -> TurnScript:
    """Three turns that write the rules baseline's candidate: renders; annotations; meta and finish."""
    replay = replay_script(dataset_root, work_dir=work_dir, check=False)
    renders, writes = [], []
    for step in replay.steps:
        assert isinstance(step, Reply)
        for call in step.tool_calls:
            name = call["function"]["name"]
            if name == "render":
                renders.append(call)
            elif name == "write_annotation":
                writes.append(call)
    tail = [c for c in replay.steps[-2].tool_calls + replay.steps[-1].tool_calls]  # type: ignore[union-attr]
    turns = [assistant_turn(*renders), assistant_turn(*writes), assistant_turn(*tail)]
    return TurnScript([Reply(s.content, s.tool_calls, USAGE) for s in turns])


def _has_processes_key() -> bool:
    """Whether this checkout's config has ``run.processes`` (issue 16, item 1)."""
    from experiments import compose_config

    return "processes" in compose_config([]).run


def _config(
    root: Path, url: str, n: int, concurrency: int, processes: int | None, extra: Sequence[str] = ()
) -> Any:
    from experiments import compose_config

    overrides = [
        "strategy=s3",
        f"strategy.n={n}",
        "agent=litellm",
        f"agent.model={MODEL}",
        f"agent.api_base={url}",
        f"+agent.api_key={API_KEY}",
        "agent.vision=true",
        "agent.batch_size=1000",  # the scripted conversations are one per dataset (three turns)
        f"+agent.timeout_s={TIMEOUT_S}",
        "benchmark=dir",
        f"benchmark.root={root}",
        f"run.concurrency={concurrency}",
        "run.progress=false",
        "run.report=false",
    ]
    if processes is not None:
        overrides.append(f"run.processes={processes}")
    return compose_config([*overrides, *extra])


# ------------------------------------------------------------------------------------------ the two sides


@dataclass
class Side:
    """One side's numbers for one (latency, processes) point.

    Attributes:
        calls: Chat-completion requests the server received.
        phase_s: First arrival to last answer, server clock.
        cpu_s: CPU seconds per client process during the phase.
        bodies: The request bodies, in arrival order (not printed).
    """

    calls: int
    phase_s: float
    cpu_s: dict[str, float]
    bodies: list[Body] = field(repr=False, default_factory=list)

    @property
    def throughput(self) -> float:
        """Model calls per second over the phase."""
        return self.calls / self.phase_s if self.phase_s > 0 else math.inf

    def cpu_ms_per_call(self) -> float:
        """All client processes' CPU in the phase, per model call."""
        return sum(self.cpu_s.values()) / max(1, self.calls) * 1000


@dataclass
class Comparison:
    """Ours and bare at one latency and process count."""

    latency_s: float
    processes: int
    ours_processes: int
    concurrency: int
    shares: list[int]
    candidates: int
    bound_s: float
    ours: Side
    bare: Side
    groups: dict[str, float]
    wall_s: float
    e2e: float
    incomplete: bool

    @property
    def ratio(self) -> float:
        """Our throughput over bare LiteLLM's (target >= 0.90)."""
        return self.ours.throughput / self.bare.throughput

    @property
    def bound_ratio(self) -> float:
        """Latency bound over our measured phase (target >= 0.90 at 2 s)."""
        return self.bound_s / self.ours.phase_s

    @property
    def bare_bound_ratio(self) -> float:
        """Latency bound over bare LiteLLM's measured phase."""
        return self.bound_s / self.bare.phase_s

    @property
    def bound_throughput(self) -> float:
        """Model calls per second if only the latency counted."""
        return self.ours.calls / self.bound_s if self.bound_s > 0 else math.inf


def measure_bare(
    chains: Sequence[list[Body]],
    scripts: Mapping[str, TurnScript],
    latency: float,
    processes: int,
    concurrency: int,
    pricing: Mapping[str, float],
) -> Side:
    """Replay the conversations with bare ``litellm.acompletion`` in ``processes`` client processes.

    The clients are forked from this process, which has imported litellm and made its first calls, so
    they start warm, as our run's process is; they start sending together, on a signal.
    """
    plan = split(chains, processes, concurrency)
    ctx = multiprocessing.get_context("fork")
    with ServerProcess(Dispatch(scripts), latency) as server:
        workers = []
        for share, convs in plan:
            job = {"url": server.url, "share": share, "conversations": convs, "pricing": dict(pricing)}
            parent, child = ctx.Pipe()
            process = ctx.Process(target=replay_worker, args=(job, child), daemon=True)
            process.start()
            workers.append((process, parent))
        results: list[dict[str, Any]] = []
        try:
            for _, conn in workers:
                expect(conn, "ready")
            for _, conn in workers:  # all start together
                conn.send("go")
            for _, conn in workers:
                results.append(expect(conn, "result"))
        finally:
            for process, _ in workers:
                process.join(timeout=30)
                if process.is_alive():
                    process.kill()
    first, last = server.phase(latency)
    return Side(
        calls=len(server.bodies),
        phase_s=last - first,
        cpu_s={f"worker {k + 1}": r["cpu_s"] for k, r in enumerate(results)},
        bodies=server.bodies,
    )


@dataclass
class Workload:
    """The generated suite and the server scripts, built once and shared by every measurement."""

    root: Path
    names: list[str]
    n: int
    scripts: dict[str, TurnScript]
    tmp: Path
    light: bool
    runs: int = 0
    overrides: tuple[str, ...] = ()


def workload(tmp: Path, names: Sequence[str], n: int, light: bool, overrides: Sequence[str] = ()) -> Workload:
    """Generate the suite (only ``names``) and build each dataset's three-turn script.

    ``overrides`` are extra config overrides for our run (``--override``), e.g. ``agent.tool_processes=1``.
    """
    from testbed.synth.suite import generate_suite

    root = tmp / "suite"
    generate_suite(root, size="small", only=list(names))
    scripts = {
        name: light_script() if light else short_script(root / name, tmp / "rules" / name) for name in names
    }
    return Workload(root, list(names), n, scripts, tmp, light, overrides=tuple(overrides))


def measure_ours(
    work: Workload, latency: float, processes: int, concurrency: int, pass_processes: bool
) -> tuple[Side, dict[str, float], float, Any]:
    """Run S3 through ``run_experiment`` against the fake server at ``latency``.

    Returns:
        Our side, the main process's CPU per thread group in the phase, the run's wall time, its outcome
        (None for ``--light``, whose candidates write nothing).
    """
    from experiments.run.experiment import NothingProduced, run_experiment

    work.runs += 1
    if threading.active_count() > 1:
        names = ", ".join(t.name for t in threading.enumerate() if t is not threading.current_thread())
        print(f"NOTE: threads before our run ({names}): run.processes would not fork its workers")
    with ServerProcess(Dispatch(work.scripts), latency) as server:
        cfg = _config(
            work.root, server.url, work.n, concurrency, processes if pass_processes else None, work.overrides
        )
        with CpuSampler(exclude=[server.pid], threads=not (pass_processes and processes > 1)) as sampler:
            start = time.perf_counter()
            try:
                outcome = run_experiment(cfg, work.tmp / f"run-{work.runs}")
            except NothingProduced:
                if not work.light:
                    raise
                outcome = None  # --light writes nothing by design; the phase is what is measured
            wall = time.perf_counter() - start
    first, last = server.phase(latency)
    per_process, groups = sampler.between(first, last)
    return Side(len(server.bodies), last - first, per_process, server.bodies), groups, wall, outcome


def compare(
    work: Workload, latency: float, processes: int, concurrency: int, pass_processes: bool
) -> Comparison:
    """Ours, then bare LiteLLM replaying the requests ours sent, at one latency and process count."""
    ours, groups, wall, outcome = measure_ours(work, latency, processes, concurrency, pass_processes)
    chains = conversations(ours.bodies)
    plan = split(chains, processes, concurrency)
    bare = measure_bare(chains, work.scripts, latency, processes, concurrency, our_pricing())
    return Comparison(
        latency_s=latency,
        processes=processes,
        ours_processes=processes if pass_processes else 1,
        concurrency=concurrency,
        shares=[share for share, _ in plan],
        candidates=len(chains),
        bound_s=bound(latency, plan),
        ours=ours,
        bare=bare,
        groups=groups,
        wall_s=wall,
        e2e=math.nan if outcome is None else outcome.metrics["official"]["macro"].get("E2E", math.nan),
        incomplete=outcome is None or outcome.incomplete,
    )


# ------------------------------------------------------------------------------------------------ output


def _cpu_text(side: Side) -> str:
    per_call = 1000 / max(1, side.calls)
    return ", ".join(f"{name} {cpu:.2f} s ({cpu * per_call:.1f} ms/call)" for name, cpu in side.cpu_s.items())


def report(c: Comparison, n_datasets: int, n: int) -> None:
    """Print one comparison."""
    head = f"-- latency {c.latency_s * 1000:.0f} ms, {c.processes} process(es) --"
    print(f"\n{head}")
    if c.ours_processes != c.processes:
        print(f"NOTE: run.processes is not in this checkout's config: ours ran in {c.ours_processes} process")
    print(
        f"workload:                   {n_datasets} datasets x {n} candidates = {c.candidates} conversations, "
        f"concurrency {c.concurrency} (per process {'+'.join(map(str, c.shares))})"
    )
    print(f"model calls:                ours {c.ours.calls}, bare {c.bare.calls}")
    print(
        f"model-call phase:           ours {c.ours.phase_s:.3f} s, bare {c.bare.phase_s:.3f} s, "
        f"latency bound {c.bound_s:.3f} s  (server clock: first request to last answer)"
    )
    print(
        f"throughput (calls/s):       ours {c.ours.throughput:.1f}, bare {c.bare.throughput:.1f}, "
        f"latency bound {c.bound_throughput:.1f}"
    )
    print(f"ours / bare litellm:        {c.ratio:.3f}   (target >= 0.90 at 200 ms)")
    print(
        f"ratio (bound / measured):   {c.bound_ratio:.3f}   (bare litellm {c.bare_bound_ratio:.3f}; "
        "target >= 0.90 at 2 s)"
    )
    print(f"CPU in the phase, ours:     {_cpu_text(c.ours)}")
    per_call = 1000 / max(1, c.ours.calls)
    other = c.ours.cpu_s.get("main", 0.0) - sum(c.groups.values())
    if c.groups:  # sampled by thread only when ours ran in this process
        print(
            "  main process by thread:   "
            + ", ".join(f"{g} {v * per_call:.1f}" for g, v in c.groups.items())
            + f", other {other * per_call:.1f} ms/call"
        )
    print(f"CPU in the phase, bare:     {_cpu_text(c.bare)}")
    print(f"whole run wall time (ours): {c.wall_s:.3f} s (validation, selection, export, scoring included)")
    print(f"official macro E2E (ours):  {c.e2e:.4f}; incomplete={c.incomplete}")


def _finite(value: float) -> float | None:
    """Rounded, or None for the infinite throughput of a zero latency bound (JSON has no infinity)."""
    return round(value, 4) if math.isfinite(value) else None


def summarize(results: Sequence[Comparison]) -> list[dict[str, Any]]:
    """Medians over repeats, one entry per (latency, processes)."""
    keys = sorted({(c.latency_s, c.processes) for c in results})
    out = []
    for latency, processes in keys:
        runs = [c for c in results if (c.latency_s, c.processes) == (latency, processes)]

        def med(values: Sequence[float]) -> float:
            return round(statistics.median(values), 4)

        out.append(
            {
                "latency_s": latency,
                "processes": processes,
                "ours_processes": runs[0].ours_processes,
                "concurrency": runs[0].concurrency,
                "shares": runs[0].shares,
                "candidates": runs[0].candidates,
                "calls": runs[0].ours.calls,
                "bare_calls": runs[0].bare.calls,
                "repeats": len(runs),
                "bound_s": round(runs[0].bound_s, 4),
                "ours_calls_per_s": med([c.ours.throughput for c in runs]),
                "bare_calls_per_s": med([c.bare.throughput for c in runs]),
                "bound_calls_per_s": _finite(runs[0].bound_throughput),
                "ours_over_bare": med([c.ratio for c in runs]),
                "bound_ratio": med([c.bound_ratio for c in runs]),
                "bare_bound_ratio": med([c.bare_bound_ratio for c in runs]),
                "ours_cpu_ms_per_call": med([c.ours.cpu_ms_per_call() for c in runs]),
                "bare_cpu_ms_per_call": med([c.bare.cpu_ms_per_call() for c in runs]),
                "runs": [
                    {
                        "ours_calls_per_s": round(c.ours.throughput, 3),
                        "bare_calls_per_s": round(c.bare.throughput, 3),
                        "ours_cpu_s": {k: round(v, 3) for k, v in c.ours.cpu_s.items()},
                        "bare_cpu_s": {k: round(v, 3) for k, v in c.bare.cpu_s.items()},
                    }
                    for c in runs
                ],
            }
        )
    return out


def main(argv: list[str] | None = None) -> list[Comparison]:
    """Measure ours and bare LiteLLM side by side and print the figures.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        Every comparison made (repeats included), request bodies attached.
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call (the headline)")
    parser.add_argument(
        "--second-latency", type=float, default=2.0, help="a second run at this latency (0: skip)"
    )
    parser.add_argument(
        "--processes", type=int, nargs="+", default=[1], help="client processes (ours: run.processes)"
    )
    parser.add_argument("--concurrency", type=int, default=64, help="run.concurrency (candidates in flight)")
    parser.add_argument("--n", type=int, default=5, help="candidates per dataset (S3 n)")
    parser.add_argument("--datasets", type=int, default=10, help=f"how many of {len(DATASETS)} datasets")
    parser.add_argument("--repeats", type=int, default=1, help="interleaved rounds; medians are printed")
    parser.add_argument("--light", action="store_true", help="turns without file work (see above)")
    parser.add_argument(
        "--workdir",
        type=Path,
        help="folder for the suite and our runs' files (default: the system temp folder); see fs_probe.py",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra config override for our run (repeatable), e.g. agent.tool_processes=1",
    )
    parser.add_argument("--json", action="store_true", help="end with one JSON summary line")
    parser.add_argument("--figure", type=Path, help="write the bar chart (PNG) here")
    args = parser.parse_args(argv)
    if min(args.processes) < 1 or args.concurrency < 1 or args.n < 1 or args.repeats < 1:
        parser.error("--processes, --concurrency, --n and --repeats must be >= 1")
    if not 1 <= args.datasets <= len(DATASETS):
        parser.error(f"--datasets must be between 1 and {len(DATASETS)}")
    if args.workdir is not None and not args.workdir.is_dir():
        parser.error(f"--workdir {args.workdir}: not a folder")
    for override in args.override:
        if "=" not in override:
            parser.error(f"--override {override!r}: expected KEY=VALUE")

    # One-off costs (the import, LiteLLM's first call) are paid here, as the bare workers pay theirs
    # before their start signal: the figures compare the steady state.
    loop = asyncio.new_event_loop()
    warm_up(loop, our_pricing())
    close_loop(loop)
    # No tqdm monitor thread: one left behind by a run would make the next run's `run.processes` start its
    # workers from a fork server instead of forking them (it forks only a single-threaded process), which a
    # fresh `python -m experiments` would not do.
    tqdm.tqdm.monitor_interval = 0
    load_before = os.getloadavg()
    has_key = _has_processes_key()
    latencies = [args.latency] + ([args.second_latency] if args.second_latency > 0 else [])
    names = list(DATASETS[: args.datasets])
    results: list[Comparison] = []
    with tempfile.TemporaryDirectory(prefix="perf-concurrency-", dir=args.workdir) as tmp:
        probe = describe(tmp)
        print(probe + (f"; our run's overrides: {' '.join(args.override)}" if args.override else ""))
        work = workload(Path(tmp), names, args.n, args.light, args.override)
        for _ in range(args.repeats):
            for latency in latencies:
                for processes in args.processes:
                    comparison = compare(work, latency, processes, args.concurrency, has_key)
                    report(comparison, len(names), args.n)
                    results.append(comparison)
    summary = summarize(results)
    load = os.getloadavg()
    print(f"\nload average {load_before[0]:.1f} before, {load[0]:.1f} after (1 min)")
    for s in summary:
        print(
            f"median of {s['repeats']}: latency {s['latency_s'] * 1000:.0f} ms, "
            f"{s['processes']} process(es): "
            f"ours/bare {s['ours_over_bare']:.3f}, bound/measured {s['bound_ratio']:.3f} "
            f"(bare {s['bare_bound_ratio']:.3f}); calls/s ours {s['ours_calls_per_s']:.1f}, "
            f"bare {s['bare_calls_per_s']:.1f}, bound {s['bound_calls_per_s'] or math.inf:.1f}"
        )
    if args.figure is not None:
        figure(summary, args.figure, load)
        print(f"figure: {args.figure}")
    if args.json:
        line = {
            "script": "concurrency.py",
            "load_average": [round(load_before[0], 2), round(load[0], 2)],
            "run_processes_key": has_key,
            "light": args.light,
            "workdir": probe,
            "overrides": args.override,
            "results": summary,
        }
        print(json.dumps(line, separators=(",", ":")))
    return results


if __name__ == "__main__":
    try:
        main()
    except (RuntimeError, ValueError) as exc:  # a failed measurement: one line, no traceback
        raise SystemExit(f"perf/concurrency.py: {exc}") from None

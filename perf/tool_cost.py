"""CPU of each tool of `perf/concurrency.py`'s short script, timed in isolation (issue 16).

Builds the same three-turn script per dataset as ``perf/concurrency.py`` (turn 1 renders every image and mask,
turn 2 writes every annotation, turn 3 writes ``data_meta.json`` and calls ``finish``), then runs its tool
calls through the agent's own `ToolBox` (argument validation, sandbox, the tool, the result JSON), one after
another in this thread, with no model, no event loop and no other work. Each of ``--repeats`` repeats (after
a warm-up) runs the script twice, each time into a fresh candidate folder: "first" with the process's render
cache emptied (`agents.tools.render_cache`: the first candidate to render these files), then "again" (a
later candidate rendering the same files the same way). The median thread CPU time (user + system) of each
call is kept. Printed: per tool, the number of calls per candidate (mean over the datasets), the median ms
per call and the ms per candidate, first and again; and the tool CPU per model call (``T = 3`` calls per
candidate) of ``--n`` candidates per dataset walking the same script (one first, n - 1 again), the "our
tools" figure of ``perf/concurrency.py``.

``--profile`` also prints the top functions (cProfile, cumulative time) of one pass over every dataset.
``--full`` times the whole replay of the rules baseline instead (`testbed.fakeserver.replay`: ``inspect``,
``render``, ``view_image`` per sample, then the writes), the tools a real conversation uses.

``--workdir DIR`` puts the suite and the candidate folders in DIR (default: the system temp folder); the
folder's file-creation cost (`perf/fs_probe.py`) is printed with the table.

    PYTHONPATH=. python perf/tool_cost.py [--repeats 15] [--datasets 10] [--n 5] [--profile] [--full]
        [--workdir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from agents.base import Task
from agents.tools.sandbox import Sandbox
from agents.tools.tools import ToolBox
from testbed.fakeserver.replay import replay_script

# The workload is the sibling script's (perf/ is not a package): one definition of the short script.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from concurrency import DATASETS, TURNS, short_script
from fs_probe import describe


def _calls(dataset_root: Path, work_dir: Path, full: bool = False) -> list[tuple[str, str]]:
    """The short script's tool calls (or the whole replay's), in order, as ``(name, argument JSON)``."""
    script = (
        replay_script(dataset_root, work_dir=work_dir, check=False)
        if full
        else short_script(dataset_root, work_dir)
    )
    return [
        (call["function"]["name"], call["function"]["arguments"])
        for step in script.steps
        for call in step.tool_calls  # type: ignore[union-attr]
    ]


def _task(root: Path, out_dir: Path) -> Task:
    from benchmark.discover import Dataset

    return Task.from_dataset(Dataset.from_root(root), out_dir)


def _clear_renders() -> None:
    """Empty the process's render cache (absent before it existed: then a no-op, for before/after runs)."""
    try:
        from agents.tools.render_cache import RENDERS
    except ImportError:
        return
    RENDERS.clear()


def time_dataset(
    root: Path, work: Path, repeats: int, full: bool = False
) -> dict[str, tuple[list[float], list[float]]]:
    """Median thread-CPU seconds of every tool call of one dataset's script, grouped by tool name.

    Each repeat runs the script twice, each time into a fresh candidate folder: first with the render cache
    emptied (the first candidate to render these files), then again (a later candidate: the same renders
    are cache hits).

    Args:
        root: The dataset root.
        work: A scratch folder.
        repeats: Timed repeats (after one untimed warm-up).
        full: Time the whole replay of the rules baseline (``inspect`` and ``view_image`` included).

    Returns:
        Tool name → (the median CPU seconds of each of its calls on the first pass, on the second pass).
    """
    calls = _calls(root, work / "rules", full)
    samples: list[tuple[list[float], list[float]]] = [([], []) for _ in calls]
    for repeat in range(repeats + 1):
        _clear_renders()
        for again in (0, 1):
            # A fresh candidate folder per pass, as in a run: every file is created, none replaced (replacing
            # an existing file costs more on ext4, which flushes the new data on such a rename).
            task = _task(root, work / f"candidate{repeat}-{again}")
            toolbox = ToolBox(task, Sandbox(task.root, task.output_dir), vision=True)
            for k, (name, arguments) in enumerate(calls):
                start = time.thread_time()
                result = toolbox.run(name, arguments)
                spent = time.thread_time() - start
                if result.error is not None:
                    raise SystemExit(f"{root.name}: {name} failed: {result.text}")
                if repeat:
                    samples[k][again].append(spent)
    by_tool: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for (name, _), (first, second) in zip(calls, samples, strict=True):
        by_tool[name][0].append(statistics.median(first))
        by_tool[name][1].append(statistics.median(second))
    return dict(by_tool)


def main(argv: list[str] | None = None) -> int:
    """Time the tools and print the table.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        0.
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15, help="timed repeats per dataset (median kept)")
    parser.add_argument("--datasets", type=int, default=10, help=f"how many of {len(DATASETS)} datasets")
    parser.add_argument("--n", type=int, default=5, help="candidates per dataset for the mixed figure")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of one first pass")
    parser.add_argument(
        "--workdir", type=Path, help="folder for the suite and candidates (default: system temp); fs_probe.py"
    )
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    parser.add_argument(
        "--full", action="store_true", help="the whole replay of the rules baseline (inspect, view_image ...)"
    )
    args = parser.parse_args(argv)

    from testbed.synth.suite import generate_suite

    names = list(DATASETS[: args.datasets])
    per_tool: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    if args.workdir is not None and not args.workdir.is_dir():
        parser.error(f"--workdir {args.workdir}: not a folder")
    with tempfile.TemporaryDirectory(prefix="perf-tool-cost-", dir=args.workdir) as tmp:
        probe = describe(tmp)
        suite = Path(tmp) / "suite"
        generate_suite(suite, size="small", only=names)
        for name in names:
            timed = time_dataset(suite / name, Path(tmp) / name, args.repeats, args.full)
            for tool, (first, second) in timed.items():
                per_tool[tool][0].extend(first)
                per_tool[tool][1].extend(second)
        if args.profile:
            _profile(suite, names, Path(tmp), args.full)
    rows = {
        tool: {
            "calls_per_candidate": len(first) / len(names),
            "ms_per_call_first": 1000 * statistics.median(first),
            "ms_per_call_again": 1000 * statistics.median(second),
            "ms_per_candidate_first": 1000 * sum(first) / len(names),
            "ms_per_candidate_again": 1000 * sum(second) / len(names),
        }
        for tool, (first, second) in per_tool.items()
    }
    first_total = sum(r["ms_per_candidate_first"] for r in rows.values())
    again_total = sum(r["ms_per_candidate_again"] for r in rows.values())
    # perf/concurrency.py's n candidates per dataset walk the same script: one first pass, n - 1 again.
    mixed = (first_total + (args.n - 1) * again_total) / args.n
    summary = {
        "load_average": os.getloadavg()[0],
        "workdir": probe,
        "tools": rows,
        "ms_per_candidate_first": first_total,
        "ms_per_candidate_again": again_total,
        f"ms_per_model_call_n{args.n}": mixed / TURNS,
    }
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"load average {os.getloadavg()[0]:.2f}; {len(names)} datasets; median of {args.repeats} repeats")
    print(probe)
    print(f"{'':<18}{'':>11}{'ms per call':>18}{'ms per candidate':>20}")
    print(f"{'tool':<18}{'calls/cand':>11}{'first':>9}{'again':>9}{'first':>10}{'again':>10}")
    for tool, r in rows.items():
        print(
            f"{tool:<18}{r['calls_per_candidate']:>11.1f}{r['ms_per_call_first']:>9.2f}"
            f"{r['ms_per_call_again']:>9.2f}{r['ms_per_candidate_first']:>10.2f}{r['ms_per_candidate_again']:>10.2f}"
        )
    print(f"{'total':<18}{'':>11}{'':>9}{'':>9}{first_total:>10.2f}{again_total:>10.2f}")
    if not args.full:
        print(
            f"per model call (T = {TURNS}), n = {args.n} candidates per dataset "
            f"(1 first, {args.n - 1} again): {mixed / TURNS:.2f} ms of tool CPU"
        )
    return 0


def _profile(suite: Path, names: list[str], work: Path, full: bool) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    for name in names:
        calls = _calls(suite / name, work / name / "rules", full)
        task = _task(suite / name, work / name / "warm-up")
        toolbox = ToolBox(task, Sandbox(task.root, task.output_dir), vision=True)
        for tool, arguments in calls:
            toolbox.run(tool, arguments)  # first-use imports are not the steady state
        _clear_renders()  # profile the first candidate's pass: every render is made
        task = _task(suite / name, work / name / "profiled")
        toolbox = ToolBox(task, Sandbox(task.root, task.output_dir), vision=True)
        profiler.enable()
        for tool, arguments in calls:
            toolbox.run(tool, arguments)
        profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    raise SystemExit(main())

"""CPU of each tool of `perf/concurrency.py`'s short script, timed in isolation (issue 16).

Builds the same three-turn script per dataset as ``perf/concurrency.py`` (turn 1 renders every image and mask,
turn 2 writes every annotation, turn 3 writes ``data_meta.json`` and calls ``finish``), then runs its tool
calls through the agent's own `ToolBox` (argument validation, sandbox, the tool, the result JSON), one after
another in this thread, with no model, no event loop and no other work. Every call is repeated
``--repeats`` times (the script in order, once per repeat, into a fresh candidate folder, after a warm-up
pass), and the median thread CPU time (user + system) of each call is kept. Printed: per tool, the number
of calls per candidate (mean over the datasets), the median ms per call and the ms per candidate; and the
total per model call (``T = 3`` calls per candidate), the figure ``perf/concurrency.py`` prints as "our
tools".

``--profile`` also prints the top functions (cProfile, cumulative time) of one pass over every dataset.
``--full`` times the whole replay of the rules baseline instead (`agents.fakeserver.replay`: ``inspect``,
``render``, ``view_image`` per sample, then the writes), the tools a real conversation uses.

    PYTHONPATH=. python perf/tool_cost.py [--repeats 15] [--datasets 10] [--profile] [--full] [--json]
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
from agents.fakeserver.replay import replay_script
from agents.litellm.sandbox import Sandbox
from agents.litellm.tools import ToolBox

# The workload is the sibling script's (perf/ is not a package): one definition of the short script.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from concurrency import DATASETS, TURNS, short_script


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


def time_dataset(root: Path, work: Path, repeats: int, full: bool = False) -> dict[str, list[float]]:
    """Median thread-CPU seconds of every tool call of one dataset's short script, grouped by tool name.

    Args:
        root: The dataset root.
        work: A scratch folder.
        repeats: Timed passes over the script (after one untimed warm-up pass).
        full: Time the whole replay of the rules baseline (``inspect`` and ``view_image`` included).

    Returns:
        Tool name → the median CPU seconds of each of its calls in the script.
    """
    calls = _calls(root, work / "rules", full)
    samples: list[list[float]] = [[] for _ in calls]
    for repeat in range(repeats + 1):
        # A fresh candidate folder per pass, as in a run: every file is created, none replaced (replacing an
        # existing file costs more on ext4, which flushes the new data on such a rename).
        task = _task(root, work / f"candidate{repeat}")
        toolbox = ToolBox(task, Sandbox(task.root, task.output_dir), vision=True)
        for k, (name, arguments) in enumerate(calls):
            start = time.thread_time()
            result = toolbox.run(name, arguments)
            spent = time.thread_time() - start
            if result.error is not None:
                raise SystemExit(f"{root.name}: {name} failed: {result.text}")
            if repeat:
                samples[k].append(spent)
    by_tool: dict[str, list[float]] = defaultdict(list)
    for (name, _), times in zip(calls, samples, strict=True):
        by_tool[name].append(statistics.median(times))
    return dict(by_tool)


def main(argv: list[str] | None = None) -> int:
    """Time the tools and print the table.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        0.
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15, help="timed passes per dataset (median kept)")
    parser.add_argument("--datasets", type=int, default=10, help=f"how many of {len(DATASETS)} datasets")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of one pass")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    parser.add_argument(
        "--full", action="store_true", help="the whole replay of the rules baseline (inspect, view_image ...)"
    )
    args = parser.parse_args(argv)

    from benchmark.synth.suite import generate_suite

    names = list(DATASETS[: args.datasets])
    per_tool: dict[str, list[float]] = defaultdict(list)  # tool → per-call medians over all datasets
    with tempfile.TemporaryDirectory(prefix="perf-tool-cost-") as tmp:
        suite = Path(tmp) / "suite"
        generate_suite(suite, size="small", only=names)
        for name in names:
            timed = time_dataset(suite / name, Path(tmp) / name, args.repeats, args.full)
            for tool, medians in timed.items():
                per_tool[tool].extend(medians)
        if args.profile:
            _profile(suite, names, Path(tmp), args.full)
    rows = {
        tool: {
            "calls_per_candidate": len(v) / len(names),
            "ms_per_call": 1000 * statistics.median(v),
            "ms_per_candidate": 1000 * sum(v) / len(names),
        }
        for tool, v in per_tool.items()
    }
    total = sum(r["ms_per_candidate"] for r in rows.values())
    if args.json:
        print(json.dumps({"tools": rows, "ms_per_candidate": total, "ms_per_model_call": total / TURNS}))
        return 0
    print(f"load average {os.getloadavg()[0]:.2f}; {len(names)} datasets; median of {args.repeats} repeats")
    print(f"{'tool':<18}{'calls/cand':>11}{'ms/call':>9}{'ms/cand':>9}")
    for tool, r in rows.items():
        print(
            f"{tool:<18}{r['calls_per_candidate']:>11.1f}{r['ms_per_call']:>9.2f}{r['ms_per_candidate']:>9.2f}"
        )
    print(f"{'total':<18}{'':>11}{'':>9}{total:>9.2f}")
    if not args.full:
        print(f"per model call (T = {TURNS}): {total / TURNS:.2f} ms of tool CPU")
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
        task = _task(suite / name, work / name / "profiled")
        toolbox = ToolBox(task, Sandbox(task.root, task.output_dir), vision=True)
        profiler.enable()
        for tool, arguments in calls:
            toolbox.run(tool, arguments)
        profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    raise SystemExit(main())

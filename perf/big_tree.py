"""A dataset of real size (issue 30): rules S0 time and peak memory, and the LiteLLM agent's first folder-tool
calls, on N DICOM files in a four-level patient/study/series/instance tree (`testbed.synth.big_tree`).

Builds the tree (``medstrat synth OUT --files N``; timed on its own), runs
``python -m experiments strategy=s0 agent=rules`` on it in a child process (wall seconds and the child's peak
resident memory, ``getrusage(RUSAGE_CHILDREN).ru_maxrss``), then times the FIRST ``tree`` and ``list_dir``
calls of a fresh LiteLLM tool box, as the agent's first turn makes them (no warm-up of the tools' caches; the
page cache is warm from the build), and the median of ``--repeats`` further calls. Prints the load average
too: the machine is shared, and every figure is only comparable with its load.

    PYTHONPATH=. python perf/big_tree.py [--files 20000] [--samples 24] [--root DIR] [--repeats 5]

Goals: rules S0 under 60 s on 2 cores, a folder tool under 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agents.base import Limits, ManifestEntry, Task
from agents.tools.sandbox import Sandbox
from agents.tools.tools import ToolBox
from benchmark.manifest import parse_manifest
from testbed.synth.big_tree import BIG_TREE, build_big_tree


def _box(root: Path, out: Path) -> ToolBox:
    entries = tuple(ManifestEntry(e.index, e.relpath) for e in parse_manifest(root / "VLM" / "random.txt"))
    task = Task(
        root=root,
        name=root.name,
        entries=entries,
        out_dir=out,
        limits=Limits(max_turns=1, max_tool_calls=1, max_tokens=1),
    )
    return ToolBox(task, Sandbox(root, task.output_dir), vision=False)


def _tool_times(
    root: Path, out: Path, name: str, args: dict[str, object], repeats: int
) -> tuple[float, float, int]:
    """(first call ms in a fresh tool box, median ms of the next ``repeats``, answer chars)."""
    box = _box(root, out)
    raw = json.dumps(args)
    start = time.perf_counter()
    result = box.run(name, raw)
    first = time.perf_counter() - start
    if result.error:
        raise SystemExit(f"{name}({raw}) failed: {result.error}")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        box.run(name, raw)
        times.append(time.perf_counter() - start)
    return first * 1000, statistics.median(times) * 1000, len(result.text)


def _rules_s0(bench: Path, run_dir: Path) -> tuple[float, float, str]:
    """Wall seconds and peak RSS (MB) of a rules S0 run in a child process, and its metric table line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments",
            "benchmark=dir",
            f"benchmark.root={bench}",
            "strategy=s0",
            "agent=rules",
            "run.progress=false",
            "run.report=false",
            f"hydra.run.dir={run_dir}",
        ],
        capture_output=True,
        text=True,
        env={**os.environ},
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode not in (0, 3):
        raise SystemExit(f"rules S0 failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("official")), "")
    # ru_maxrss is the largest child's peak (kB on Linux); the S0 run is the only child so far.
    return wall, max(peak, before) / 1024, line


def main() -> None:
    """Build the tree, run rules S0, time the first folder-tool calls; print one Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=24)
    parser.add_argument("--root", type=Path, help="benchmark root to build into (default: a temporary one)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="big-tree-") as tmp:
        bench = args.root or Path(tmp) / "bench"
        built = build_big_tree(bench, files=args.files, samples=args.samples)
        n_files = sum(len(files) for _, _, files in os.walk(built.root / "data"))
        load_before = os.getloadavg()
        wall, peak_mb, line = _rules_s0(bench, Path(tmp) / "run")
        load_after = os.getloadavg()
        root = bench / BIG_TREE.name
        out = Path(tmp) / "tools-out"
        series = sorted((root / "data" / "BrainMR").glob("*/*/*"))[0]
        calls: list[tuple[str, dict[str, object]]] = [
            ("tree", {}),
            ("list_dir", {"path": "data"}),
            ("list_dir", {"path": "data/BrainMR"}),
            ("list_dir", {"path": series.relative_to(root).as_posix()}),
        ]
        print(
            f"{BIG_TREE.name}: {n_files:,} files ({args.files:,} DICOM), {args.samples} samples; "
            f"built in {built.seconds:.1f} s; nproc {os.cpu_count()}"
        )
        print("| figure | value | unit |")
        print("|---|---:|---|")
        print(
            f"| rules S0 wall (`python -m experiments strategy=s0 agent=rules`, no report) | {wall:.1f} | s |"
        )
        print(f"| rules S0 peak resident memory | {peak_mb:.0f} | MB |")
        for name, call_args in calls:
            first, median, chars = _tool_times(root, out, name, call_args, args.repeats)
            shown = ", ".join(f"{k}={v!r}" for k, v in call_args.items())
            print(f"| `{name}({shown})` first call | {first:.1f} | ms |")
            label = f"`{name}({shown})` median of {args.repeats} more ({chars:,} answer chars)"
            print(f"| {label} | {median:.1f} | ms |")
        print(f"load average (1, 5, 15 min) before S0 {load_before}, after {load_after}")
        print(f"S0 scores: {line}")


if __name__ == "__main__":
    main()

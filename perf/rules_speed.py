"""Measure the rules baseline's throughput (samples/s) on the bundled small suite.

Usage: ``python perf/rules_speed.py [--root DIR] [--temperature T] [--repeat N]``. Without ``--root`` the
small suite
is generated into a temporary folder first (not timed).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from pathlib import Path

from agents.base import ManifestEntry, Task
from agents.rules import RulesAgent
from benchmark.manifest import parse_manifest
from testbed.synth import generate_suite


def _tasks(root: Path, temperature: float, run: str) -> list[Task]:
    tasks = []
    for ds in sorted(p for p in root.iterdir() if (p / "VLM" / "random.txt").is_file()):
        entries = tuple(
            ManifestEntry(e.index, e.relpath) for e in parse_manifest(ds / "VLM" / "random.txt", ds)
        )
        tasks.append(
            Task(root=ds, name=ds.name, entries=entries, out_dir=ds / "VLM" / run, temperature=temperature)
        )
    return tasks


def main() -> None:
    """Parse arguments, run the agent over every dataset and print samples/s."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, help="an existing suite (default: generate the small suite)")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--repeat", type=int, default=1, help="timed passes (the best is reported)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.root
        if root is None:
            root = Path(tmp) / "suite"
            generate_suite(root, size="small", seed=0)
        agent = RulesAgent()
        best = float("inf")
        n = 0
        for rep in range(args.repeat):
            tasks = _tasks(root, args.temperature, f"rules_speed_{rep}")
            n = sum(len(t.entries) for t in tasks)
            start = time.perf_counter()
            for task in tasks:
                asyncio.run(agent.generate(task))
            best = min(best, time.perf_counter() - start)
        print(
            f"rules agent: {n} samples in {len(tasks)} datasets, {best:.2f} s -> {n / best:.1f} samples/s "
            f"(temperature {args.temperature}, best of {args.repeat})"
        )


if __name__ == "__main__":
    main()

"""Time an S3 run of the rules agent on the bundled suite (25 datasets x 10 samples, n = 5) with one
candidate in flight per process, as the code runs (`agents.base.cpu_bound`), and with ``run.concurrency``
candidates in flight, as before 2026-12-06 (a subclass of the rules agent that does not declare itself
CPU-bound).

Each way runs ``--repeat`` times, interleaved (the machine's load drifts between runs); prints the median
user, system and wall seconds of each way and their ratios. The run's selected outputs are compared too:
the number of candidates in flight must not change what is selected.

    python perf/cpu_bound_agent.py [--repeat 3] [--processes 1]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agents.rules import RulesAgent


class ThreadedRules(RulesAgent):
    """The rules agent as every agent ran before ``cpu_bound``: ``run.concurrency`` calls in flight."""

    cpu_bound = False


WAYS = {
    "one in flight": "agent._target_=agents.rules.RulesAgent",
    "run.concurrency in flight": f"agent._target_={Path(__file__).stem}.ThreadedRules",
}


def one_run(override: str, folder: Path, processes: str) -> tuple[float, float, float]:
    """(user, system, wall) seconds of one ``python -m experiments strategy=s3`` in ``folder``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parent), env.get("PYTHONPATH", "")])
    args = ["strategy=s3", "run.progress=false", "run.report=false", f"run.processes={processes}", override]
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "experiments", *args, f"hydra.run.dir={folder}"],
        env=env,
        capture_output=True,
        text=True,
    )
    wall, after = time.monotonic() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"cpu_bound_agent: the run failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime, wall


def same_selection(a: Path, b: Path) -> bool:
    """Whether two runs selected byte-identical files (annotations, images, masks, dataset JSON) for every
    sample; ``result.json`` names the run's own folder and is left out."""
    left = sorted(p.relative_to(a) for p in (a / "selected").rglob("*") if p.is_file())
    right = sorted(p.relative_to(b) for p in (b / "selected").rglob("*") if p.is_file())
    kept = [p for p in left if p.name != "result.json"]
    return left == right and bool(kept) and all(filecmp.cmp(a / p, b / p, shallow=False) for p in kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--processes", default="1", help="run.processes of every run (default 1)")
    args = parser.parse_args()
    if args.repeat < 1:
        raise SystemExit(f"cpu_bound_agent: --repeat must be >= 1, got {args.repeat}")
    times: dict[str, list[tuple[float, float, float]]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory() as tmp:
        last: dict[str, Path] = {}
        # Not timed: the bundled suite is generated on first use.
        one_run(WAYS["one in flight"], Path(tmp) / "warm", args.processes)
        for k in range(args.repeat):
            for way, override in WAYS.items():
                folder = Path(tmp) / f"{k}-{way.split()[0]}"
                times[way].append(one_run(override, folder, args.processes))
                last[way] = folder
        same = same_selection(*last.values())
    print(
        f"S3 (n = 5) of the rules agent, bundled suite, run.processes={args.processes}, "
        f"{args.repeat} runs each"
    )
    medians = {}
    for way, runs in times.items():
        user, system, wall = (statistics.median(r[i] for r in runs) for i in range(3))
        medians[way] = (user + system, system, wall)
        print(f"  {way:26s} user {user:6.2f} s  system {system:6.2f} s  wall {wall:6.2f} s")
    new, old = medians["one in flight"], medians["run.concurrency in flight"]
    print(f"  CPU ratio (old / new): {old[0] / new[0]:.2f}; system {old[1] / max(new[1], 1e-9):.2f}")
    print(f"  wall ratio (old / new): {old[2] / new[2]:.2f}")
    print(f"  same selected annotations: {same}")


if __name__ == "__main__":
    main()

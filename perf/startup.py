"""Start-up times of the CLIs users wait for: medians over repeated fresh processes, and the ratio to target.

    python perf/startup.py [--runs 10] [--json]

Commands timed (each in a new process, output discarded, cwd = the repository):

* ``python -m experiments --help`` (target < 1.0 s);
* ``medstrat score --help`` (target < 0.3 s);
* the import cost of the scorer's per-dataset path: the modules ``--dataset-dir`` loads before it reads a
  file (the metrics, the raw ground-truth reader, the plain table writer), timed as
  ``python -c "import ..."`` (target < 0.3 s, the issue's aim for the CLI start);
* ``python -c pass``, the interpreter's own floor on this machine.

The machine is shared: the load average is printed with the figures, and a ratio above 1 under load is not
a regression by itself (compare with the ``python -c pass`` floor).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# What `medstrat score --dataset-dir` imports: the CLI, the metrics and the plain table writer
# (pandas, for the analyses, is not on that path).
_DATASET_PATH_IMPORTS = "import benchmark.score.__main__, benchmark.score.evaluate, benchmark.score.table"
# (name, argv after the interpreter, target seconds or None)
COMMANDS: list[tuple[str, list[str], float | None]] = [
    ("python -c pass (interpreter floor)", ["-c", "pass"], None),
    ("python -m experiments --help", ["-m", "experiments", "--help"], 1.0),
    ("medstrat score --help", ["-m", "experiments.cli", "score", "--help"], 0.3),
    ("scorer --dataset-dir path, imports only", ["-c", _DATASET_PATH_IMPORTS], 0.3),
]


def time_command(argv: list[str], runs: int) -> list[float]:
    """Wall seconds of ``runs`` fresh runs of ``python argv`` (one warm-up run first, not counted).

    Args:
        argv: Arguments after the interpreter.
        runs: Timed runs.

    Returns:
        The wall times.

    Raises:
        SystemExit: The command failed (a broken CLI must not be timed as a fast one).
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    times: list[float] = []
    for k in range(runs + 1):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, *argv], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.decode()[-500:]}")
        if k:
            times.append(elapsed)
    return times


def main() -> None:
    """Time every command and print medians, the slowest run and the ratio to target."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="timed runs per command (>= 10 for the docs)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = []
    for name, argv, target in COMMANDS:
        times = time_command(argv, args.runs)
        median = statistics.median(times)
        rows.append(
            {
                "command": name,
                "median_s": round(median, 3),
                "max_s": round(max(times), 3),
                "target_s": target,
                "ratio_to_target": None if target is None else round(median / target, 2),
            }
        )
    load = (load_before + os.getloadavg()[0]) / 2
    if args.json:
        print(json.dumps({"load_average": round(load, 2), "runs": args.runs, "rows": rows}, indent=2))
        return
    print(f"start-up, median of {args.runs} runs; load average {load:.2f} (nproc {os.cpu_count()})")
    for row in rows:
        ratio = ""
        if row["target_s"] is not None:
            ratio = f"  target {row['target_s']} s, ratio {row['ratio_to_target']}"
        print(f"{row['command']:<42} {row['median_s']:6.3f} s (max {row['max_s']:.3f}){ratio}")


if __name__ == "__main__":
    main()

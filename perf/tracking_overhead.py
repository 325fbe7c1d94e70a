"""What ``tracking=mlflow`` costs a run: the default SQLite store (``sqlite:///<cwd>/mlflow.db``) against
MLflow's file store (``file:///…/mlruns``).

Makes one finished run folder first (``python -m experiments strategy=s0``: the rules agent on the bundled
suite, 25 datasets, so about 600 metrics and the HTML report as artifacts) unless ``--run`` names one.
Then, per store, in fresh interpreters as a run's own process would: importing MLflow, the first open of a
new store (for SQLite: creating its tables), an open of the existing store, and ``record_run`` of the folder
``--repeat`` times into it (a new MLflow run each time: params, metrics, tags, artifacts). Prints a table
(medians; wall and CPU seconds, CPU moving less with the machine's load) and one JSON line.

    PYTHONPATH=. python perf/tracking_overhead.py [--run RUN] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

# argv: store URI, run folder, repeats. One JSON line: wall and CPU seconds of importing MLflow, of opening
# the store, and of each record_run.
_CHILD = """
import json, sys, time
from pathlib import Path

def now():
    return time.perf_counter(), time.process_time()

t0 = now()
import mlflow.tracking
t1 = now()
from experiments.tracking.mlflow_store import TRACKING_FILE, TrackingSettings, open_store
from experiments.tracking.record import record_run
settings = TrackingSettings(sys.argv[1])
open_store(settings).experiment_id()
t2 = now()
run = Path(sys.argv[2])
runs, runs_cpu = [], []
for _ in range(int(sys.argv[3])):
    (run / TRACKING_FILE).unlink(missing_ok=True)  # a new MLflow run each time, not a resume
    start = now()
    record_run(settings, run)
    end = now()
    runs.append(end[0] - start[0])
    runs_cpu.append(end[1] - start[1])
(run / TRACKING_FILE).unlink(missing_ok=True)
print(json.dumps({
    "import_s": t1[0] - t0[0], "import_cpu_s": t1[1] - t0[1],
    "open_s": t2[0] - t1[0], "open_cpu_s": t2[1] - t1[1],
    "runs_s": runs, "runs_cpu_s": runs_cpu,
}))
"""


def _child(uri: str, run: Path, repeat: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, uri, str(run), str(repeat)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or "tracking: warning" in done.stderr:
        raise SystemExit(f"tracking_overhead: {uri}: {done.stderr.strip()[-500:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _make_run(folder: Path) -> Path:
    run = folder / "s0_bundled"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    args = ["strategy=s0", "run.progress=false", f"hydra.run.dir={run}", f"hydra.sweep.dir={folder}/multirun"]
    subprocess.run([sys.executable, "-m", "experiments", *args], env=env, cwd=folder, check=True)
    return run


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Time both stores; print and return the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="a finished run folder (default: make an S0 run)")
    parser.add_argument("--repeat", type=int, default=5, help="record_run calls per store")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tracking_overhead_") as tmp:
        base = Path(tmp)
        run = args.run.resolve() if args.run else _make_run(base)
        wall = float(json.loads((run / "run.json").read_text(encoding="utf-8")).get("wall_s", 0.0))
        stores = {
            "sqlite": f"sqlite:///{base / 'sqlite' / 'mlflow.db'}",
            "file": (base / "file" / "mlruns").as_uri(),
        }
        out: dict[str, Any] = {"run": str(run), "run_wall_s": wall, "repeat": args.repeat}
        for kind, uri in stores.items():
            first = _child(uri, run, args.repeat)  # a new store: created by this process
            again = _child(uri, run, args.repeat)  # the store exists: what every later run pays
            per_run = statistics.median(first["runs_s"] + again["runs_s"])
            per_run_cpu = statistics.median(first["runs_cpu_s"] + again["runs_cpu_s"])
            out[kind] = {
                "import_s": statistics.median([first["import_s"], again["import_s"]]),
                "import_cpu_s": statistics.median([first["import_cpu_s"], again["import_cpu_s"]]),
                "open_new_s": first["open_s"],
                "open_new_cpu_s": first["open_cpu_s"],
                "open_existing_s": again["open_s"],
                "open_existing_cpu_s": again["open_cpu_s"],
                "record_run_median_s": per_run,
                "record_run_median_cpu_s": per_run_cpu,
                "record_run_all_s": first["runs_s"] + again["runs_s"],
                "per_run_total_s": again["import_s"] + again["open_s"] + per_run,
                "per_run_total_cpu_s": again["import_cpu_s"] + again["open_cpu_s"] + per_run_cpu,
            }
        out["load_average"] = os.getloadavg()
    print(f"run folder: {out['run']} (the run itself took {wall:.1f} s)")
    heads = ("import MLflow", "open new store", "open store", "log one run", "per run")
    print(f"{'seconds, wall / CPU of the process':36} " + "   ".join(f"{h:>14}" for h in heads))
    for kind in stores:
        row = out[kind]
        cells = [
            f"{row[k + '_s']:6.2f} / {row[k + '_cpu_s']:5.2f}"
            for k in ("import", "open_new", "open_existing", "record_run_median", "per_run_total")
        ]
        print(f"{kind:36} " + "   ".join(cells))
    ratio = out["sqlite"]["record_run_median_s"] / max(out["file"]["record_run_median_s"], 1e-9)
    total = out["sqlite"]["per_run_total_s"] / max(out["file"]["per_run_total_s"], 1e-9)
    out["sqlite_over_file_record_run"], out["sqlite_over_file_per_run"] = ratio, total
    print(
        f"sqlite / file: log one run {ratio:.2f}x, per run {total:.2f}x; load average {out['load_average']}"
    )
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()

"""Time pass@k curves (`experiments.analysis.passk.passk_curves`) on a stored S3 run, with each candidate's
annotations read once per dataset (`strategies.mechanics.stored_annotations`, as the code runs) and with that
memo off (each selector on each k-subset reads the files again, as before 2026-12-06).

Makes the stored run first (``python -m experiments strategy=s3 strategy.n=5``: the rules agent on the bundled
suite, 25 datasets x 10 samples) unless ``--run`` names one. Prints the median CPU seconds of ``--repeat``
computations each way, their ratio, and whether both gave the same curves.

    python perf/passk_speed.py [--run RUN] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from experiments.analysis import passk


def make_run(folder: Path) -> Path:
    """A stored S3 run of the rules agent (n = 5) on the bundled suite, in ``folder``."""
    overrides = ["strategy=s3", "strategy.n=5", "run.progress=false", f"hydra.run.dir={folder}"]
    done = subprocess.run([sys.executable, "-m", "experiments", *overrides], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the S3 run failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return folder


def timed_curves(run: Path, repeat: int) -> tuple[float, pd.DataFrame]:
    """Median CPU seconds of ``repeat`` pass@k computations on ``run`` (its own validator) and the curves."""
    validator = passk._own_validator(run)
    spent, frame = [], pd.DataFrame()
    for _ in range(repeat):
        start = time.process_time()
        frame = passk.curves_frame(passk.passk_curves([run], None, [validator]))
        spent.append(time.process_time() - start)
    return statistics.median(spent), frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=None, help="a stored S3 run (default: make one)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run or make_run(Path(tmp) / "s3")
        timed_curves(run, 1)  # validator reports stored, modules imported: neither way pays for them below
        memo_s, memo = timed_curves(run, args.repeat)
        kept = passk.stored_annotations
        passk.stored_annotations = contextlib.nullcontext  # type: ignore[assignment]  # the memo off
        try:
            plain_s, plain = timed_curves(run, args.repeat)
        finally:
            passk.stored_annotations = kept
        same = memo.equals(plain)
        print(f"pass@k on {run} ({int(memo['datasets'].max())} datasets)")
        print(f"annotations read once per dataset: {memo_s:7.2f} CPU s")
        print(f"read on every selector call:       {plain_s:7.2f} CPU s  ({plain_s / memo_s:.1f}x)")
        print(f"same curves: {same}")
        if not same:
            raise SystemExit("the two ways gave different curves")


if __name__ == "__main__":
    main()

"""The README's test command timed, with the machine's speed measured before and after it.

    python perf/suite_time.py [--probe-only] [--json] [-- PYTEST_ARGS...]

Runs ``python -m pytest -q`` (the README's command; arguments after ``--`` replace ``-q``) in a fresh process
from the repository and prints its wall time, the CPU seconds of pytest and everything it waited for, the
summary line, and a speed probe taken just before and just after: the CPU seconds of a fixed pure-Python
loop, and of ``import litellm`` in a fresh interpreter (the suite's largest fixed cost per process).

Why the probe: the shared 2-core machines this project is measured on change speed by up to ~1.8x within
an hour with nothing else running (20 M additions at module level took 1.43 s and 2.61 s, the whole suite
369 and 518 CPU s: docs/performance.md, "The test suite"). A wall time is only comparable with another one
taken at a similar probe reading; the "at reference speed" line scales the wall time to a probe loop of
0.6 s (this function's loop read 0.64 s at that machine's fastest reading seen).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
_LOOP = 20_000_000
#: The probe loop's CPU seconds this script scales to ("reference speed").
REFERENCE_LOOP_S = 0.6
_TARGET_S = 300.0


def loop_seconds() -> float:
    """CPU seconds of a fixed pure-Python loop in this process (lower is a faster machine)."""
    start = time.process_time()
    total = 0
    for i in range(_LOOP):
        total += i
    assert total > 0  # keeps the loop from being anything but a loop
    return time.process_time() - start


def litellm_import_seconds() -> float | None:
    """CPU seconds of ``import litellm`` in a fresh interpreter (None when litellm is not installed)."""
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", "import litellm"], env=env, capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        return None
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def probe() -> dict[str, float | None]:
    """The machine's speed now: the loop's and litellm's import's CPU seconds, and the load average."""
    return {
        "loop_s": round(loop_seconds(), 2),
        "import_litellm_s": _rounded(litellm_import_seconds()),
        "load_1min": round(os.getloadavg()[0], 2),
    }


def run_suite(pytest_args: list[str]) -> dict[str, Any]:
    """Run ``python -m pytest ARGS`` from the repository; its wall and CPU seconds and summary line.

    Raises:
        SystemExit: pytest failed or collected nothing (a broken run is not a time).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args], cwd=REPO, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = reversed(done.stdout.splitlines())
    summary = next((line.strip("= ") for line in lines if re.search(r"\d+ passed", line)), "")
    if done.returncode != 0 or not summary:
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
        raise SystemExit(f"suite_time: pytest exited {done.returncode}: {tail[0]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "summary": summary}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def main(argv: list[str] | None = None) -> int:
    """Print the probe, the suite's times and the ratio to the 300 s target."""
    args = sys.argv[1:] if argv is None else argv
    pytest_args = ["-q"]
    if "--" in args:
        cut = args.index("--")
        args, pytest_args = args[:cut], args[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe-only", action="store_true", help="print the speed probe and stop")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    opts = parser.parse_args(args)
    result: dict[str, Any] = {"probe_before": probe()}
    if not opts.probe_only:
        result["suite"] = run_suite(pytest_args)
        result["probe_after"] = probe()
        mean_loop = (result["probe_before"]["loop_s"] + result["probe_after"]["loop_s"]) / 2
        result["wall_at_reference_s"] = round(result["suite"]["wall_s"] * REFERENCE_LOOP_S / mean_loop, 1)
    if opts.json:
        print(json.dumps(result))
        return 0
    print(f"probe before: {result['probe_before']}")
    if "suite" in result:
        suite = result["suite"]
        print(f"python -m pytest {' '.join(pytest_args)}: {suite['summary']}")
        print(f"wall {suite['wall_s']} s, CPU {suite['cpu_s']} s (pytest and what it waited for)")
        print(f"probe after:  {result['probe_after']}")
        print(
            f"wall at reference speed (loop {REFERENCE_LOOP_S} s): {result['wall_at_reference_s']} s; "
            f"ratio to the {_TARGET_S:.0f} s target: {suite['wall_s'] / _TARGET_S:.2f} as measured"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Run every performance script and print all figures in one table (target: under 5 minutes on 2 cores).

Each script runs in its own process (as a user would run it) with arguments small enough for the time box;
its printed figures are parsed from stdout. Scripts that are missing are listed as "not present". Also
measures the start-up time of ``python -m experiments --help`` and of a ``rules`` run on one dataset, and
checks that such a run never imports litellm.

    /work/venv/bin/python perf/run_all.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PERF = Path(__file__).resolve().parent
REPO = PERF.parent
SMALL_DATASET = "synth-polyp-coco-png"

# Run `python -m experiments` and report on exit whether litellm was ever imported.
_NO_LITELLM_PROBE = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print('LITELLM=' + str('litellm' in sys.modules), file=sys.stderr))\n"
    "sys.argv = ['experiments'] + sys.argv[1:]\n"
    "runpy.run_module('experiments', run_name='__main__', alter_sys=True)\n"
)


@dataclass
class Figure:
    """One row of the table."""

    name: str
    value: str
    unit: str
    note: str = ""


def _run(cmd: list[str], timeout: float = 240) -> tuple[str, str, float, int]:
    start = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env)
    return proc.stdout, proc.stderr, time.perf_counter() - start, proc.returncode


def _grab(pattern: str, text: str) -> str:
    match = re.search(pattern, text, re.MULTILINE)
    return match.group(1) if match else "?"


def _concurrency(latency_s: float, key: str) -> Callable[[str], str]:
    """Read one figure at one latency from ``concurrency.py --json``'s summary line (its last JSON line)."""

    def grab(stdout: str) -> str:
        for line in reversed(stdout.splitlines()):
            if line.startswith("{"):
                for result in json.loads(line)["results"]:
                    if result["latency_s"] == latency_s and result.get(key) is not None:
                        return f"{result[key]:.3f}"
                break
        return "?"

    return grab


def startup(suite: Path, tmp: Path) -> list[Figure]:
    """Start-up of ``--help`` and of a one-dataset rules run; litellm must stay unimported."""
    py = sys.executable
    _, _, help_s, _ = _run([py, "-m", "experiments", "--help"])
    args = [
        "strategy=s0",
        "benchmark=dir",
        f"benchmark.root={suite}",
        f"benchmark.datasets=[{SMALL_DATASET}]",
        "run.progress=false",
        f"hydra.run.dir={tmp / 'startup_run'}",
    ]
    _, err, run_s, code = _run([py, "-c", _NO_LITELLM_PROBE, *args])
    imported = _grab(r"LITELLM=(\w+)", err)
    if imported != "False" or code != 0:
        raise SystemExit(
            f"rules run failed or imported litellm (LITELLM={imported}, exit {code}):\n{err[-2000:]}"
        )
    return [
        Figure("startup: python -m experiments --help", f"{help_s:.2f}", "s"),
        Figure("startup: rules S0 run, 1 dataset (10 samples)", f"{run_s:.2f}", "s", "litellm not imported"),
    ]


def scripts(suite: Path) -> list[Figure]:
    """Run each perf script with time-boxed arguments and parse its figures."""
    py = sys.executable
    out: list[Figure] = []
    plan: list[tuple[str, list[str], list[tuple[str, str | Callable[[str], str], str]]]] = [
        ("score_speed.py", [], [("scorer (168 conformance folders)", r"\((\d+) samples/s", "samples/s")]),
        (
            "startup.py",
            ["--runs", "3"],
            [
                (
                    "startup: experiments --help (median of 3)",
                    r"^python -m experiments --help\s+([\d.]+) s",
                    "s",
                ),
                (
                    "startup: benchmark.score --help (median of 3)",
                    r"^medstrat score --help\s+([\d.]+) s",
                    "s",
                ),
            ],
        ),
        (
            "validator_speed.py",
            [str(suite), "--repeats", "1", "--candidates", "2"],
            [
                ("validator 2D warm (1 core)", r"^2D\s+\d+\s+\S+ \(\d+\)\s+(\d+)", "cand-samples/CPU s"),
                ("validator 3D warm (1 core)", r"^3D\s+\d+\s+\S+ \(\d+\)\s+(\d+)", "cand-samples/CPU s"),
                ("validator 2D cold (1 core)", r"^2D\s+\d+\s+(\d+)", "cand-samples/CPU s"),
            ],
        ),
        (
            "rules_speed.py",
            ["--root", str(suite)],
            [("rules agent (T=0)", r"-> ([\d.]+) samples/s", "samples/s")],
        ),
        (
            "concurrency.py",
            ["--datasets", "4", "--latency", "0.2", "--second-latency", "2.0", "--json"],
            [
                (
                    "concurrency 200 ms: ours / bare litellm (>= 0.9)",
                    _concurrency(0.2, "ours_over_bare"),
                    "ratio",
                ),
                (
                    "concurrency 200 ms: latency bound / measured",
                    _concurrency(0.2, "bound_ratio"),
                    "ratio",
                ),
                (
                    "concurrency 2 s: latency bound / measured (>= 0.9)",
                    _concurrency(2.0, "bound_ratio"),
                    "ratio",
                ),
            ],
        ),
        (
            "agent_overhead.py",
            ["--turns", "5", "--candidates", "4"],
            [
                (
                    "per-call overhead: ours on top of litellm",
                    r"on top of litellm:\s+([-\d.]+) ms",
                    "ms/call",
                ),
                (
                    "per-call: bare litellm.acompletion",
                    r"bare litellm\.acompletion per call:\s+([\d.]+)",
                    "ms/call",
                ),
            ],
        ),
        (
            "agent_tokens.py",
            ["--sizes", "10", "20", "100"],
            [
                (
                    "agent prompt tokens/sample, 20 vs 10 samples (<= 1.25)",
                    r"20 vs 10 samples: ([\d.]+)x",
                    "ratio",
                ),
                (
                    "agent prompt tokens/sample, 100 vs 20 samples (<= 1.25)",
                    r"100 vs 20 samples: ([\d.]+)x",
                    "ratio",
                ),
            ],
        ),
        (
            "cache_rerun.py",
            [],
            [
                ("cache: first run (64 calls, 50 ms latency)", r'"first_s": ([\d.]+)', "s"),
                ("cache: cached rerun", r'"rerun_s": ([\d.]+)', "s"),
                ("cache: rerun speed-up", r'"speedup": ([\d.]+)', "x"),
                ("cache: requests sent on rerun", r'"rerun_requests": (\d+)', "requests"),
            ],
        ),
    ]
    for script, args, wanted in plan:
        path = PERF / script
        if not path.is_file():
            out += [Figure(name, "-", unit, f"{script} not present") for name, _, unit in wanted]
            continue
        stdout, stderr, wall, code = _run([py, str(path), *args])
        note = f"{script}, {wall:.0f} s" + ("" if code == 0 else f", exit {code}: {stderr.strip()[-200:]}")
        out += [
            Figure(name, rx(stdout) if callable(rx) else _grab(rx, stdout), unit, note)
            for name, rx, unit in wanted
        ]
    return out


def machine() -> str:
    """nproc, CPU model and Python version, for the record."""
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"nproc {os.cpu_count()} | {cpu} | Python {platform.python_version()} | {platform.system()} | "
        f"load average {load:.1f} (other processes skew every figure)"
    )


def main(argv: list[str] | None = None) -> list[Figure]:
    """Generate the suite once, run everything, print the table (and JSON with ``--json``).

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The figures.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        suite = tmp / "suite"
        _, err, gen_s, code = _run([sys.executable, "-m", "testbed.synth", str(suite), "--oracle", "oracle"])
        if code != 0:
            raise SystemExit(f"suite generation failed:\n{err[-2000:]}")
        figures = [Figure("suite generation (25 datasets, with oracle)", f"{gen_s:.1f}", "s")]
        figures += startup(suite, tmp)
        figures += scripts(suite)
    total = time.perf_counter() - start
    figures.append(Figure("run_all.py total", f"{total:.0f}", "s", "target < 300 s on 2 cores"))
    width = max(len(f.name) for f in figures)
    print(machine())
    print(f"{'figure':{width}s}  {'value':>10s}  {'unit':18s}  note")
    print("-" * (width + 50))
    for f in figures:
        print(f"{f.name:{width}s}  {f.value:>10s}  {f.unit:18s}  {f.note}")
    if args.json:
        print(json.dumps([f.__dict__ for f in figures]))
    return figures


if __name__ == "__main__":
    main()

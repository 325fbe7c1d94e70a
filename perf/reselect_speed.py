"""Selection research in seconds: issue 43's five reselections and the selector leaderboard, each from the
command line beside the fresh run(s) it replaces, with no agent call.

Makes the stored S3 run first (``python -m experiments strategy=s3 strategy.n=5``: the rules agent on the
bundled suite, 25 datasets x 10 samples, 125 candidates) unless ``--run`` names one. Then, each in a fresh
interpreter as a user types it (the report written, as a run's default):

- ``medstrat reselect RUN X`` for X in ``selector=first``, ``selector=random``,
  ``selector=majority``, ``validator=mdsbench``, ``strategy=s4``: a first pass in that order (what is not
  stored yet is validated now: the candidates under ``mdsbench``, S4's merged folders), then ``--repeat``
  passes that find every report stored (target < 2 s each, < 10 s for the five);
- ``medstrat leaderboard RUN`` (5 selectors x 2 validator profiles; target < 10 s);
- the fresh runs they replace, ``python -m experiments strategy=s3 strategy.n=5 X`` (``strategy=s4`` for
  the last), and the source's own (``validator_max``), timed once each. The leaderboard replaces one
  fresh run per (selector, profile) cell: the cells measured here count as measured, the others at the
  median measured fresh S3 run (printed as an estimate). ``--fresh-from JSON`` reuses the fresh seconds of an
  earlier output line instead of running them again.

Prints one row per command (seconds from the command line, CPU seconds of the child, the fresh seconds, and
how many times faster), the total against the 10 s goal, the load average (the machine is shared: wall
seconds include waiting for a core, CPU seconds far less), checks that no stored candidate changed and that
every reselection made 0 agent calls, then one JSON line.

The CLI runs with compiled bytecode cached, as an installed package keeps it (in a temporary
``PYTHONPYCACHEPREFIX``, after one untimed run that fills it), even where the environment sets
``PYTHONDONTWRITEBYTECODE=1``; ``--no-bytecode-cache`` compiles every module on every run instead.

    python perf/reselect_speed.py [--run RUN] [--repeat 2] [--fresh-from OUT.json] [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESELECTIONS = ("selector=first", "selector=random", "selector=majority", "validator=mdsbench", "strategy=s4")
"""Issue 43's five reselections, in its order."""
FRESH = {
    "source": [],
    "selector=first": ["selector=first"],
    "selector=random": ["selector=random"],
    "selector=majority": ["selector=majority"],
    "validator=mdsbench": ["validator=mdsbench"],
    "strategy=s4": ["strategy=s4"],
}
"""The overrides of the fresh run each reselection replaces (on top of `SOURCE`)."""
SOURCE = ["strategy=s3", "strategy.n=5", "run.progress=false"]
"""The stored run's overrides: S3 with ``validator_max`` and the ``evidence`` profile (the defaults)."""
BOARD_SELECTORS = ("validator_max", "majority", "random", "first", "consensus")
BOARD_VALIDATORS = ("evidence", "mdsbench")
CELLS = {
    ("validator_max", "evidence"): "source",
    ("first", "evidence"): "selector=first",
    ("random", "evidence"): "selector=random",
    ("majority", "evidence"): "selector=majority",
    ("validator_max", "mdsbench"): "validator=mdsbench",
}
"""Leaderboard cells whose fresh run is one of the runs timed here."""
GOAL_EACH_S, GOAL_FIVE_S, GOAL_BOARD_S = 2.0, 10.0, 10.0


def _markers(run: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((run / "candidates").rglob("candidate.json")):
        digest.update(str(path.relative_to(run)).encode() + path.read_bytes())
    return digest.hexdigest()


def _cli_env(pycache: Path | None) -> dict[str, str]:
    """The CLI's environment: bytecode cached in ``pycache`` (outside the checkout), or compiled every run."""
    env = dict(os.environ)
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One command in a fresh interpreter: ``(wall s, CPU s of the child and its children)``.

    Raises:
        SystemExit: The command failed (a broken run must not be timed as a fast one).
    """
    start, kids = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return wall, after.ru_utime + after.ru_stime - kids.ru_utime - kids.ru_stime


def _reselect(run: Path, override: str, out: Path, env: dict[str, str]) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "experiments.cli", "reselect", str(run), override, f"hydra.run.dir={out}"]
    wall, cpu = _timed(cmd, env)
    calls = json.loads((out / "usage.json").read_text())["reselect"]["agent_calls"]
    if calls:
        raise SystemExit(f"{' '.join(cmd)} made {calls} agent calls")
    return wall, cpu


def _fresh(overrides: list[str], out: Path, env: dict[str, str]) -> float:
    return _timed([sys.executable, "-m", "experiments", *overrides, f"hydra.run.dir={out}"], env)[0]


def _ratio(fresh: float | None, took: float) -> str:
    return f"{fresh / took:6.1f}x" if fresh else "      -"


def main() -> None:
    """Time the five reselections, the leaderboard and the fresh runs they replace; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=None, help="a stored S3 run (default: make one)")
    parser.add_argument("--repeat", type=int, default=2, help="passes with every report stored (default 2)")
    parser.add_argument(
        "--fresh-from", type=Path, default=None, help="reuse the fresh seconds of a JSON line"
    )
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="the CLI compiles every module on every run"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = _cli_env(None if args.no_bytecode_cache else tmp / "pycache")
        fresh: dict[str, float] = {}
        if args.fresh_from is not None:
            lines = args.fresh_from.read_text().strip().splitlines()
            fresh = {k: float(v) for k, v in json.loads(lines[-1])["fresh_s"].items()}
        run = args.run
        if run is None:
            run = tmp / "s3"
            made = _fresh(SOURCE, run, env)
            print(f"stored S3 run (n = 5, rules agent, 25 datasets; bytecode compiled now): {made:.1f} s")
        before = _markers(run)
        if not args.no_bytecode_cache:
            _reselect(run, "selector=first", tmp / "warm", env)  # compiles into the cache, untimed
        load = [os.getloadavg()[0]]
        passes: list[dict[str, tuple[float, float]]] = []
        for p in range(1 + max(args.repeat, 1)):
            passes.append({o: _reselect(run, o, tmp / f"p{p}-{k}", env) for k, o in enumerate(RESELECTIONS)})
        board_cmd = [
            sys.executable,
            "-m",
            "experiments.cli",
            "leaderboard",
            str(run),
            "--out",
            str(tmp / "board"),
        ]
        board_cmd += ["--selectors", ",".join(BOARD_SELECTORS), "--validators", ",".join(BOARD_VALIDATORS)]
        board_wall, board_cpu = _timed(board_cmd, env)
        load.append(os.getloadavg()[0])
        for o in (
            "source",
            *RESELECTIONS,
        ):  # the source's own cell again, with the bytecode cached like the rest
            if o not in fresh:
                fresh[o] = _fresh([*SOURCE, *FRESH[o]], tmp / f"fresh-{o.replace('=', '-')}", env)
        unchanged = _markers(run) == before
        s3_fresh = [fresh[k] for k in ("source", *RESELECTIONS[:4]) if k in fresh]
        per_cell = statistics.median(s3_fresh)
        cells = [(s, v) for v in BOARD_VALIDATORS for s in BOARD_SELECTORS]
        measured = [CELLS[c] for c in cells if CELLS.get(c) in fresh]
        board_fresh = sum(fresh[m] for m in measured) + per_cell * (len(cells) - len(measured))

        warm = {o: statistics.median(p[o][0] for p in passes[1:]) for o in RESELECTIONS}
        warm_cpu = {o: statistics.median(p[o][1] for p in passes[1:]) for o in RESELECTIONS}
        head = f"{'from the command line':28s} {'first s':>8s} {'again s':>8s} {'CPU s':>6s} {'fresh s':>8s}"
        print(f"{head} faster")
        for o in RESELECTIONS:
            print(
                f"reselect {o:19s} {passes[0][o][0]:8.2f} {warm[o]:8.2f} {warm_cpu[o]:6.2f} "
                f"{fresh[o]:8.1f} {_ratio(fresh[o], warm[o])}"
            )
        first_total = sum(passes[0][o][0] for o in RESELECTIONS)
        warm_total, fresh_total = sum(warm.values()), sum(fresh[o] for o in RESELECTIONS)
        print(
            f"{'the five, in all':28s} {first_total:8.2f} {warm_total:8.2f} {sum(warm_cpu.values()):6.2f} "
            f"{fresh_total:8.1f} {_ratio(fresh_total, warm_total)}   goal < {GOAL_FIVE_S:.0f} s: "
            f"{'met' if warm_total < GOAL_FIVE_S else 'missed'} (again), "
            f"{'met' if first_total < GOAL_FIVE_S else 'missed'} (first)"
        )
        print(
            f"{'leaderboard 5 sel. x 2 val.':28s} {board_wall:8.2f} {'':8s} {board_cpu:6.2f} "
            f"{board_fresh:8.1f} {_ratio(board_fresh, board_wall)}   goal < {GOAL_BOARD_S:.0f} s: "
            f"{'met' if board_wall < GOAL_BOARD_S else 'missed'}; fresh = {len(measured)} cells measured, "
            f"{len(cells) - len(measured)} at the median fresh S3 run ({per_cell:.1f} s, an estimate)"
        )
        slow = [o for o in RESELECTIONS if warm[o] >= GOAL_EACH_S]
        print(
            f"each reselection < {GOAL_EACH_S:.0f} s with its reports stored: "
            f"{'yes' if not slow else 'no: ' + ', '.join(slow)}; load average {load[0]:.1f} before, "
            f"{load[1]:.1f} after, on {os.cpu_count()} cores; bytecode "
            f"{'compiled every run' if args.no_bytecode_cache else 'cached'}"
        )
        print(f"agent calls: 0 in every reselection; stored candidates unchanged: {unchanged}")
        doc: dict[str, Any] = {
            "reselect_first_s": {o: round(passes[0][o][0], 2) for o in RESELECTIONS},
            "reselect_again_s": {o: round(warm[o], 2) for o in RESELECTIONS},
            "reselect_again_cpu_s": {o: round(warm_cpu[o], 2) for o in RESELECTIONS},
            "five_first_s": round(first_total, 2),
            "five_again_s": round(warm_total, 2),
            "leaderboard_s": round(board_wall, 2),
            "leaderboard_cpu_s": round(board_cpu, 2),
            "fresh_s": {k: round(v, 2) for k, v in fresh.items()},
            "leaderboard_fresh_s": round(board_fresh, 1),
            "leaderboard_fresh_cells_measured": len(measured),
            "load_average": [round(x, 1) for x in load],
            "bytecode_cached": not args.no_bytecode_cache,
            "candidates_unchanged": unchanged,
        }
        print(json.dumps(doc))


if __name__ == "__main__":
    main()

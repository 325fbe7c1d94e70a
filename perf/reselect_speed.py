"""Selection research on stored candidates: the selector leaderboard (5 selectors × 2 validator profiles)
and one reselect, over a stored S3 run of the bundled suite (25 datasets × 10 samples, n = 5), with no agent
call.

Makes the S3 run first (rules agent) unless ``--run`` names one. Prints the leaderboard's wall time (target
< 20 s on 2 cores), its validations (expected: candidates × profiles, each candidate once per profile) and
distinct outputs scored, the reselect's wall time and its agent calls and spent tokens from ``usage.json``
(expected 0), one reselection per built-in selector in this process and through the CLI
(``python -m experiments.reselect RUN selector=X run.report=false``, a fresh interpreter each, ``--repeat``
times per selector; target < 2 s each), the same CLI once with its HTML report (``run.report=true``, the
default of a run), checks that no stored candidate changed (done-markers, with their usage counters, byte for
byte), then one JSON line.

The CLI runs with compiled bytecode cached, as an installed package keeps it (in a temporary
``PYTHONPYCACHEPREFIX``, after one untimed run that fills it), even where the environment sets
``PYTHONDONTWRITEBYTECODE=1``; ``--no-bytecode-cache`` times it compiling every module on every run instead.
CPU seconds (user + system of the child) move far less with the machine's load than wall seconds; the load
average is printed before and after the CLI runs.

    python perf/reselect_speed.py [--run RUN] [--validators evidence,mdsbench] [--repeat 2]
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
from collections.abc import Sequence
from pathlib import Path

from agents.base import Candidate, Task
from experiments import compose_config
from experiments.run.experiment import run_experiment
from experiments.selection.leaderboard import leaderboard
from experiments.selection.reselect import reselect
from strategies.selectors import selectors
from validator.report import Report

CLI_SELECTORS = ("validator_max", "majority", "random", "first", "consensus")
"""The selectors timed as separate reselections (the registered ones of these)."""


def fewest_failures(
    index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task
) -> int:
    """The docs' example plug-in: fewest failed high-risk checks, then the best total."""

    def key(k: int) -> tuple[int, float, int]:
        sample = reports[k].samples.get(index)
        if sample is None:
            return (-(10**6), 0.0, -k)
        return (-len(sample.failed(high_risk_only=True)), sample.total, -k)

    return max(range(len(candidates)), key=key)


def _cpu() -> float:
    """User + system CPU seconds of this process and its finished children (the leaderboard's workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


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


def _cli(run: Path, selector: str, out: Path, env: dict[str, str], *, report: bool) -> tuple[float, float]:
    """One ``python -m experiments.reselect`` in a fresh interpreter: ``(wall s, CPU s of the child)``.

    Raises:
        SystemExit: The CLI failed (a broken run must not be timed as a fast one).
    """
    cmd = [sys.executable, "-m", "experiments.reselect", str(run), f"selector={selector}"]
    cmd += [f"run.report={str(report).lower()}", f"hydra.run.dir={out}"]
    start, kids = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return wall, after.ru_utime + after.ru_stime - kids.ru_utime - kids.ru_stime


def main() -> None:
    """Parse arguments, time the leaderboard and a reselect, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=None, help="a stored S3 run (default: make one)")
    parser.add_argument("--validators", default="evidence,mdsbench")
    parser.add_argument("--repeat", type=int, default=2, help="CLI runs per selector (default 2)")
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="the CLI compiles every module on every run"
    )
    args = parser.parse_args()
    selectors.add("fewest_failures", fewest_failures)
    names = ["validator_max", "majority", "random", "first"]
    names.append("consensus" if "consensus" in selectors.names() else "fewest_failures")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        run = args.run
        if run is None:
            run = tmp / "s3"
            start = time.perf_counter()
            cfg = compose_config(["strategy=s3", "strategy.n=5", "run.progress=false", "run.report=false"])
            run_experiment(cfg, run)
            print(f"stored S3 run (n = 5, rules agent): {time.perf_counter() - start:.1f} s")
        before = _markers(run)
        validators = [v for v in args.validators.split(",") if v]
        start, cpu0 = time.perf_counter(), _cpu()
        frame, stats = leaderboard([run], names, validators, work=tmp)
        board_s, board_cpu = time.perf_counter() - start, _cpu() - cpu0
        print(frame[["validator", "selector", "E2E", "strict_E2E", "SCJ", "CF", "gap_to_oracle"]].to_string())
        print(
            f"leaderboard: {len(names)} selectors x {len(validators)} validators over "
            f"{stats['datasets']} datasets, {stats['candidates']} candidates: {board_s:.1f} s; "
            f"{stats['validations']} validations (expected {stats['candidates'] * len(validators)}), "
            f"{stats['assembled']} distinct outputs scored; CPU {board_cpu:.1f} s (this process and its "
            f"workers; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )
        start = time.perf_counter()
        out = reselect(run, ["selector=majority", "run.report=false"], tmp / "reselect")
        reselect_s = time.perf_counter() - start
        usage = json.loads((out.run_dir / "usage.json").read_text())["reselect"]
        print(
            f"reselect (selector=majority, no report): {reselect_s:.1f} s; "
            f"agent calls {usage['agent_calls']}, tokens spent {usage['spent_tokens']}"
        )
        # Every selector again, in this process and as the CLI a user types (a fresh interpreter each).
        env = _cli_env(None if args.no_bytecode_cache else tmp / "pycache")
        names_cli = [sel for sel in CLI_SELECTORS if sel in selectors.names()]
        if not args.no_bytecode_cache:
            _cli(run, names_cli[0], tmp / "cli-warm", env, report=False)  # compiles into the cache, untimed
        in_process, cli, cli_cpu = [], [], []
        load_before = os.getloadavg()[0]
        for k, name in enumerate(names_cli):
            start = time.perf_counter()
            reselect(run, [f"selector={name}", "run.report=false"], tmp / f"in-{k}")
            in_process.append(time.perf_counter() - start)
            for r in range(args.repeat):
                wall, cpu = _cli(run, name, tmp / f"cli-{k}-{r}", env, report=False)
                cli.append(wall)
                cli_cpu.append(cpu)
        load_after = os.getloadavg()[0]
        report_wall, report_cpu = _cli(run, names_cli[0], tmp / "cli-report", env, report=True)
        cache = "compiling every module" if args.no_bytecode_cache else "bytecode cached"
        print(
            f"reselect x {len(names_cli)} selectors: in process median {statistics.median(in_process):.2f} s "
            f"(max {max(in_process):.2f}); CLI ({len(cli)} runs, {cache}, no report) median "
            f"{statistics.median(cli):.2f} s (max {max(cli):.2f}), "
            f"CPU median {statistics.median(cli_cpu):.2f} s; "
            f"load average {load_before:.1f} before, {load_after:.1f} after, on {os.cpu_count()} cores"
        )
        print(
            f"reselect CLI with its HTML report (selector={names_cli[0]}, run.report=true): "
            f"{report_wall:.2f} s, CPU {report_cpu:.2f} s"
        )
        unchanged = _markers(run) == before
        print(f"stored candidates unchanged: {unchanged}")
        print(
            json.dumps(
                {
                    "leaderboard_s": round(board_s, 2),
                    "leaderboard_cpu_s": round(board_cpu, 2),
                    "selectors": len(names),
                    "validators": len(validators),
                    "validations": stats["validations"],
                    "candidates": stats["candidates"],
                    "assembled": stats["assembled"],
                    "reselect_s": round(reselect_s, 2),
                    "reselect_median_s": round(statistics.median(in_process), 2),
                    "reselect_cli_median_s": round(statistics.median(cli), 2),
                    "reselect_cli_max_s": round(max(cli), 2),
                    "reselect_cli_cpu_median_s": round(statistics.median(cli_cpu), 2),
                    "reselect_cli_bytecode_cached": not args.no_bytecode_cache,
                    "reselect_cli_report_s": round(report_wall, 2),
                    "reselect_cli_report_cpu_s": round(report_cpu, 2),
                    "load_average": [round(load_before, 1), round(load_after, 1)],
                    "agent_calls": usage["agent_calls"],
                    "spent_tokens": usage["spent_tokens"],
                    "candidates_unchanged": unchanged,
                }
            )
        )


if __name__ == "__main__":
    main()

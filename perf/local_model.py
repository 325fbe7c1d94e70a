"""A local model through a real server, per strategy: samples written, schema-valid, E2E, tokens, seconds.

Runs ``python -m experiments strategy=S agent=local agent.api_base=URL`` for each strategy on a bundled
dataset and (``--replica``) on a dev replica dataset, each run with its own request cache (every call is
bought, so the seconds are the model's), and prints one Markdown row per run:

    python -m llama_cpp.server --model "$GGUF" --n_ctx 8192 --chat_format chatml-function-calling \
        --port 8765 &
    python perf/local_model.py --api-base http://127.0.0.1:8765/v1 --samples 5 --replica 5002837_folder

Columns: samples in the manifest, samples written (an image and an annotation that pair), schema-valid (the
official g_i = 1), E2E (official, per sample), model calls, prompt and completion tokens per sample as the
server reported them, wall seconds per sample, and the most common reason a sample fell short. S3 and S4
use ``strategy.n`` candidates (``--n``, default 2).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _why(run: Path, rows: list[dict[str, Any]]) -> str:
    """The most common reason a sample fell short: a skip, a candidate's reason, or the weakest score."""
    reasons: Counter[str] = Counter()
    for path in (run / "candidates").rglob("candidate.json"):
        record = json.loads(path.read_text())
        for why in (record.get("skipped") or {}).values():
            reasons[str(why)[:90]] += 1
        reason = str(record.get("reason") or "")
        rest = reason.split("); ", 1)[1] if "); " in reason else ""
        if rest:
            reasons[rest[:90]] += 1
    for row in rows:
        official = row.get("scores", {}).get("official", {})
        if official and not official.get("e2e"):
            weakest = min(
                ("semantic", official.get("semantic_score", 0.0)),
                ("content", official.get("content_fidelity_score", 0.0)),
                ("source", official.get("source_score", 0.0)),
                key=lambda item: float(item[1] or 0.0),
            )
            reasons[f"{weakest[0]} {float(weakest[1] or 0.0):.2f} < threshold"] += 1
    if not reasons:
        return "-"
    text, count = reasons.most_common(1)[0]
    return f"{text} ({count})"


def run_one(args: argparse.Namespace, strategy: str, bench: list[str], label: str, out: Path) -> str:
    run = out / f"{label}-{strategy}"
    cache = out / f"{label}-{strategy}.sqlite"
    command = [
        sys.executable,
        "-m",
        "experiments",
        f"strategy={strategy}",
        "agent=local",
        f"agent.api_base={args.api_base}",
        f"agent.cache={cache}",
        f"hydra.run.dir={run}",
        *bench,
    ]
    if strategy in ("s3", "s4"):
        command.append(f"strategy.n={args.n}")
    start = time.perf_counter()
    done = subprocess.run(command, cwd=out, capture_output=True, text=True, timeout=args.timeout)
    wall = time.perf_counter() - start
    rows = _rows(run / "samples.jsonl")
    usage = json.loads((run / "usage.json").read_text())["total"] if (run / "usage.json").is_file() else {}
    n = len(rows) or 1
    valid = sum(1 for r in rows if r["scores"]["official"]["schema_valid_score"] == 1.0)
    e2e = sum(1 for r in rows if r["scores"]["official"]["e2e"])
    written = sum(1 for r in rows if r["scores"]["official"].get("pair_valid"))
    prompt, completion = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
    error = "" if done.returncode in (0, 3) else f" exit {done.returncode}: {done.stderr.strip()[-160:]}"
    return (
        f"| {label} | {strategy} | {len(rows)} | {written} | {valid} | {e2e} | {usage.get('calls', 0)} | "
        f"{prompt / n:,.0f} | {completion / n:,.0f} | {wall / n:.1f} | {_why(run, rows)}{error} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api-base", required=True, help="the server, e.g. http://127.0.0.1:8765/v1")
    parser.add_argument("--dataset", default="synth-dermoscopy-jpg", help="bundled dataset")
    parser.add_argument("--samples", type=int, default=10, help="samples of the bundled dataset")
    parser.add_argument("--strategies", default="s0,s1,s2,s3,s4")
    parser.add_argument("--replica", default=None, help="a dev replica dataset (e.g. 5002837_folder)")
    parser.add_argument("--replica-strategies", default="s0,s3")
    parser.add_argument("--n", type=int, default=2, help="candidates of S3/S4")
    parser.add_argument("--out", type=Path, default=Path("local-model-runs"))
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per run")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(
        "| dataset | strategy | samples | written | schema-valid | E2E | calls | prompt tok/sample | "
        "completion tok/sample | wall s/sample | most common shortfall |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    bundled = [f"benchmark.datasets=[{args.dataset}]", f"benchmark.samples={args.samples}"]
    for strategy in args.strategies.split(","):
        print(run_one(args, strategy, bundled, args.dataset, out), flush=True)
    if args.replica:
        replica = ["benchmark=replica", f"benchmark.datasets=[{args.replica}]"]
        for strategy in args.replica_strategies.split(","):
            print(run_one(args, strategy, replica, args.replica, out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

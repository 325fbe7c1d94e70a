"""A local model's seconds per sample, before and after a change, side by side in one run on one server.

Starts one llama-cpp-python server (``python -m agents.serve``, its log kept) and runs the same S0 run
(``agent=local``, a fresh request cache each, so every call is bought) from two checkouts: ``--base`` (a git
revision, checked out into a temporary worktree) and this working tree. For each it prints the calls, the
prompt tokens sent (what the server reported per request), the prompt tokens the server evaluated (the
``prompt eval`` lines of its log: a prompt prefix it still held from the previous request is not evaluated
again), the completion tokens, the wall seconds per sample, and E2E; then the ratios after/before.

    python perf/prefix_speed.py --base 2001876 --dataset synth-dermoscopy-jpg --samples 3

The server's log must have llama.cpp's performance lines (llama-cpp-python's default ``--verbose true``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_PROMPT_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")
_EVAL = re.compile(r"\beval time =\s*[\d.]+ ms /\s*(\d+) runs")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _server(model: Path, log: Path, threads: int, window: int) -> Iterator[str]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    command = [sys.executable, "-m", "agents.serve", "--model", str(model), "--n_ctx", str(window)]
    command += ["--n_threads", str(threads), "--chat_format", "chatml-function-calling"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                sys.exit(f"prefix_speed: the server exited with {process.returncode} (log: {log})")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit(f"prefix_speed: the server did not answer within 180 s (log: {log})")
                time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _evaluated(log_text: str) -> tuple[int, int]:
    """Prompt tokens evaluated and tokens generated, summed over the log's performance lines."""
    prompt = sum(int(m.group(1)) for m in _PROMPT_EVAL.finditer(log_text))
    generated = sum(int(m.group(1)) for m in _EVAL.finditer(log_text) if "prompt" not in m.group(0))
    return prompt, generated


def _e2e(run: Path) -> float:
    rows = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines() if line.strip()]
    scores = [float(r["scores"]["official"].get("e2e") or 0.0) for r in rows if "scores" in r]
    return sum(scores) / len(scores) if scores else 0.0


def _run(
    label: str, checkout: Path, url: str, log: Path, out: Path, args: argparse.Namespace
) -> dict[str, Any]:
    run = out / label
    command = [
        sys.executable,
        "-m",
        "experiments",
        "strategy=s0",
        "agent=local",
        f"agent.api_base={url}",
        f"agent.cache={out / f'{label}.sqlite'}",
        f"run.seed={args.seed}",
        "benchmark=bundled",
        f"benchmark.datasets=[{args.dataset}]",
        f"benchmark.samples={args.samples}",
        "tracking=none",
        f"hydra.run.dir={run}",
    ]
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    before = len(log.read_text(errors="replace"))
    start = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 3):
        sys.exit(f"prefix_speed: the {label} run exited {done.returncode}: {done.stderr.strip()[-400:]}")
    evaluated, generated = _evaluated(log.read_text(errors="replace")[before:])
    usage = json.loads((run / "usage.json").read_text())["total"]
    return {
        "label": label,
        "calls": int(usage["calls"]),
        "sent": int(usage["prompt_tokens"]),
        "evaluated": evaluated,
        "completion": int(usage["completion_tokens"]),
        "generated": generated,
        "s_per_sample": wall / args.samples,
        "e2e": _e2e(run),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the git revision to compare against")
    parser.add_argument("--model", type=Path, default=None, help="GGUF (default: the assembled 1.5B)")
    parser.add_argument("--dataset", default="synth-dermoscopy-jpg")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--window", type=int, default=8192)
    args = parser.parse_args(argv)
    model = args.model
    if model is None:
        from agents.model.local_models import model_path

        model = model_path("qwen2.5-coder-1.5b")
    with tempfile.TemporaryDirectory(prefix="prefix-speed-") as tmp:
        out = Path(tmp)
        base = out / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(base), args.base], cwd=ROOT, check=True
        )
        try:
            log = out / "server.log"
            with _server(model, log, args.threads, args.window) as url:
                rows = [_run("before", base, url, log, out, args), _run("after", ROOT, url, log, out, args)]
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    print(f"{args.dataset}, {args.samples} samples, seed {args.seed}, S0, agent=local, base {args.base}")
    print("| | calls | prompt tokens sent | evaluated | completion tokens | s/sample | E2E |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['label']} | {r['calls']} | {r['sent']:,} | {r['evaluated']:,} | {r['completion']:,} "
            f"| {r['s_per_sample']:.1f} | {r['e2e']:.2f} |"
        )
    b, a = rows
    print(
        f"after/before: seconds per sample x{a['s_per_sample'] / b['s_per_sample']:.2f}, "
        f"prompt tokens evaluated x{a['evaluated'] / max(1, b['evaluated']):.2f}, "
        f"completion tokens x{a['completion'] / max(1, b['completion']):.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

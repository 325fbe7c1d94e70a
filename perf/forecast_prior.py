"""Remake the forecast's prior (``experiments/run/forecast_prior.json``) from offline runs, one per mode.

``--mode tools`` (the default) runs S0 with the LiteLLM agent (tools mode, default batch size) on the bundled
suite against the fake server replaying the rules baseline on every dataset (`testbed.fakeserver.replay`);
``--mode guided`` runs S0 with ``agent=local`` (the guided mode: a plan step, one to three steps per sample, a
data_meta step, each a fresh request sized to the window) against the fake server answering every
constrained request with the first object its schema allows (`testbed.fakeserver.schema_answers`), through
the real LiteLLM path. Either keeps each dataset's measured conversations
(`experiments.run.forecast.profiles_from_folder`): the per-call prompt and completion tokens of its
plan, sample (or batch) and ``data_meta`` calls, under that mode's key of the file. Those are the fake
server's token estimates (characters / 4, a fixed count per image), a shape of the calls, not a model's bill::

    python perf/forecast_prior.py                 # the tools mode's prior; prints a summary
    python perf/forecast_prior.py --mode guided   # the guided mode's prior (the other mode's is kept)
    python perf/forecast_prior.py --out x.json --datasets synth-dermoscopy-jpg synth-fundus-npy
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from experiments.run.forecast import PRIOR_FILE, profiles_from_folder, profiles_to_json  # noqa: E402
from experiments.run.suite import ensure_bundled_suite  # noqa: E402
from testbed.fakeserver import ByDataset, FakeServer  # noqa: E402
from testbed.fakeserver.replay import replay_script  # noqa: E402
from testbed.fakeserver.schema_answers import SchemaAnswers  # noqa: E402


def main() -> int:
    """Measure and write the prior."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=PRIOR_FILE)
    parser.add_argument("--datasets", nargs="*", help="default: every dataset of the bundled suite")
    parser.add_argument("--mode", choices=("tools", "guided"), default="tools")
    args = parser.parse_args()
    suite = ensure_bundled_suite()
    names = args.datasets or sorted(p.name for p in suite.iterdir() if (p / "VLM" / "random.txt").is_file())
    with tempfile.TemporaryDirectory(prefix="forecast-prior-") as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        script: Any = (
            SchemaAnswers("tool_choice")
            if args.mode == "guided"
            else ByDataset(
                {n: replay_script(suite / n, work_dir=work / "replay" / n, check=False) for n in names}
            )
        )
        replayed = time.perf_counter() - start
        run = work / "run"
        with FakeServer(script) as server:
            command = [
                sys.executable,
                "-m",
                "experiments",
                "strategy=s0",
                "benchmark=dir",
                f"benchmark.root={suite}",
                f"benchmark.datasets=[{','.join(names)}]",
                "agent=local" if args.mode == "guided" else "agent=litellm",
                "agent.model=openai/fake-model",
                f"agent.api_base={server.url}",
                "agent.temperature=0",
                "agent.cache=false",
                "run.processes=1",
                "run.progress=false",
                "run.report=false",
                f"hydra.run.dir={run}",
            ]
            env = {**os.environ, "OPENAI_API_KEY": "sk-fake", "PYTHONPATH": str(ROOT)}
            done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return done.returncode
        profiles = profiles_from_folder(run)
        usage = json.loads((run / "usage.json").read_text(encoding="utf-8"))["total"]
    what = (
        "S0, LiteLLM agent (tools mode, batch_size 8) on the bundled suite (small, seed 0) against the fake "
        "server replaying the rules baseline; tokens are the fake server's estimates (characters/4)"
    )
    if args.mode == "guided":
        what = (
            "S0, agent=local (guided mode) on the bundled suite (small, seed 0) against the fake server "
            "answering each constrained request with its schema's first object; tokens are the fake server's "
            "estimates (characters/4)"
        )
    mode_doc = {
        "provenance": {
            "what": what,
            "made_by": "python perf/forecast_prior.py",
            "date": datetime.date.today().isoformat(),
            "datasets": len(profiles),
            "calls": usage["calls"],
            "tokens": usage["total_tokens"],
        },
        "profiles": profiles_to_json(profiles),
    }
    # One file, one key per mode: remaking one mode's prior keeps the other's.
    document = json.loads(args.out.read_text(encoding="utf-8")) if args.out.is_file() else {}
    if args.mode == "guided":
        document["guided"] = mode_doc
    else:
        document.update(mode_doc)
    args.out.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
    print(
        f"{args.out} ({args.mode}): {len(profiles)} datasets, {usage['calls']} calls, "
        f"{usage['total_tokens']} tokens (replay scripts {replayed:.1f}s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How close S3 over the LiteLLM agent comes to the latency bound when the model is slow (issue 7).

Runs ``run_experiment`` (the very code ``python -m experiments`` runs: Hydra config, one semaphore of
``run.concurrency`` candidates in flight, the validator in a worker pool, export and scoring) with
``strategy=s3 strategy.n=N agent=litellm`` against the fake OpenAI server answering every request after a
fixed latency. Every candidate walks the same short conversation, built from the rules baseline's outputs
(`agents.fakeserver.replay`): turn 1 renders every image (and mask), turn 2 writes every annotation, turn 3
writes ``data_meta.json`` and calls ``finish`` — a minimal valid candidate in ``T = 3`` model calls.

The latency bound. The runner starts every (dataset, candidate) at once and the semaphore lets ``C`` of them
talk to the model at a time; a candidate's calls are sequential (each turn needs the previous answer). So the
model-call phase cannot end before

    bound = T x L x ceil(D x N / C)

(``L`` latency per call, ``D`` datasets, ``N`` candidates each; the default 10 x 5 = 50 candidates fit in one
wave of C = 64). The script measures that phase on the server's clock, from the first request's arrival to
the last answer, and prints ``ratio = bound / measured`` (1.0 = no time lost beyond the latency; target
>= 0.90). It also prints the whole run's wall time (validation, selection, export, scoring included), which no
latency bound covers.

``--light`` replaces the three turns by ``list_dir``, ``list_dir``, ``finish`` (no file written, so the
candidates end as failed and nothing is selected): the same scheduling with almost no tool work, which
separates the cost of the tools from the cost of the model-call path itself.

    /work/venv/bin/python perf/concurrency.py [--latency 0.2] [--concurrency 64] [--n 5] [--datasets 10]
        [--light]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.fakeserver import FakeServer, Reply, Step, TurnScript, assistant_turn, tool_call
from agents.fakeserver.replay import replay_script

# Ten datasets whose raw files render in milliseconds, so the tools' CPU work stays well below the latency
# on a 2-core machine and the measurement is about the concurrency machinery.
DATASETS = (
    "synth-chest-xray-dicom",
    "synth-dermoscopy-jpg",
    "synth-elastography-mat",
    "synth-fundus-npy",
    "synth-glioma-h5",
    "synth-hand-xray-pgm",
    "synth-histology-png",
    "synth-organ-npz-shards",
    "synth-polyp-coco-png",
    "synth-thyroid-us-bmp",
    "synth-knee-mr-mat73",
    "synth-nuclei-tiff16",
)
TURNS = 3
USAGE = (1000, 200)


def light_script() -> TurnScript:
    """Three turns with next to no tool work: two folder listings and ``finish``."""
    listing = tool_call("list_dir", {"path": "data"}, "list")
    turns = [assistant_turn(listing), assistant_turn(listing), assistant_turn(tool_call("finish", {}, "end"))]
    return TurnScript([Reply(s.content, s.tool_calls, USAGE) for s in turns])


def short_script(dataset_root: Path, work_dir: Path) -> TurnScript:
    """Three turns that write the rules baseline's candidate: renders; annotations; meta and finish."""
    replay = replay_script(dataset_root, work_dir=work_dir, check=False)
    renders, writes = [], []
    for step in replay.steps:
        assert isinstance(step, Reply)
        for call in step.tool_calls:
            name = call["function"]["name"]
            if name == "render":
                renders.append(call)
            elif name == "write_annotation":
                writes.append(call)
    tail = [c for c in replay.steps[-2].tool_calls + replay.steps[-1].tool_calls]  # type: ignore[union-attr]
    turns = [assistant_turn(*renders), assistant_turn(*writes), assistant_turn(*tail)]
    return TurnScript([Reply(s.content, s.tool_calls, USAGE) for s in turns])


class Dispatch:
    """One server for every dataset: answer from the script of the dataset named in the task prompt.

    Also stamps the arrival time of every request (the server's clock) for the phase measurement.
    """

    def __init__(self, scripts: Mapping[str, TurnScript]) -> None:
        self.scripts = dict(scripts)
        self.arrivals: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        with self._lock:
            self.arrivals.append(time.perf_counter())
        prompt = str(request["messages"][1]["content"])
        name = prompt.split("\n", 1)[0].removeprefix("Dataset name:").strip()
        return self.scripts[name](request, serial)


def _config(root: Path, server: FakeServer, n: int, concurrency: int) -> Any:
    from hydra import compose, initialize_config_dir

    from experiments._config_path import config_dir

    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        return compose(
            "config",
            overrides=[
                "strategy=s3",
                f"strategy.n={n}",
                "agent=litellm",
                "agent.model=openai/fake-model",
                f"agent.api_base={server.url}",
                "+agent.api_key=sk-fake",
                "+agent.vision=true",
                "+agent.timeout_s=30",
                "benchmark=dir",
                f"benchmark.root={root}",
                f"run.concurrency={concurrency}",
                "run.progress=false",
            ],
        )


def main(argv: list[str] | None = None) -> int:
    """Run the measurement and print the ratio.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        0.
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call")
    parser.add_argument("--concurrency", type=int, default=64, help="run.concurrency (candidates in flight)")
    parser.add_argument("--n", type=int, default=5, help="candidates per dataset (S3 n)")
    parser.add_argument("--datasets", type=int, default=10, help=f"how many of {len(DATASETS)} datasets")
    parser.add_argument("--light", action="store_true", help="turns without file work (see above)")
    args = parser.parse_args(argv)

    from agents.litellm.client import import_litellm
    from benchmark.synth.suite import generate_suite
    from experiments.run import run_experiment

    import_litellm()  # a one-off import cost, not part of the run's scheduling
    names = list(DATASETS[: args.datasets])
    with tempfile.TemporaryDirectory(prefix="perf-concurrency-") as tmp:
        root = Path(tmp) / "suite"
        generate_suite(root, size="small", only=names)
        scripts = {
            n: light_script() if args.light else short_script(root / n, Path(tmp) / "rules" / n)
            for n in names
        }
        dispatch = Dispatch(scripts)
        with FakeServer(dispatch, latency_s=args.latency) as server:
            cfg = _config(root, server, args.n, args.concurrency)
            start = time.perf_counter()
            outcome = run_experiment(cfg, Path(tmp) / "run")
            wall = time.perf_counter() - start
            calls = len(server.requests)
        phase = max(dispatch.arrivals) + args.latency - min(dispatch.arrivals)
    candidates = len(names) * args.n
    bound = TURNS * args.latency * math.ceil(candidates / args.concurrency)
    e2e = outcome.metrics.get("official", {}).get("macro", {}).get("E2E", float("nan"))
    print(
        f"datasets x candidates:      {len(names)} x {args.n} = {candidates} (concurrency {args.concurrency})"
    )
    print(
        f"model calls:                {calls} (expected {candidates * TURNS}); "
        f"latency {args.latency * 1000:.0f} ms"
    )
    print(
        f"latency bound:              {bound:.3f} s  (= {TURNS} turns x {args.latency} s x "
        f"ceil({candidates}/{args.concurrency}))"
    )
    print(f"model-call phase measured:  {phase:.3f} s")
    print(f"ratio (bound / measured):   {bound / phase:.3f}   (target >= 0.90)")
    print(f"whole run wall time:        {wall:.3f} s (validation, selection, export, scoring included)")
    print(f"official macro E2E:         {e2e:.4f}; incomplete={outcome.incomplete}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Cache-hit rerun time vs the first run: the LiteLLM agent through the fake server, twice, with the SQLite
request cache.

The first run buys every answer (the fake server adds ``--latency`` seconds per call, like a real provider);
the second run replays the identical conversations from the cache and must send no request at all. Prints
both wall times, their ratio and the requests the server saw on the rerun (expected 0), then one JSON line.

    /work/venv/bin/python perf/cache_rerun.py [--candidates 8] [--turns 8] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from agents.base import Limits, ManifestEntry, Task
from agents.llm.agent import LiteLLMAgent
from agents.llm.options import AgentOptions
from agents.model.cache import RequestCache
from agents.model.config import ModelConfig
from testbed.fakeserver import FakeServer, Reply, TurnScript, assistant_turn, tool_call


def _dataset(root: Path) -> Task:
    path = root / "data" / "img0.png"
    path.parent.mkdir(parents=True)
    Image.fromarray(np.zeros((16, 16), dtype=np.uint8)).save(path)
    (root / "VLM").mkdir()
    (root / "VLM" / "random.txt").write_text("0 /x/data/img0.png\n", encoding="utf-8")
    limits = Limits(max_turns=100, max_tool_calls=200, max_tokens=10**9)
    return Task(
        root=root,
        name="cache",
        entries=(ManifestEntry(0, "data/img0.png"),),
        out_dir=root / "out",
        limits=limits,
    )


def _script(turns: int) -> TurnScript:
    steps = [assistant_turn(tool_call("list_dir", {"path": "data"}, f"l{k}")) for k in range(turns - 1)]
    steps.append(assistant_turn(tool_call("finish", {"summary": "done"}, "fin")))
    return TurnScript([Reply(content=s.content, tool_calls=s.tool_calls, usage=(500, 50)) for s in steps])


async def _run(agent: LiteLLMAgent, base: Task, n: int, out: Path) -> tuple[float, int, int]:
    tasks = [base.for_candidate(k, out / f"c{k}") for k in range(n)]
    start = time.perf_counter()
    cands = await asyncio.gather(*(agent.generate(t) for t in tasks))
    wall = time.perf_counter() - start
    return wall, sum(c.usage.calls for c in cands), sum(c.usage.cache_hits for c in cands)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run both passes; print and return the figures.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        ``{"first_s", "rerun_s", "speedup", "rerun_requests", "calls", "cache_hits"}``.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--turns", type=int, default=8, help="model calls per candidate")
    parser.add_argument(
        "--latency", type=float, default=0.05, help="seconds the fake provider takes per call"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = _dataset(Path(tmp) / "ds")
        server = FakeServer(_script(args.turns), latency_s=args.latency).start()
        try:

            def agent() -> LiteLLMAgent:
                cache = RequestCache(Path(tmp) / "cache.sqlite")
                model = ModelConfig("openai/fake-model", api_base=server.url, api_key="sk-fake", cache=cache)
                return LiteLLMAgent(model, AgentOptions(vision=False))

            first, calls, _ = asyncio.run(_run(agent(), base, args.candidates, Path(tmp) / "first"))
            seen = len(server.chat_requests)
            rerun, _, hits = asyncio.run(_run(agent(), base, args.candidates, Path(tmp) / "rerun"))
            rerun_requests = len(server.chat_requests) - seen
        finally:
            server.stop()
    figures = {
        "first_s": round(first, 3),
        "rerun_s": round(rerun, 3),
        "speedup": round(first / rerun, 1) if rerun > 0 else float("inf"),
        "rerun_requests": rerun_requests,
        "calls": calls,
        "cache_hits": hits,
    }
    print(
        f"first run {first:.3f} s ({calls} calls at {args.latency * 1000:.0f} ms), "
        f"cached rerun {rerun:.3f} s "
        f"({hits} cache hits, {rerun_requests} requests sent) -> {figures['speedup']}x faster"
    )
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()

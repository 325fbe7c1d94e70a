"""Per-call framework overhead of the LiteLLM agent against the fake server (zero latency).

Runs candidates whose model answers every turn with text (no tool work), so the loop's wall time is
model-call machinery only: LiteLLM's request/response path plus ours (retry wrapper, cache key, trace,
usage accounting). Then replays exactly the same requests with bare ``litellm.acompletion`` calls. Prints ms
per call net of the server's own handling time, and the difference: what our framework adds to LiteLLM.

    PYTHONPATH=. python perf/agent_overhead.py [--turns 10] [--candidates 10] [--cache]
        [--settings [--repeats 3] [--in-flight 1] [--figure PATH]]

``--settings`` also replays the same requests under each LiteLLM setting the issue measured (issue 16,
item 3) and prints the process CPU per call side by side, so the settings `agents/model/client.py` uses
(and those it avoids) are justified by a number from this machine: the default aiohttp transport against
``disable_aiohttp_transport``, our pricing arguments against a model registered with
``litellm.register_model`` and against an unpriced model, ``turn_off_message_logging``, and a
one-deployment ``Router``. ``--in-flight N`` replays N calls at a time instead of one after another (the
transport matters most with many connections); ``--figure PATH`` draws a bar chart, one bar per repeat.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agents.base import Limits, ManifestEntry, Task
from agents.llm.agent import LiteLLMAgent
from agents.llm.options import AgentOptions
from agents.model.cache import RequestCache
from agents.model.client import import_litellm
from agents.model.config import ModelConfig
from testbed.fakeserver import FakeServer, Reply, TurnScript

OURS = "ours: aiohttp transport, pricing arguments"


async def _each(bodies: list[dict[str, Any]], call: Any, in_flight: int) -> None:
    """``await call(body)`` for every body, ``in_flight`` at a time (1: one after another, in order)."""
    semaphore = asyncio.Semaphore(in_flight)

    async def one(body: dict[str, Any]) -> None:
        async with semaphore:
            await call(body)

    await asyncio.gather(*(one(body) for body in bodies))


async def _replay(
    server: FakeServer,
    bodies: list[dict[str, Any]],
    pricing: dict[str, float],
    model: str = "openai/fake",
    in_flight: int = 1,
) -> float:
    litellm = import_litellm()

    async def call(body: dict[str, Any]) -> None:
        await litellm.acompletion(
            model=model,
            messages=body["messages"],
            tools=body.get("tools"),
            api_base=server.url,
            api_key="sk-fake",
            max_retries=0,
            temperature=body.get("temperature"),
            max_tokens=body.get("max_tokens"),
            timeout=120.0,
            **pricing,
        )

    start = time.perf_counter()
    await _each(bodies, call, in_flight)
    return time.perf_counter() - start


async def _replay_router(server: FakeServer, bodies: list[dict[str, Any]], in_flight: int = 1) -> None:
    litellm = import_litellm()
    router = litellm.Router(
        model_list=[
            {
                "model_name": "fake",
                "litellm_params": {"model": "openai/fake", "api_base": server.url, "api_key": "sk-fake"},
            }
        ],
        num_retries=0,
    )

    async def call(body: dict[str, Any]) -> None:
        await router.acompletion(
            model="fake", messages=body["messages"], tools=body.get("tools"), timeout=120.0
        )

    await _each(bodies, call, in_flight)


def _settings(
    server: FakeServer,
    bodies: list[dict[str, Any]],
    pricing: dict[str, float],
    repeats: int,
    in_flight: int = 1,
) -> dict[str, list[float]]:
    """Print process CPU per replayed call under each LiteLLM setting (best and median of ``repeats``).

    Returns:
        Every repeat's ms per call, per setting.
    """
    litellm = import_litellm()
    registered = "openai/fake-registered"
    litellm.register_model(
        {
            registered: {
                "input_cost_per_token": pricing.get("input_cost_per_token", 0.0),
                "output_cost_per_token": pricing.get("output_cost_per_token", 0.0),
                "cache_creation_input_token_cost": 0.0,
                "cache_read_input_token_cost": 0.0,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        }
    )

    def with_flag(flag: str, value: bool, run: Any) -> Any:
        def go() -> None:
            old = getattr(litellm, flag)
            setattr(litellm, flag, value)
            # The transport is chosen when a client is built: drop the cached ones.
            litellm.in_memory_llm_clients_cache.flush_cache()
            try:
                run()
            finally:
                setattr(litellm, flag, old)
                litellm.in_memory_llm_clients_cache.flush_cache()

        return go

    def plain(model: str, kwargs: dict[str, float]) -> Any:
        return lambda: asyncio.run(_replay(server, bodies, kwargs, model=model, in_flight=in_flight))

    variants = {
        OURS: plain("openai/fake", pricing),
        "model registered (register_model), no arguments": plain(registered, {}),
        "unpriced model, no pricing": plain("openai/fake-unpriced", {}),
        "disable_aiohttp_transport=True": with_flag(
            "disable_aiohttp_transport", True, plain("openai/fake", pricing)
        ),
        "turn_off_message_logging=True": with_flag(
            "turn_off_message_logging", True, plain("openai/fake", pricing)
        ),
        "Router, one deployment": lambda: asyncio.run(_replay_router(server, bodies, in_flight)),
    }
    runs: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for r in range(repeats):
        # Each round starts one setting later, so no setting always runs first (or right after another).
        for name in names[r % len(names) :] + names[: r % len(names)]:
            cpu = time.process_time()
            variants[name]()
            runs[name].append((time.process_time() - cpu) / len(bodies) * 1000)
    best = {name: min(values) for name, values in runs.items()}
    median = {name: statistics.median(values) for name, values in runs.items()}
    print(
        f"LiteLLM settings, process CPU per call ({repeats} repeats, {len(bodies)} calls, {in_flight} in "
        "flight, server included):"
    )
    print(f"  {'':<50} {'best':>9}  {'vs ours':>8}  {'median':>9}  {'vs ours':>8}")
    for name in runs:
        print(
            f"  {name:<50} {best[name]:6.3f} ms  {(best[name] / best[OURS] - 1) * 100:+7.1f}%  "
            f"{median[name]:6.3f} ms  {(median[name] / median[OURS] - 1) * 100:+7.1f}%"
        )
    return runs


def settings_figure(runs: dict[str, list[float]], calls: int, in_flight: int, path: Path) -> None:
    """Horizontal bars: the CPU per call of each setting, one bar per repeat (in the order run).

    Args:
        runs: ms of process CPU per call, per setting, one value per repeat (in the order they ran).
        calls: Calls per replay (for the caption).
        in_flight: Calls in flight during a replay (for the caption).
        path: Where to write the PNG.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(runs)
    repeats = max(len(v) for v in runs.values())
    height = 0.8 / repeats
    fig, ax = plt.subplots(figsize=(10.5, 0.5 * len(names) * max(1.0, repeats / 2) + 1.5))
    colors = plt.get_cmap("tab10")
    for r in range(repeats):
        ys = [k + (r - (repeats - 1) / 2) * height for k in range(len(names))]
        values = [runs[name][r] if r < len(runs[name]) else 0.0 for name in names]
        ax.barh(ys, values, height, color=colors(r), edgecolor="black", lw=0.4, label=f"repeat {r + 1}")
    ax.axvline(min(runs[OURS]), color="black", ls="--", lw=0.8, label="ours, best repeat")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names)
    ax.invert_yaxis()  # ours first, at the top
    ax.set_xlabel("process CPU per call (ms; lower is better; fake server included)")
    ax.set_ylabel("LiteLLM setting")
    load = os.getloadavg()[0]
    ax.set_title(
        f"bare litellm.acompletion: the agent's {calls} requests replayed, "
        + ("one after another" if in_flight == 1 else f"{in_flight} in flight")
        + ",\n"
        f"each setting once per repeat (rotated order); load average {load:.1f}",
        fontsize=10,
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    fig.subplots_adjust(left=0.36, right=0.82)  # room for the setting names and the legend
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")  # keeps the legend beside the axes in the picture
    plt.close(fig)


async def _agent_runs(agent: LiteLLMAgent, tasks: list[Task]) -> int:
    calls = 0
    for task in tasks:
        calls += (await agent.generate(task)).usage.calls
    return calls


def main() -> None:
    """Measure and print the overhead."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=10, help="model calls per candidate")
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--cache", action="store_true", help="also key every call into a (cold) SQLite cache")
    parser.add_argument("--settings", action="store_true", help="also compare LiteLLM settings side by side")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the --settings comparison")
    parser.add_argument(
        "--in-flight", type=int, default=1, help="with --settings: calls in flight during a replay"
    )
    parser.add_argument("--figure", type=Path, help="with --settings: write the bar chart (PNG) here")
    args = parser.parse_args()
    if args.figure is not None and not args.settings:
        parser.error("--figure needs --settings")
    server = FakeServer(TurnScript([], after_end=Reply(content="thinking", usage=(10, 2)))).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "ds"
            (root / "data").mkdir(parents=True)
            base = Task(
                root=root,
                name="ds",
                entries=(ManifestEntry(0, "data/x.png"),),
                out_dir=Path(tmp) / "c",
                limits=Limits(max_turns=args.turns),
            )
            tasks = [base.for_candidate(k, Path(tmp) / f"c{k}") for k in range(args.candidates)]
            cache = RequestCache(Path(tmp) / "cache.sqlite") if args.cache else None
            model = ModelConfig("openai/fake", api_base=server.url, api_key="sk-fake", cache=cache)
            agent = LiteLLMAgent(model, AgentOptions(vision=False))
            asyncio.run(_agent_runs(agent, [base.for_candidate(99, Path(tmp) / "warm")]))  # warm-up
            server.reset()
            start, cpu = time.perf_counter(), time.process_time()
            calls = asyncio.run(_agent_runs(agent, tasks))
            loop_s, loop_cpu = time.perf_counter() - start, time.process_time() - cpu
            server_s = sum(r.server_s for r in server.requests)
            bodies = server.chat_requests
            server.reset()
            # The same pricing arguments the agent's client passes, so both sides run the same LiteLLM path.
            cpu = time.process_time()
            bare_s = asyncio.run(_replay(server, bodies, agent.client.pricing_params))
            bare_cpu = time.process_time() - cpu
            bare_server_s = sum(r.server_s for r in server.requests)
            if args.settings:
                runs = _settings(server, bodies, agent.client.pricing_params, args.repeats, args.in_flight)
                if args.figure is not None:
                    settings_figure(runs, len(bodies), args.in_flight, args.figure)
                    print(f"figure: {args.figure}")
    finally:
        server.stop()
    agent_ms = (loop_s - server_s) / calls * 1000
    bare_ms = (bare_s - bare_server_s) / len(bodies) * 1000
    mode = "on" if args.cache else "off"
    print(f"calls: {calls} ({args.candidates} candidates x {args.turns} turns), cache={mode}")
    print(f"server time per call:              {server_s / calls * 1000:7.3f} ms")
    print(f"agent loop per call:               {agent_ms:7.3f} ms (client side, net of server time)")
    print(f"bare litellm.acompletion per call: {bare_ms:7.3f} ms (same requests replayed)")
    print(f"our framework on top of litellm:   {agent_ms - bare_ms:7.3f} ms per call")
    # CPU includes the in-process server's request handling (the ``server time`` line, mostly CPU).
    print(
        f"process CPU per call:              agent loop {loop_cpu / calls * 1000:.3f} ms, "
        f"bare litellm {bare_cpu / len(bodies) * 1000:.3f} ms (server handling included in both)"
    )


if __name__ == "__main__":
    main()

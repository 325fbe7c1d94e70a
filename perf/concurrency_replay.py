"""The bare-LiteLLM side of `perf/concurrency.py`: the recorded requests grouped back into conversations,
split over client processes like the run splits its datasets, and replayed with nothing but
``litellm.acompletion`` in a warm client process."""

from __future__ import annotations

import asyncio
import gc
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from testbed.fakeserver import FakeServer, Reply, TurnScript, dataset_of, tool_call

USAGE = (1000, 200)
MODEL = "openai/fake-model"
API_KEY = "sk-fake"
TIMEOUT_S = 30.0
Body = dict[str, Any]


def turn_of(request: Mapping[str, Any]) -> int:
    """The conversation turn of a request: how many assistant messages it already holds."""
    return sum(1 for m in request["messages"] if m.get("role") == "assistant")


def conversations(bodies: Sequence[Body]) -> list[list[Body]]:
    """Group request bodies back into conversations: a request at turn t+1 extends one at turn t.

    Candidates that sent identical requests are interchangeable, so the first open match is taken.

    Raises:
        ValueError: A request continues no recorded conversation.
    """
    by_turn: dict[int, list[Body]] = {}
    for body in bodies:
        by_turn.setdefault(turn_of(body), []).append(body)
    chains = [[b] for b in by_turn.get(0, [])]
    for turn in range(1, max(by_turn, default=0) + 1):
        open_chains = [c for c in chains if len(c) == turn]
        for body in by_turn.get(turn, []):
            for k, chain in enumerate(open_chains):
                head = _skeleton(chain[-1]["messages"])
                if _skeleton(body["messages"])[: len(head)] == head:
                    chain.append(body)
                    del open_chains[k]
                    break
            else:
                raise ValueError(f"a turn-{turn} request continues no recorded conversation")
    return chains


def _skeleton(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """A conversation's shape: the opening messages whole, then each message's role and tool-call ids.

    The agent stubs old tool results, long arguments and old images in later requests (its context window),
    so a later request extends an earlier one in shape, not byte for byte.
    """
    first = next((k for k, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
    shape = [
        (m.get("role"), m.get("tool_call_id"), [c.get("id") for c in m.get("tool_calls") or ()])
        for m in messages
    ]
    return [*messages[:first], *shape[first:]]


def split(
    chains: Sequence[list[Body]], processes: int, concurrency: int
) -> list[tuple[int, list[list[Body]]]]:
    """Spread conversations over processes the way the run spreads datasets: whole datasets, by work.

    Datasets go, largest first, to the least-loaded of ``min(processes, datasets, concurrency)`` processes
    (work = model calls); each process gets a share of ``concurrency`` in proportion to its conversations,
    at least 1, the shares summing to the total.

    Returns:
        ``[(concurrency share, conversations)]`` per process.
    """
    by_dataset: dict[str, list[list[Body]]] = {}
    for chain in chains:
        by_dataset.setdefault(dataset_of(chain[0]), []).append(chain)
    bins = max(1, min(processes, len(by_dataset), concurrency))
    loads = [0] * bins
    parts: list[list[list[Body]]] = [[] for _ in range(bins)]
    for name in sorted(by_dataset, key=lambda d: (-sum(map(len, by_dataset[d])), d)):
        k = loads.index(min(loads))
        parts[k] += by_dataset[name]
        loads[k] += sum(map(len, by_dataset[name]))
    total = sum(len(p) for p in parts) or 1
    exact = [concurrency * len(p) / total for p in parts]
    shares = [max(1, math.floor(e)) for e in exact]
    # Largest remainders get the seats left (or lose the extra ones the minimum of 1 handed out).
    order = sorted(range(bins), key=lambda k: exact[k] - math.floor(exact[k]), reverse=True)
    for k in range(concurrency - sum(shares)):
        shares[order[k % bins]] += 1
    while sum(shares) > concurrency:
        k = max((k for k in range(bins) if shares[k] > 1), key=lambda k: shares[k])
        shares[k] -= 1
    return list(zip(shares, parts, strict=True))


def bound(latency_s: float, plan: Sequence[tuple[int, Sequence[list[Body]]]]) -> float:
    """The latency bound of a split: the slowest process's waves of sequential calls."""
    return max(
        (
            max(map(len, convs), default=0) * latency_s * math.ceil(len(convs) / share)
            for share, convs in plan
        ),
        default=0.0,
    )


def our_pricing() -> dict[str, float]:
    """The pricing arguments our client adds to every call, so both sides run the same LiteLLM path."""
    from agents.model.client import ModelClient
    from agents.model.config import ModelConfig

    return ModelClient(ModelConfig(MODEL, api_base="http://127.0.0.1:9/v1", api_key=API_KEY)).pricing_params


def replay_args(body: Mapping[str, Any], url: str, pricing: Mapping[str, float]) -> dict[str, Any]:
    """The ``litellm.acompletion`` arguments that send ``body`` again, as our client sent it."""
    args = {k: v for k, v in body.items() if k != "model"}
    return {
        **args,
        "model": f"openai/{body['model']}",
        "api_base": url,
        "api_key": API_KEY,
        "timeout": TIMEOUT_S,
        "max_retries": 0,
        "num_retries": 0,
        **pricing,
    }


async def _bare_conversations(job: Mapping[str, Any]) -> int:
    """Replay one process's conversations: ``share`` at a time, each conversation's calls in order."""
    from agents.model.client import import_litellm

    litellm = import_litellm()
    semaphore = asyncio.Semaphore(job["share"])
    url, pricing = job["url"], job["pricing"]

    async def one(chain: list[Body]) -> int:
        async with semaphore:
            for body in chain:
                await litellm.acompletion(**replay_args(body, url, pricing))
        return len(chain)

    return sum(await asyncio.gather(*(one(c) for c in job["conversations"])))


def warm_up(loop: asyncio.AbstractEventLoop, pricing: Mapping[str, float], calls: int = 3) -> None:
    """A few calls with a tool answer to a private zero-latency server, outside any measurement.

    LiteLLM's first ``acompletion`` in a process costs ~0.4 s of CPU (lazy imports, client set-up): a
    one-off cost that both sides pay before they are measured, so the figures compare the steady state.
    """
    from agents.model.client import import_litellm

    litellm = import_litellm()
    listing = tool_call("list_dir", {"path": "data"}, "warm")
    tool = {
        "type": "function",
        "function": {
            "name": "list_dir",
            "description": "List a folder.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    body = {"model": MODEL.split("/", 1)[1], "messages": [{"role": "user", "content": "hi"}], "tools": [tool]}

    async def go(url: str) -> None:
        for _ in range(calls):
            await litellm.acompletion(**replay_args(body, url, pricing))
        # Hang up, so the server's connection threads end: the process is single-threaded again.
        await litellm.close_litellm_async_clients()

    with FakeServer(TurnScript([], after_end=Reply(None, (listing,), USAGE))) as server:
        loop.run_until_complete(go(server.url))


def close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what LiteLLM left running on ``loop`` (its logging worker), then close it."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()


def replay_worker(job: Mapping[str, Any], conn: Any) -> None:
    """A bare client process: warm up, say ``ready``, wait for ``go``, replay, send the result back."""
    # The parent's heap (our run's objects, the recorded requests) is not a bare client's: frozen, the
    # garbage collector never walks it, as it would not exist in a client process of its own.
    gc.freeze()
    try:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        warm_up(loop, job["pricing"])
        conn.send("ready")
        conn.recv()
        cpu = time.process_time()
        calls = loop.run_until_complete(_bare_conversations(job))
        conn.send({"calls": calls, "cpu_s": time.process_time() - cpu})
        close_loop(loop)
    except Exception as exc:  # reported by the parent in one line
        conn.send({"error": f"{type(exc).__name__}: {str(exc).strip()[:300]}"})


def expect(conn: Any, what: str, timeout_s: float = 600) -> Any:
    """The next message of a bare client; a failure or silence becomes one RuntimeError line."""
    if not conn.poll(timeout_s):
        raise RuntimeError(f"a bare client sent no {what} within {timeout_s:.0f} s")
    try:
        message = conn.recv()
    except EOFError:
        raise RuntimeError(f"a bare client died before its {what}") from None
    if isinstance(message, dict) and "error" in message:
        raise RuntimeError(f"a bare client failed: {message['error']}")
    return message

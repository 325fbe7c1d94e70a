"""Our run against bare ``litellm.acompletion``, side by side, when the model is slow (issues 7 and 16).

Ours. ``run_experiment`` (the very code ``python -m experiments`` runs: Hydra config, ``run.concurrency``
candidates in flight, ``run.processes`` worker processes, the validator pool, export and scoring) with
``strategy=s3 strategy.n=N agent=litellm`` against the fake OpenAI server, which answers every request after
a fixed latency and runs in its own process (a real provider does not share the client's CPU). Every
candidate walks the same short conversation, built from the rules baseline's outputs
(`agents.fakeserver.replay`): turn 1 renders every image (and mask), turn 2 writes every annotation, turn 3
writes ``data_meta.json`` and calls ``finish`` — a minimal valid candidate in ``T = 3`` model calls.

Bare. The server records every request body of our run. They are grouped back into conversations (a request
at turn t+1 extends one at turn t) and replayed with nothing but ``litellm.acompletion`` (same body: model,
messages, tools, sampling parameters; the same per-call pricing arguments our client passes) against a fresh
server with the same latency and the same answers, split the way the run splits its work: the same number of
client processes, datasets spread over them by work, each process with its share of the total concurrency
(a semaphore held for a whole conversation, as the run holds it for a whole candidate), a conversation's calls
in sequence. The bare clients are forked from the script's process once it has imported litellm and made its
first calls (LiteLLM's first call in a process costs ~0.4 s of CPU; our run's process is warm too), and
start sending together, on a signal.

Figures, per (latency, processes): model calls per second over the model-call phase on the server's clock
(first request's arrival to the last answer), for ours and for bare; ``ours / bare`` (target >= 0.90 at
200 ms); and the latency bound. The runner starts every candidate at once and each process lets its
share ``C_p`` of them talk to the model at a time; a candidate's calls are sequential. So the phase cannot
end before

    bound = T x L x max_p ceil(D_p x N / C_p)

(``L`` latency per call, ``D_p`` datasets of process p, ``N`` candidates each; the default 10 x 5 = 50
candidates fit in one wave of 64). ``bound / phase`` is 1.0 when no time is lost beyond the latency
(target >= 0.90 at 2 s). CPU: every client process's CPU during the phase (read from ``/proc``), and for the
main process the split by thread group: the event loop (LiteLLM's async path, our agent loop, strategy
code), LiteLLM's worker-thread hop, our tool pool, the validator pool, the rest.

``--light`` replaces the three turns by ``list_dir``, ``list_dir``, ``finish`` (no file written, so the
candidates end as failed and nothing is selected): the same scheduling with almost no tool work.

    PYTHONPATH=. python perf/concurrency.py [--latency 0.2] [--second-latency 2.0] [--processes 1 2]
        [--concurrency 64] [--n 5] [--datasets 10] [--repeats 1] [--light] [--json] [--figure PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import multiprocessing
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tqdm

from agents.fakeserver import FakeServer, Reply, Step, TurnScript, assistant_turn, tool_call
from agents.fakeserver.replay import replay_script

# Ten datasets whose raw files render in milliseconds. Even so, a candidate's tool work (about ten renders
# with PNG encoding, ten annotation writes with schema checks) is ~50-75 ms of CPU, i.e. ~3-4 s for 50
# candidates: at 200 ms latency that alone exceeds the bound on 2 cores (the "our tools" column), which is
# why ``--light`` exists.
# ``--datasets K`` takes the first K: the cheapest to generate and replay come first (the test uses 2).
DATASETS = (
    "synth-histology-png",
    "synth-fundus-npy",
    "synth-hand-xray-pgm",
    "synth-thyroid-us-bmp",
    "synth-chest-xray-dicom",
    "synth-dermoscopy-jpg",
    "synth-elastography-mat",
    "synth-glioma-h5",
    "synth-organ-npz-shards",
    "synth-polyp-coco-png",
    "synth-knee-mr-mat73",
    "synth-nuclei-tiff16",
)
TURNS = 3
USAGE = (1000, 200)
MODEL = "openai/fake-model"
API_KEY = "sk-fake"
TIMEOUT_S = 30.0
Body = dict[str, Any]


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


def dataset_of(request: Mapping[str, Any]) -> str:
    """The dataset a request is about: the name in the task prompt (``Dataset name: ...``).

    Raises:
        KeyError: No message names a dataset.
    """
    # The task prompt follows the instruction text (issue 13): find the message that names the dataset.
    for message in request["messages"]:
        content = message.get("content")
        if isinstance(content, str) and content.startswith("Dataset name:"):
            return content.split("\n", 1)[0].removeprefix("Dataset name:").strip()
    raise KeyError("no message names the dataset")


def turn_of(request: Mapping[str, Any]) -> int:
    """The conversation turn of a request: how many assistant messages it already holds."""
    return sum(1 for m in request["messages"] if m.get("role") == "assistant")


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
        return self.scripts[dataset_of(request)](request, serial)


class ServerProcess:
    """The fake server in a forked child process, so its CPU is not spent under the client's GIL.

    A real provider does not run inside the client's Python process; with the server in-process its request
    parsing and threads (~5 ms of CPU per call at 64 connections) would be charged to the client.
    Arrival stamps use ``time.perf_counter`` (CLOCK_MONOTONIC), which all processes share. On exit the
    arrivals and the chat-completion bodies (in arrival order) come back to the parent.
    """

    def __init__(self, dispatch: Dispatch, latency_s: float) -> None:
        self._ctx = multiprocessing.get_context("fork")
        self._parent, child = self._ctx.Pipe()
        self._process = self._ctx.Process(target=self._serve, args=(dispatch, latency_s, child), daemon=True)
        self.url = ""
        self.pid = 0
        self.arrivals: list[float] = []
        self.bodies: list[Body] = []

    @staticmethod
    def _serve(dispatch: Dispatch, latency_s: float, conn: Any) -> None:
        with FakeServer(dispatch, latency_s=latency_s) as server:
            conn.send(server.url)
            conn.recv()  # block until the parent asks to stop
            conn.send((dispatch.arrivals, server.chat_requests))

    def __enter__(self) -> ServerProcess:
        self._process.start()
        self.pid = self._process.pid or 0
        self.url = self._parent.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        self._parent.send("stop")
        self.arrivals, self.bodies = self._parent.recv()
        self._process.join(timeout=30)

    def phase(self, latency_s: float) -> tuple[float, float]:
        """The model-call phase on the server's clock: first arrival, last answer."""
        if not self.arrivals:
            raise RuntimeError("the fake server received no request")
        return min(self.arrivals), max(self.arrivals) + latency_s


def _has_processes_key() -> bool:
    """Whether this checkout's config has ``run.processes`` (issue 16, item 1)."""
    from experiments import compose_config

    return "processes" in compose_config([]).run


def _config(root: Path, url: str, n: int, concurrency: int, processes: int | None) -> Any:
    from experiments import compose_config

    overrides = [
        "strategy=s3",
        f"strategy.n={n}",
        "agent=litellm",
        f"agent.model={MODEL}",
        f"agent.api_base={url}",
        f"+agent.api_key={API_KEY}",
        "+agent.vision=true",
        f"+agent.timeout_s={TIMEOUT_S}",
        "benchmark=dir",
        f"benchmark.root={root}",
        f"run.concurrency={concurrency}",
        "run.progress=false",
        "run.report=false",
    ]
    if processes is not None:
        overrides.append(f"run.processes={processes}")
    return compose_config(overrides)


# --------------------------------------------------------------------------------------------- CPU sampling

_TICKS = os.sysconf("SC_CLK_TCK")
# Thread-name prefixes in the main process: the event loop, the loop's default executor (LiteLLM's hop),
# our tool pool, the runner's worker pool (the validator).
_GROUPS: tuple[tuple[str, str], ...] = (
    ("event loop", "MainThread"),
    ("litellm worker hop", "asyncio_"),
    ("our tools", "litellm-agent-tools"),
    ("validator pool", "ThreadPoolExecutor"),
)


def _stat_cpu(path: str) -> float | None:
    """CPU seconds (user + system) from a ``/proc/.../stat`` file; None once the thread/process is gone."""
    try:
        with open(path) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _descendants(pid: int) -> list[int]:
    """Every live descendant process of ``pid`` (children are listed per creating thread)."""
    out: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tids = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as handle:
                    kids = [int(k) for k in handle.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


class CpuSampler:
    """Samples, every ``period_s``, the CPU time of this process and of each descendant process (the run's
    workers and pools), the fake server excepted, and with ``threads`` this process's thread groups.

    With ``threads`` the sampler is a daemon thread of this process (thread names are only known here);
    without, it is a forked child process, so this process stays single-threaded: `run.processes` forks its
    workers only from a single-threaded process (else it starts a fork server), and a sampler thread would
    change what is measured.
    """

    def __init__(self, exclude: Sequence[int] = (), period_s: float = 0.05, threads: bool = True) -> None:
        self.period_s = period_s
        self.exclude = set(exclude)
        self.threads = threads
        self.samples: list[tuple[float, dict[str, float], dict[int, float]]] = []
        self._main = os.getpid()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        self._ctx = multiprocessing.get_context("fork")
        self._conn, child = self._ctx.Pipe()
        self._process = self._ctx.Process(target=self._child, args=(child,), daemon=True)

    def _sample(self) -> None:
        # Only the grouped threads are read (never the many short-lived ones): a sample costs well under a
        # millisecond, so the sampler does not perturb what it measures.
        groups = dict.fromkeys([g for g, _ in _GROUPS], 0.0) if self.threads else {}
        for thread in threading.enumerate() if self.threads else ():
            for group, prefix in _GROUPS:
                if thread.name.startswith(prefix) and thread.native_id is not None:
                    groups[group] += _stat_cpu(f"/proc/self/task/{thread.native_id}/stat") or 0.0
                    break
        procs: dict[int, float] = {}
        for pid in [self._main, *_descendants(self._main)]:
            cpu = None if pid in self.exclude else _stat_cpu(f"/proc/{pid}/stat")
            if cpu is not None:
                procs[pid] = cpu
        self.samples.append((time.perf_counter(), groups, procs))

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self._sample()

    def _child(self, conn: Any) -> None:
        self.exclude.add(os.getpid())
        while not conn.poll(self.period_s):
            self._sample()
        self._sample()
        conn.send(self.samples)

    def __enter__(self) -> CpuSampler:
        if self.threads:
            self._sample()
            self._thread.start()
        else:
            self._process.start()
            self.exclude.add(self._process.pid or 0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.threads:
            self._stop.set()
            self._thread.join()
            self._sample()
        else:
            self._conn.send("stop")
            self.samples = self._conn.recv()
            self._process.join(timeout=30)

    def between(self, t0: float, t1: float) -> tuple[dict[str, float], dict[str, float]]:
        """Per-process and per-thread-group CPU spent between two ``perf_counter`` times.

        Returns:
            ``({"main": s, "child 1": s, ...}, {group: s})``: children in decreasing CPU; a process born
            in the window counts from 0, one that ended counts up to its last sample.
        """
        first = min(self.samples, key=lambda s: abs(s[0] - t0))
        last = min(self.samples, key=lambda s: abs(s[0] - t1))
        window = [s for s in self.samples if first[0] <= s[0] <= last[0]]
        groups = {g: last[1][g] - first[1][g] for g in last[1]}
        spent: dict[int, float] = {}
        for _, _, procs in window:
            for pid, cpu in procs.items():
                spent[pid] = cpu - first[2].get(pid, 0.0)
        main = spent.pop(self._main, 0.0)
        children = sorted(spent.values(), reverse=True)
        return {"main": main, **{f"child {k + 1}": v for k, v in enumerate(children) if v > 0}}, groups


# ------------------------------------------------------------------------------------------ the two sides


@dataclass
class Side:
    """One side's numbers for one (latency, processes) point.

    Attributes:
        calls: Chat-completion requests the server received.
        phase_s: First arrival to last answer, server clock.
        cpu_s: CPU seconds per client process during the phase.
        bodies: The request bodies, in arrival order (not printed).
    """

    calls: int
    phase_s: float
    cpu_s: dict[str, float]
    bodies: list[Body] = field(repr=False, default_factory=list)

    @property
    def throughput(self) -> float:
        """Model calls per second over the phase."""
        return self.calls / self.phase_s if self.phase_s > 0 else math.inf

    def cpu_ms_per_call(self) -> float:
        """All client processes' CPU in the phase, per model call."""
        return sum(self.cpu_s.values()) / max(1, self.calls) * 1000


@dataclass
class Comparison:
    """Ours and bare at one latency and process count."""

    latency_s: float
    processes: int
    ours_processes: int
    concurrency: int
    shares: list[int]
    candidates: int
    bound_s: float
    ours: Side
    bare: Side
    groups: dict[str, float]
    wall_s: float
    e2e: float
    incomplete: bool

    @property
    def ratio(self) -> float:
        """Our throughput over bare LiteLLM's (target >= 0.90)."""
        return self.ours.throughput / self.bare.throughput

    @property
    def bound_ratio(self) -> float:
        """Latency bound over our measured phase (target >= 0.90 at 2 s)."""
        return self.bound_s / self.ours.phase_s

    @property
    def bare_bound_ratio(self) -> float:
        """Latency bound over bare LiteLLM's measured phase."""
        return self.bound_s / self.bare.phase_s

    @property
    def bound_throughput(self) -> float:
        """Model calls per second if only the latency counted."""
        return self.ours.calls / self.bound_s if self.bound_s > 0 else math.inf


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
                head = chain[-1]["messages"]
                if body["messages"][: len(head)] == head:
                    chain.append(body)
                    del open_chains[k]
                    break
            else:
                raise ValueError(f"a turn-{turn} request continues no recorded conversation")
    return chains


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
    from agents.litellm.client import ModelClient

    return ModelClient(MODEL, api_base="http://127.0.0.1:9/v1", api_key=API_KEY).pricing_params


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
    from agents.litellm.client import import_litellm

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
    from agents.litellm.client import import_litellm

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


def _bare_process(job: Mapping[str, Any], conn: Any) -> None:
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


def measure_bare(
    chains: Sequence[list[Body]],
    scripts: Mapping[str, TurnScript],
    latency: float,
    processes: int,
    concurrency: int,
    pricing: Mapping[str, float],
) -> Side:
    """Replay the conversations with bare ``litellm.acompletion`` in ``processes`` client processes.

    The clients are forked from this process, which has imported litellm and made its first calls, so
    they start warm, as our run's process is; they start sending together, on a signal.
    """
    plan = split(chains, processes, concurrency)
    ctx = multiprocessing.get_context("fork")
    with ServerProcess(Dispatch(scripts), latency) as server:
        workers = []
        for share, convs in plan:
            job = {"url": server.url, "share": share, "conversations": convs, "pricing": dict(pricing)}
            parent, child = ctx.Pipe()
            process = ctx.Process(target=_bare_process, args=(job, child), daemon=True)
            process.start()
            workers.append((process, parent))
        results: list[dict[str, Any]] = []
        try:
            for _, conn in workers:
                _expect(conn, "ready")
            for _, conn in workers:  # all start together
                conn.send("go")
            for _, conn in workers:
                results.append(_expect(conn, "result"))
        finally:
            for process, _ in workers:
                process.join(timeout=30)
                if process.is_alive():
                    process.kill()
    first, last = server.phase(latency)
    return Side(
        calls=len(server.bodies),
        phase_s=last - first,
        cpu_s={f"worker {k + 1}": r["cpu_s"] for k, r in enumerate(results)},
        bodies=server.bodies,
    )


def _expect(conn: Any, what: str, timeout_s: float = 600) -> Any:
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


@dataclass
class Workload:
    """The generated suite and the server scripts, built once and shared by every measurement."""

    root: Path
    names: list[str]
    n: int
    scripts: dict[str, TurnScript]
    tmp: Path
    light: bool
    runs: int = 0


def workload(tmp: Path, names: Sequence[str], n: int, light: bool) -> Workload:
    """Generate the suite (only ``names``) and build each dataset's three-turn script."""
    from benchmark.synth.suite import generate_suite

    root = tmp / "suite"
    generate_suite(root, size="small", only=list(names))
    scripts = {
        name: light_script() if light else short_script(root / name, tmp / "rules" / name) for name in names
    }
    return Workload(root, list(names), n, scripts, tmp, light)


def measure_ours(
    work: Workload, latency: float, processes: int, concurrency: int, pass_processes: bool
) -> tuple[Side, dict[str, float], float, Any]:
    """Run S3 through ``run_experiment`` against the fake server at ``latency``.

    Returns:
        Our side, the main process's CPU per thread group in the phase, the run's wall time, its outcome
        (None for ``--light``, whose candidates write nothing).
    """
    from experiments.run import NothingProduced, run_experiment

    work.runs += 1
    if threading.active_count() > 1:
        names = ", ".join(t.name for t in threading.enumerate() if t is not threading.current_thread())
        print(f"NOTE: threads before our run ({names}): run.processes would not fork its workers")
    with ServerProcess(Dispatch(work.scripts), latency) as server:
        cfg = _config(work.root, server.url, work.n, concurrency, processes if pass_processes else None)
        with CpuSampler(exclude=[server.pid], threads=not (pass_processes and processes > 1)) as sampler:
            start = time.perf_counter()
            try:
                outcome = run_experiment(cfg, work.tmp / f"run-{work.runs}")
            except NothingProduced:
                if not work.light:
                    raise
                outcome = None  # --light writes nothing by design; the phase is what is measured
            wall = time.perf_counter() - start
    first, last = server.phase(latency)
    per_process, groups = sampler.between(first, last)
    return Side(len(server.bodies), last - first, per_process, server.bodies), groups, wall, outcome


def compare(
    work: Workload, latency: float, processes: int, concurrency: int, pass_processes: bool
) -> Comparison:
    """Ours, then bare LiteLLM replaying the requests ours sent, at one latency and process count."""
    ours, groups, wall, outcome = measure_ours(work, latency, processes, concurrency, pass_processes)
    chains = conversations(ours.bodies)
    plan = split(chains, processes, concurrency)
    bare = measure_bare(chains, work.scripts, latency, processes, concurrency, our_pricing())
    return Comparison(
        latency_s=latency,
        processes=processes,
        ours_processes=processes if pass_processes else 1,
        concurrency=concurrency,
        shares=[share for share, _ in plan],
        candidates=len(chains),
        bound_s=bound(latency, plan),
        ours=ours,
        bare=bare,
        groups=groups,
        wall_s=wall,
        e2e=math.nan if outcome is None else outcome.metrics["official"]["macro"].get("E2E", math.nan),
        incomplete=outcome is None or outcome.incomplete,
    )


# ------------------------------------------------------------------------------------------------ output


def _cpu_text(side: Side) -> str:
    per_call = 1000 / max(1, side.calls)
    return ", ".join(f"{name} {cpu:.2f} s ({cpu * per_call:.1f} ms/call)" for name, cpu in side.cpu_s.items())


def report(c: Comparison, n_datasets: int, n: int) -> None:
    """Print one comparison."""
    head = f"-- latency {c.latency_s * 1000:.0f} ms, {c.processes} process(es) --"
    print(f"\n{head}")
    if c.ours_processes != c.processes:
        print(f"NOTE: run.processes is not in this checkout's config: ours ran in {c.ours_processes} process")
    print(
        f"workload:                   {n_datasets} datasets x {n} candidates = {c.candidates} conversations, "
        f"concurrency {c.concurrency} (per process {'+'.join(map(str, c.shares))})"
    )
    print(f"model calls:                ours {c.ours.calls}, bare {c.bare.calls}")
    print(
        f"model-call phase:           ours {c.ours.phase_s:.3f} s, bare {c.bare.phase_s:.3f} s, "
        f"latency bound {c.bound_s:.3f} s  (server clock: first request to last answer)"
    )
    print(
        f"throughput (calls/s):       ours {c.ours.throughput:.1f}, bare {c.bare.throughput:.1f}, "
        f"latency bound {c.bound_throughput:.1f}"
    )
    print(f"ours / bare litellm:        {c.ratio:.3f}   (target >= 0.90 at 200 ms)")
    print(
        f"ratio (bound / measured):   {c.bound_ratio:.3f}   (bare litellm {c.bare_bound_ratio:.3f}; "
        "target >= 0.90 at 2 s)"
    )
    print(f"CPU in the phase, ours:     {_cpu_text(c.ours)}")
    per_call = 1000 / max(1, c.ours.calls)
    other = c.ours.cpu_s.get("main", 0.0) - sum(c.groups.values())
    if c.groups:  # sampled by thread only when ours ran in this process
        print(
            "  main process by thread:   "
            + ", ".join(f"{g} {v * per_call:.1f}" for g, v in c.groups.items())
            + f", other {other * per_call:.1f} ms/call"
        )
    print(f"CPU in the phase, bare:     {_cpu_text(c.bare)}")
    print(f"whole run wall time (ours): {c.wall_s:.3f} s (validation, selection, export, scoring included)")
    print(f"official macro E2E (ours):  {c.e2e:.4f}; incomplete={c.incomplete}")


def _finite(value: float) -> float | None:
    """Rounded, or None for the infinite throughput of a zero latency bound (JSON has no infinity)."""
    return round(value, 4) if math.isfinite(value) else None


def summarize(results: Sequence[Comparison]) -> list[dict[str, Any]]:
    """Medians over repeats, one entry per (latency, processes)."""
    keys = sorted({(c.latency_s, c.processes) for c in results})
    out = []
    for latency, processes in keys:
        runs = [c for c in results if (c.latency_s, c.processes) == (latency, processes)]

        def med(values: Sequence[float]) -> float:
            return round(statistics.median(values), 4)

        out.append(
            {
                "latency_s": latency,
                "processes": processes,
                "ours_processes": runs[0].ours_processes,
                "concurrency": runs[0].concurrency,
                "shares": runs[0].shares,
                "candidates": runs[0].candidates,
                "calls": runs[0].ours.calls,
                "bare_calls": runs[0].bare.calls,
                "repeats": len(runs),
                "bound_s": round(runs[0].bound_s, 4),
                "ours_calls_per_s": med([c.ours.throughput for c in runs]),
                "bare_calls_per_s": med([c.bare.throughput for c in runs]),
                "bound_calls_per_s": _finite(runs[0].bound_throughput),
                "ours_over_bare": med([c.ratio for c in runs]),
                "bound_ratio": med([c.bound_ratio for c in runs]),
                "bare_bound_ratio": med([c.bare_bound_ratio for c in runs]),
                "ours_cpu_ms_per_call": med([c.ours.cpu_ms_per_call() for c in runs]),
                "bare_cpu_ms_per_call": med([c.bare.cpu_ms_per_call() for c in runs]),
                "runs": [
                    {
                        "ours_calls_per_s": round(c.ours.throughput, 3),
                        "bare_calls_per_s": round(c.bare.throughput, 3),
                        "ours_cpu_s": {k: round(v, 3) for k, v in c.ours.cpu_s.items()},
                        "bare_cpu_s": {k: round(v, 3) for k, v in c.bare.cpu_s.items()},
                    }
                    for c in runs
                ],
            }
        )
    return out


def _tick(point: Mapping[str, Any]) -> str:
    """The x label of one (latency, processes) point; says when ours could not use that many processes."""
    n = point["processes"]
    label = f"{n} process" + ("es" if n > 1 else "")
    if point["ours_processes"] != n:
        label += f"\n(ours: {point['ours_processes']}; no run.processes)"
    return label


def figure(summary: Sequence[Mapping[str, Any]], path: Path, load: Sequence[float]) -> None:
    """Bar chart of calls per second: ours, bare LiteLLM, the latency bound; by latency and processes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latencies = sorted({s["latency_s"] for s in summary})
    fig, axes = plt.subplots(1, len(latencies), figsize=(4.6 * len(latencies) + 0.6, 4.6), squeeze=False)
    sides = (
        ("ours_calls_per_s", "ours (run_experiment)", "tab:blue"),
        ("bare_calls_per_s", "bare litellm.acompletion", "tab:orange"),
        ("bound_calls_per_s", "latency bound", "0.7"),
    )
    width = 0.26
    for ax, latency in zip(axes[0], latencies, strict=True):
        points = [s for s in summary if s["latency_s"] == latency]
        for j, (key, label, color) in enumerate(sides):
            xs = [i + (j - 1) * width for i in range(len(points))]
            ax.bar(
                xs,
                [p[key] or 0.0 for p in points],
                width,
                label=label,
                color=color,
                edgecolor="black",
                lw=0.5,
            )
            if key != "bound_calls_per_s":  # every repeat as a dot on its median bar
                for x, p in zip(xs, points, strict=True):
                    values = [r[key] for r in p["runs"]]
                    ax.plot([x] * len(values), values, "k.", ms=4)
        for i, p in enumerate(points):
            ax.annotate(
                f"ours/bare {p['ours_over_bare']:.2f}\nbound/phase {p['bound_ratio']:.2f}",
                (i, max(p[k] or 0.0 for k, _, _ in sides)),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=8,
            )
        top = max(max(p[k] or 0.0 for k, _, _ in sides) for p in points)
        ax.set_ylim(0, top * 1.3)
        ax.set_xticks(range(len(points)))
        ax.set_xticklabels([_tick(p) for p in points])
        ax.set_title(f"latency {latency * 1000:.0f} ms per call")
        ax.set_ylabel("model calls per second (server clock)")
        ax.set_xlabel(f"client processes (concurrency {points[0]['concurrency']} in total)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
    n = summary[0]["candidates"]
    fig.suptitle(
        f"S3, {n} candidates x {summary[0]['calls'] // max(1, n)} calls; median of {summary[0]['repeats']} "
        f"(dots: each run); load average {load[0]:.1f}",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> list[Comparison]:
    """Measure ours and bare LiteLLM side by side and print the figures.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        Every comparison made (repeats included), request bodies attached.
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call (the headline)")
    parser.add_argument(
        "--second-latency", type=float, default=2.0, help="a second run at this latency (0: skip)"
    )
    parser.add_argument(
        "--processes", type=int, nargs="+", default=[1], help="client processes (ours: run.processes)"
    )
    parser.add_argument("--concurrency", type=int, default=64, help="run.concurrency (candidates in flight)")
    parser.add_argument("--n", type=int, default=5, help="candidates per dataset (S3 n)")
    parser.add_argument("--datasets", type=int, default=10, help=f"how many of {len(DATASETS)} datasets")
    parser.add_argument("--repeats", type=int, default=1, help="interleaved rounds; medians are printed")
    parser.add_argument("--light", action="store_true", help="turns without file work (see above)")
    parser.add_argument("--json", action="store_true", help="end with one JSON summary line")
    parser.add_argument("--figure", type=Path, help="write the bar chart (PNG) here")
    args = parser.parse_args(argv)
    if min(args.processes) < 1 or args.concurrency < 1 or args.n < 1 or args.repeats < 1:
        parser.error("--processes, --concurrency, --n and --repeats must be >= 1")
    if not 1 <= args.datasets <= len(DATASETS):
        parser.error(f"--datasets must be between 1 and {len(DATASETS)}")

    # One-off costs (the import, LiteLLM's first call) are paid here, as the bare workers pay theirs
    # before their start signal: the figures compare the steady state.
    loop = asyncio.new_event_loop()
    warm_up(loop, our_pricing())
    close_loop(loop)
    # No tqdm monitor thread: one left behind by a run would make the next run's `run.processes` start its
    # workers from a fork server instead of forking them (it forks only a single-threaded process), which a
    # fresh `python -m experiments` would not do.
    tqdm.tqdm.monitor_interval = 0
    load_before = os.getloadavg()
    has_key = _has_processes_key()
    latencies = [args.latency] + ([args.second_latency] if args.second_latency > 0 else [])
    names = list(DATASETS[: args.datasets])
    results: list[Comparison] = []
    with tempfile.TemporaryDirectory(prefix="perf-concurrency-") as tmp:
        work = workload(Path(tmp), names, args.n, args.light)
        for _ in range(args.repeats):
            for latency in latencies:
                for processes in args.processes:
                    comparison = compare(work, latency, processes, args.concurrency, has_key)
                    report(comparison, len(names), args.n)
                    results.append(comparison)
    summary = summarize(results)
    load = os.getloadavg()
    print(f"\nload average {load_before[0]:.1f} before, {load[0]:.1f} after (1 min)")
    for s in summary:
        print(
            f"median of {s['repeats']}: latency {s['latency_s'] * 1000:.0f} ms, "
            f"{s['processes']} process(es): "
            f"ours/bare {s['ours_over_bare']:.3f}, bound/measured {s['bound_ratio']:.3f} "
            f"(bare {s['bare_bound_ratio']:.3f}); calls/s ours {s['ours_calls_per_s']:.1f}, "
            f"bare {s['bare_calls_per_s']:.1f}, bound {s['bound_calls_per_s'] or math.inf:.1f}"
        )
    if args.figure is not None:
        figure(summary, args.figure, load)
        print(f"figure: {args.figure}")
    if args.json:
        line = {
            "script": "concurrency.py",
            "load_average": [round(load_before[0], 2), round(load[0], 2)],
            "run_processes_key": has_key,
            "light": args.light,
            "results": summary,
        }
        print(json.dumps(line, separators=(",", ":")))
    return results


if __name__ == "__main__":
    try:
        main()
    except (RuntimeError, ValueError) as exc:  # a failed measurement: one line, no traceback
        raise SystemExit(f"perf/concurrency.py: {exc}") from None

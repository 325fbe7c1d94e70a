"""What the LiteLLM agent sends per sample as a dataset grows: requests, prompt tokens, images, cost.

``python perf/agent_tokens.py [--mode tool] [--sizes 10 20 100] [--dataset NAME] [--usd-per-mtok 0.30]``

For each size N it builds the bundled dataset with N samples (``testbed.synth --samples N``),
serves the `rules` baseline's decisions on it through the offline fake provider
(``testbed.fakeserver --replay``), runs the LiteLLM agent with its default configuration (vision on, as a
VLM run has it) through the real LiteLLM path, and reads every request the server received. Printed per
size: requests, prompt tokens per sample (text estimated as characters / 4, tool definitions included, plus
a fixed cost per image), images per request, the largest request, USD per sample at the stated input price,
the candidate's status, and the growth ratios between sizes (the issue's bound: <= 1.25 from 10 to 20 and
from 20 to 100 samples).
``--unbounded`` runs the old design for comparison (one conversation per dataset, nothing elided).

The replay does no exploration at all, so real models spend more per sample; what this measures is how the
conversation design scales, which is what the replay shares with them.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: Prompt tokens charged per image part: a <= 512 px image is one 512-px tile at OpenAI's high detail
#: (85 base + 170 per tile); other providers charge the same order of magnitude.
IMAGE_TOKENS = 255
MODES = ("tool",)


@dataclass(frozen=True)
class Measured:
    """What one agent run sent, summed over its requests."""

    samples: int
    requests: int
    text_tokens: int
    images: int
    max_images: int
    largest_text_tokens: int
    status: str
    reason: str | None

    @property
    def prompt_tokens(self) -> int:
        """Text plus image tokens over every request."""
        return self.text_tokens + IMAGE_TOKENS * self.images

    def usd(self, usd_per_mtok: float) -> float:
        """Input cost at ``usd_per_mtok`` dollars per million prompt tokens."""
        return self.prompt_tokens * usd_per_mtok / 1e6


def _text_tokens(request: Mapping[str, Any]) -> int:
    from agents.llm.context import text_chars

    tools = len(json.dumps(request.get("tools") or [], default=str))
    return (text_chars(request.get("messages") or []) + tools) // 4


def measure(mode: str, dataset: str, samples: int, work: Path, unbounded: bool) -> Measured:
    """Build the dataset with ``samples`` samples, replay it through the agent, and count what was sent.

    Args:
        mode: The agent mode (``tool``).
        dataset: A bundled dataset name.
        samples: Its sample count.
        work: A scratch folder.
        unbounded: Run the old design (one conversation, nothing elided) instead of the default.

    Returns:
        The totals.
    """
    from agents.base import Limits, Task
    from agents.llm.agent import LiteLLMAgent
    from agents.llm.context import count_images
    from agents.llm.options import AgentOptions
    from agents.model.config import ModelConfig
    from benchmark.discover import Dataset
    from testbed.fakeserver import FakeServer
    from testbed.fakeserver.replay import replay_script
    from testbed.synth.suite import generate_suite

    root = work / f"n{samples}"
    generate_suite(root, only=[dataset], samples=samples)
    script = replay_script(root / dataset, work_dir=work / f"rules{samples}", check=False)
    options: dict[str, Any] = {"vision": True}
    limits = Limits()
    if unbounded:
        # The old design had one set of limits per dataset; lifted here so its whole cost shows.
        options.update(batch_size=10**6, keep_results=10**6, max_images=10**6)
        limits = Limits(max_turns=10**4, max_tool_calls=10**4, max_tokens=10**10)
    with FakeServer(script) as server:
        model = ModelConfig("openai/fake-model", api_base=server.url, api_key="sk-fake")
        agent = LiteLLMAgent(model, AgentOptions(**options))
        task = Task.from_dataset(Dataset.from_root(root / dataset), work / f"out{samples}", limits=limits)
        candidate = asyncio.run(agent.generate(task))
        agent.close()
        requests = server.chat_requests
    tokens = [_text_tokens(r) for r in requests]
    images = [count_images(r.get("messages") or []) for r in requests]
    return Measured(
        samples=samples,
        requests=len(requests),
        text_tokens=sum(tokens),
        images=sum(images),
        max_images=max(images, default=0),
        largest_text_tokens=max(tokens, default=0),
        status=candidate.status,
        reason=candidate.reason,
    )


def table(rows: Sequence[Measured], usd_per_mtok: float) -> str:
    """The Markdown table of the measurements, one row per size."""
    lines = [
        "| samples | requests | requests/sample | prompt tokens/sample | images/request (mean, max) "
        f"| largest request (text tokens) | USD/sample at ${usd_per_mtok:.2f}/M | status |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for m in rows:
        lines.append(
            f"| {m.samples} | {m.requests} | {m.requests / m.samples:.2f} "
            f"| {m.prompt_tokens / m.samples:,.0f} "
            f"| {m.images / max(1, m.requests):.2f}, {m.max_images} | {m.largest_text_tokens:,} "
            f"| {m.usd(usd_per_mtok) / m.samples:.5f} | {m.status} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure and print.

    Args:
        argv: Arguments (default ``sys.argv[1:]``).

    Returns:
        0, or 1 when a growth ratio is over the bound or a candidate did not finish ``ok``.
    """
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=MODES, default="tool", help="the agent mode measured")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 100], help="sample counts")
    parser.add_argument("--dataset", default="synth-dermoscopy-jpg", help="a bundled dataset name")
    parser.add_argument("--usd-per-mtok", type=float, default=0.30, help="input price, USD per 1M tokens")
    parser.add_argument(
        "--unbounded", action="store_true", help="the old design: one conversation, no elision"
    )
    parser.add_argument("--bound", type=float, default=1.25, help="largest allowed per-sample growth ratio")
    args = parser.parse_args(argv)
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with tempfile.TemporaryDirectory(prefix="agent-tokens-") as tmp:
        rows = [measure(args.mode, args.dataset, n, Path(tmp), args.unbounded) for n in sorted(args.sizes)]
    design = "one conversation, nothing elided" if args.unbounded else "default config"
    print(f"{args.dataset}, mode {args.mode}, {design}; {IMAGE_TOKENS} tokens per image, text = chars / 4")
    print(table(rows, args.usd_per_mtok))
    worst = 0.0
    for before, after in itertools.pairwise(rows):
        ratio = (after.prompt_tokens / after.samples) / (before.prompt_tokens / before.samples)
        worst = max(worst, ratio)
        print(f"prompt tokens per sample, {after.samples} vs {before.samples} samples: {ratio:.3f}x")
    for m in rows:
        if m.status != "ok":
            print(f"{m.samples} samples: candidate {m.status}: {m.reason}")
    mean_images = statistics.mean(m.images / max(1, m.requests) for m in rows)
    print(f"mean images per request over sizes: {mean_images:.2f}")
    return 0 if worst <= args.bound and all(m.status == "ok" for m in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""The LiteLLM agent's tool mode and script mode (``agent.mode=script``) on the same replayed datasets.

For each dataset of the bundled synthetic suite, the `rules` baseline's decisions are served by the fake
server twice: as per-sample tool calls (`testbed.fakeserver.replay.replay_script`, ``agent.mode=tools``) and
as one conversion script (`testbed.fakeserver.script_replay.script_mode_replay`, ``agent.mode=script``). Both
run through the real LiteLLM path with vision on and the limits lifted (so neither is cut short). Prints,
per dataset and mode: model calls, prompt tokens as the fake server reports them (4 characters per token
over exactly what was sent, image data URLs included), the text tokens (the same estimate without the image
data), per sample and for the largest request, the image parts sent (and the most in one request),
completion tokens, USD at the stated price over the server's tokens, and the official E2E against the ground
truth.

    PYTHONPATH=. python perf/agent_modes.py [--size small|full] [--datasets a,b,c]
        [--usd-in 0.30] [--usd-out 1.20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from agents.base import Limits, Task
from agents.llm.agent import LiteLLMAgent
from agents.llm.options import AgentOptions
from agents.model.config import ModelConfig, TokenPrice
from testbed.fakeserver import FakeServer, TurnScript
from testbed.fakeserver.replay import replay_script
from testbed.fakeserver.script_replay import script_mode_replay

DATASETS = ("synth-dermoscopy-jpg", "synth-brain-mr-nifti", "synth-polyp-coco-png")


def _images(body: dict[str, Any]) -> int:
    count = 0
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for part in content if part.get("type") == "image_url")
    return count


def _text_tokens(body: dict[str, Any]) -> int:
    """The fake server's estimate (4 characters per token) with the images' base64 data left out.

    The server itself counts an image's data URL as text (`testbed.fakeserver.server`), which no provider
    does; providers bill an image by its size instead, so the text share is reported on its own.
    """
    messages = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            content = [p if p.get("type") != "image_url" else {"type": "image_url"} for p in content]
            message = {**message, "content": content}
        messages.append(message)
    return max(1, len(json.dumps(messages, sort_keys=True, default=str)) // 4)


def _run(root: Path, mode: str, script: TurnScript, price: TokenPrice) -> dict[str, Any]:
    from benchmark.discover import Dataset
    from benchmark.score import score_dataset

    run = f"perf_{mode}"
    with FakeServer(script) as server:
        model = ModelConfig("openai/fake-model", api_base=server.url, api_key="sk-fake", price=price)
        agent = LiteLLMAgent(model, AgentOptions(vision=True, mode=mode))
        task = Task.from_dataset(
            Dataset.from_root(root),
            root / "VLM" / run,
            limits=Limits(max_turns=10_000, max_tool_calls=100_000, max_tokens=10**10),
        )
        candidate = asyncio.run(agent.generate(task))
        bodies = server.chat_requests
    scored = score_dataset(root, models=[run], profile="official")["models"][run]
    samples = len(task.entries)
    return {
        "mode": mode,
        "status": candidate.status,
        "samples": samples,
        "calls": candidate.usage.calls,
        "prompt": candidate.usage.prompt_tokens,
        "completion": candidate.usage.completion_tokens,
        "text": sum(_text_tokens(b) for b in bodies),
        "largest": max(_text_tokens(b) for b in bodies),
        "images": max(_images(b) for b in bodies),
        "image_parts": sum(_images(b) for b in bodies),
        "usd": candidate.usage.cost_usd,
        "e2e": scored["metrics"]["E2E"] if scored["error"] is None else None,
    }


def main() -> None:
    """Generate the datasets, run both modes on each, print one Markdown table."""
    from testbed.synth.suite import generate_suite

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="small", choices=("small", "full"))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--usd-in", type=float, default=0.30, help="USD per million prompt tokens")
    parser.add_argument("--usd-out", type=float, default=1.20, help="USD per million completion tokens")
    args = parser.parse_args()
    price = TokenPrice(prompt_usd_per_mtok=args.usd_in, completion_usd_per_mtok=args.usd_out)
    names = [n for n in args.datasets.split(",") if n]
    print(f"price: ${args.usd_in}/M prompt, ${args.usd_out}/M completion tokens; suite size {args.size}")
    print(
        "| dataset | mode | samples | calls | prompt tok (server) | text tok | text tok/sample "
        "| largest request (text tok) | image parts (most in one request) | completion tok | USD | E2E |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="agent-modes-") as tmp:
        suite = Path(tmp) / "suite"
        generate_suite(suite, size=args.size, only=names)
        for name in names:
            root = suite / name
            scripts = {
                "tools": replay_script(root, work_dir=Path(tmp) / f"{name}-rules-tools", check=False),
                "script": script_mode_replay(root, work_dir=Path(tmp) / f"{name}-rules-script"),
            }
            for mode, script in scripts.items():
                r = _run(root, mode, script, price)
                e2e = "n/a" if r["e2e"] is None else f"{r['e2e']:.2f}"
                print(
                    f"| {name} | {mode} | {r['samples']} | {r['calls']} | {r['prompt']:,} | {r['text']:,} | "
                    f"{r['text'] // r['samples']:,} | {r['largest']:,} | "
                    f"{r['image_parts']} ({r['images']}) | {r['completion']:,} | {r['usd']:.4f} | {e2e} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()

"""Bad model output: garbage text, invalid JSON arguments, wrong types, 100 kB outputs, tool loops."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fault_builders import N_SAMPLES, make_agent, png_dataset, png_task, standard_steps

from agents.base import Limits
from testbed.fakeserver import FakeServer, Reply, TurnScript, assistant_turn, tool_call

BIG = "x" * 100_000


def _forever(step: Reply) -> TurnScript:
    return TurnScript([step] * 200)


def _candidate_of(request: dict[str, Any]) -> int:
    # The user message that introduces the dataset (the task instruction comes before it).
    text = next(
        c
        for m in request["messages"]
        if m["role"] == "user"
        for c in [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])]
        if "Candidate: " in c
    )
    return int(text.split("Candidate: ", 1)[1].split("\n", 1)[0].strip().split()[0])


def test_each_kind_of_bad_output_is_bounded_fails_its_candidate_and_the_others_finish(tmp_path: Path) -> None:
    """Expect: candidates answering with garbage text, invalid JSON, wrongly typed arguments, 100 kB tool
    arguments or an endless tool loop each stop within their limits (turns/tool calls) and are marked
    failed with a reason, while a well-behaved candidate in the same concurrent run finishes ``ok``."""
    root = png_dataset(tmp_path / "tiny")
    scripts = {
        0: TurnScript(standard_steps()),
        1: _forever(Reply(content="%$#@ garbage ~~ not a tool call " * 10)),
        2: _forever(assistant_turn(tool_call("render", '{"index": 0, "source": ', "bad"))),
        3: _forever(assistant_turn(tool_call("render", {"index": "zero", "source": 7}, "typ"))),
        4: _forever(assistant_turn(tool_call("write_annotation", {"index": 0, "annotation": BIG}, "big"))),
        5: _forever(assistant_turn(tool_call("list_dir", {"path": "data"}, "loop"))),
        6: _forever(Reply(content=BIG)),
    }

    def script(request: dict[str, Any], serial: int):
        return scripts[_candidate_of(request)](request, serial)

    server = FakeServer(script).start()
    limits = Limits(max_turns=12, max_tool_calls=20, max_tokens=10_000_000)
    try:
        agent = make_agent(server)
        base = png_task(root, tmp_path / "c0", limits=limits)
        tasks = [base.for_candidate(k, tmp_path / f"c{k}") for k in scripts]

        async def run_all():
            return await asyncio.wait_for(asyncio.gather(*(agent.generate(t) for t in tasks)), 120)

        out = asyncio.run(run_all())
    finally:
        server.stop()
    print(
        "\n"
        + "\n".join(
            f"candidate {c.candidate_index}: {c.status}, {c.usage.calls} calls: {c.reason}" for c in out
        )
    )
    assert out[0].status == "ok", out[0].reason
    assert all(
        (out[0].output_dir / "standardized_annotations" / f"{i}.json").is_file() for i in range(N_SAMPLES)
    )
    for cand in out[1:]:
        assert cand.status == "failed", (cand.candidate_index, cand.reason)
        assert cand.reason
        assert cand.usage.calls <= limits.max_turns
    assert out[5].usage.calls <= limits.max_tool_calls
    assert not (out[4].output_dir / "standardized_annotations" / "0.json").exists()

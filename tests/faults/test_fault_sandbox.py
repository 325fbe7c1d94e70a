"""Sandbox: escape attempts through every tool of the LiteLLM agent, driven by a scripted model."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from fault_builders import make_agent, png_dataset, png_task, tree_digest

from agents.base import Limits
from testbed.fakeserver import FakeServer, TurnScript, assistant_turn, tool_call

ESCAPES = [
    ("list_dir", {"path": "../VLM"}),
    ("list_dir", {"path": "/etc"}),
    ("read_text", {"path": "../VLM/ground_truth_tiny.json"}),
    ("read_text", {"path": "data/../../outside/secret.txt"}),
    ("read_text", {"path": "%2e%2e/VLM/random.txt"}),
    ("read_text", {"path": "data\\..\\..\\outside\\secret.txt"}),
    ("read_text", {"path": "~/.bashrc"}),
    ("inspect", {"path": "data/escape_link/secret.txt"}),
    ("inspect", {"path": "data/benign/img0.png\u0000.txt"}),
    ("render", {"index": 0, "source": "../outside/secret.png"}),
    ("render", {"index": 99, "source": "data/benign/img0.png"}),
    ("view_image", {"path": "../../outside/secret.png", "where": "output"}),
    ("view_image", {"path": "../VLM/gt.png", "where": "dataset"}),
    ("write_annotation", {"index": -1, "annotation": {}}),
    ("write_annotation", {"index": "../../x", "annotation": {}}),
    ("write_annotation", {"index": 0, "annotation": {"record": {"image_path": "images/0.png"}}}),
]


def test_escape_attempts_through_every_tool_are_refused_and_nothing_outside_is_touched(
    tmp_path: Path,
) -> None:
    """Expect: every escape attempt (``..``, absolute, ``~``, URL-encoded, backslash, NUL, symlink out of
    ``data/``, out-of-manifest index, planted symlink in the output folder) comes back to the model as an
    error; no file outside the candidate folder is created, changed or read into a tool result."""
    root = png_dataset(tmp_path / "ds")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP-SECRET", encoding="utf-8")
    os.symlink(outside, root / "data" / "escape_link")
    out_dir = tmp_path / "cand"
    # a planted symlink where the agent will write annotations: writing through it must be refused
    (out_dir / "agent1_data_organization").mkdir(parents=True)
    os.symlink(outside, out_dir / "agent1_data_organization" / "standardized_annotations")
    before = tree_digest(tmp_path, skip=out_dir)

    turns = [assistant_turn(tool_call(name, args, f"e{n}")) for n, (name, args) in enumerate(ESCAPES)]
    turns.append(assistant_turn(tool_call("finish", {"summary": "tried"}, "fin")))
    server = FakeServer(TurnScript(turns)).start()
    try:
        agent = make_agent(server, max_failed_turns=100)
        task = png_task(root, out_dir, limits=Limits(max_turns=40, max_tool_calls=60, max_tokens=10**9))
        cand = asyncio.run(agent.generate(task))
        tool_messages = [m for r in server.chat_requests for m in r["messages"] if m["role"] == "tool"]
    finally:
        server.stop()
    results = {m["tool_call_id"]: str(m["content"]) for m in tool_messages}
    for n, (name, args) in enumerate(ESCAPES):
        text = results[f"e{n}"]
        assert any(w in text.lower() for w in ("error", "refused", "invalid")), (name, args, text)
        assert "TOP-SECRET" not in text and '"secret": 1' not in text
    assert tree_digest(tmp_path, skip=out_dir) == before
    assert cand.status in ("ok", "failed")

"""A corrupt raw file under the LiteLLM agent (issue 30 item 4): the model's render of it fails, the model
moves on, and the candidate names that sample's read error as the reason it is unwritten
(``Candidate.skipped``, which the strategies put in the sample's decision and samples.jsonl)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fault_builders import USAGE, annotation, make_agent, png_dataset, png_task

from strategies.mechanics import no_output_reason
from testbed.fakeserver import FakeServer, Reply, TurnScript, assistant_turn, tool_call


def _steps() -> list[Reply]:
    steps = [
        assistant_turn(
            tool_call("render", {"index": 0, "source": "data/benign/img0.png"}, "r0"),
            tool_call("write_annotation", {"index": 0, "annotation": annotation(0)}, "w0"),
        ),
        # The corrupt file: the render fails, and the model goes on without writing sample 1.
        assistant_turn(tool_call("render", {"index": 1, "source": "data/malignant/img1.png"}, "r1")),
        assistant_turn(
            tool_call("render", {"index": 2, "source": "data/benign/img2.png"}, "r2"),
            tool_call("write_annotation", {"index": 2, "annotation": annotation(2)}, "w2"),
        ),
        assistant_turn(tool_call("finish", {"summary": "sample 1 is unreadable"}, "fin")),
    ]
    return [Reply(content=s.content, tool_calls=s.tool_calls, usage=USAGE) for s in steps]


def test_an_unreadable_source_is_the_reason_its_sample_is_unwritten(tmp_path: Path) -> None:
    root = png_dataset(tmp_path / "tiny")
    (root / "data" / "malignant" / "img1.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    server = FakeServer(TurnScript(_steps())).start()
    try:
        candidate = asyncio.run(make_agent(server).generate(png_task(root, tmp_path / "out")))
    finally:
        server.stop()
    written = Path(candidate.output_dir) / "standardized_annotations"
    assert (written / "0.json").is_file() and not (written / "1.json").exists()
    assert set(candidate.skipped) == {1}
    assert "render failed" in candidate.skipped[1] and "img1.png" in candidate.skipped[1]
    assert no_output_reason([candidate], 1).startswith("no output for this sample: render failed")
    assert no_output_reason([candidate], 0) == "no output for this sample"

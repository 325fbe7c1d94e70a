"""Tool calls in worker processes (`agents.tools.tool_pool`): the same results and bytes as inline, on
pydicom's and nibabel's own test files; a worker that dies during a call is that call's error, then the pool
goes on."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_scripts import DATA_META, USAGE, annotation, make_agent, make_task
from nibabel.testing import data_path as nibabel_data
from pydicom.data import get_testdata_file

from agents.base import ManifestEntry, Task
from agents.tools.sandbox import Sandbox
from agents.tools.tool_pool import POOLED_TOOLS, ToolPool
from agents.tools.tools import ToolBox, ToolResult
from testbed.fakeserver import Reply, TurnScript, assistant_turn, tool_call

# Files shipped inside the installed packages, not written by us.
SOURCES = {
    "data/ct.dcm": Path(str(get_testdata_file("CT_small.dcm"))),
    "data/mr.dcm": Path(str(get_testdata_file("MR_small.dcm"))),
    "data/anatomical.nii": Path(nibabel_data) / "anatomical.nii",
    "data/example4d.nii.gz": Path(nibabel_data) / "example4d.nii.gz",
    "data/standard.nii.gz": Path(nibabel_data) / "standard.nii.gz",
}

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("inspect", {"path": "data/ct.dcm"}),
    ("inspect", {"path": "data/example4d.nii.gz"}),
    ("render", {"index": 0, "source": "data/ct.dcm"}),
    ("render", {"index": 1, "source": "data/mr.dcm", "window_center": 600, "window_width": 1200}),
    ("render", {"index": 2, "source": "data/example4d.nii.gz", "volume": 1, "axis": 2}),
    ("render", {"index": 3, "source": "data/anatomical.nii", "slice_index": 7}),
    ("render", {"index": 3, "source": "data/standard.nii.gz", "kind": "mask"}),
    ("view_image", {"path": "images/0.png"}),
    ("view_image", {"path": "masks/3.png"}),
    ("view_image", {"path": "data/mr.dcm", "where": "dataset"}),
    ("write_annotation", {"index": 0, "annotation": annotation(0)}),
    ("write_annotation", {"index": 1, "annotation": {"record": {"image_path": "images/0.png"}}}),
    ("write_data_meta", {"data_meta": DATA_META}),
    ("list_output", {"path": "."}),
    ("read_output", {"path": "standardized_annotations/0.json"}),
    ("edit_fields", {"path": "data_meta.json", "set": {"data_volume.total": 4}}),
    ("render", {"index": 9, "source": "data/ct.dcm"}),  # not in the manifest: a sandbox error
    ("inspect", {"path": "../VLM/secret.json"}),  # refused path
    ("render", {"index": 0, "source": "data/nothing.dcm"}),  # no such file
]


def _dataset(root: Path) -> Path:
    for rel, source in SOURCES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, root / rel)
    return root


def _toolbox(root: Path, out_dir: Path) -> ToolBox:
    entries = tuple(ManifestEntry(i, rel) for i, rel in enumerate(SOURCES) if i < 4)
    task = Task(root=root, name="package_files", entries=entries, out_dir=out_dir)
    return ToolBox(task, Sandbox(task.root, task.output_dir), vision=True)


@pytest.fixture
def pool() -> Iterator[ToolPool]:
    tools = ToolPool(1)
    yield tools
    tools.close()


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_pooled_calls_equal_inline_calls_byte_for_byte(tmp_path: Path, pool: ToolPool):
    root = _dataset(tmp_path / "ds")
    inline, pooled = _toolbox(root, tmp_path / "inline"), _toolbox(root, tmp_path / "pooled")

    for name, args in CALLS:
        raw = json.dumps(args)
        expected = inline.run(name, raw)
        got = pool.run(pooled, name, raw)
        assert got == expected, (name, args)

    # Every pooled tool was exercised, and the error paths came back as the same errors.
    assert {name for name, _ in CALLS} >= POOLED_TOOLS
    errors = [inline.run(n, json.dumps(a)).error for n, a in CALLS[-3:]]
    assert errors == ["sandbox", "sandbox", "sandbox"]
    written = _files(inline.task.output_dir)
    assert {"images/0.png", "images/2.png", "masks/3.png", "data_meta.json"} <= set(written)
    assert _files(pooled.task.output_dir) == written
    assert pool.pids and os.getpid() not in pool.pids


def _wait_busy(pool: ToolPool) -> None:
    deadline = time.monotonic() + 10
    while pool._idle and time.monotonic() < deadline:  # the call took the only worker
        time.sleep(0.01)
    time.sleep(0.3)  # and wrote its request to the stopped worker's pipe


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_a_worker_dying_during_a_call_is_that_calls_error_and_the_next_call_works(
    tmp_path: Path, pool: ToolPool, sig: signal.Signals
):
    root = _dataset(tmp_path / "ds")
    box = _toolbox(root, tmp_path / "out")
    render = json.dumps({"index": 0, "source": "data/ct.dcm"})
    assert pool.run(box, "render", render).error is None
    (victim,) = pool.pids

    # Stop the worker so the call is certainly in flight when it dies, as a crashing reader would be.
    os.kill(victim, signal.SIGSTOP)
    results: list[ToolResult] = []
    caller = threading.Thread(target=lambda: results.append(pool.run(box, "render", render)))
    caller.start()
    _wait_busy(pool)
    os.kill(victim, sig)
    os.kill(victim, signal.SIGCONT)  # a stopped process only acts on SIGKILL until it continues
    caller.join(10)

    (crashed,) = results
    assert crashed.error == "worker_crash"
    assert f"render crashed its tool process (killed by signal {sig.name})" in crashed.text
    again = pool.run(box, "render", render)
    assert again.error is None and json.loads(again.text)["written"] == "images/0.png"
    assert pool.pids and victim not in pool.pids


def test_a_worker_killed_while_idle_is_replaced_without_an_error(tmp_path: Path, pool: ToolPool):
    box = _toolbox(_dataset(tmp_path / "ds"), tmp_path / "out")
    inspect = json.dumps({"path": "data/ct.dcm"})
    assert pool.run(box, "inspect", inspect).error is None
    (victim,) = pool.pids
    os.kill(victim, signal.SIGKILL)
    time.sleep(0.2)
    assert pool.run(box, "inspect", inspect).error is None
    assert victim not in pool.pids


def test_close_stops_every_worker_and_later_calls_are_refused(tmp_path: Path):
    box = _toolbox(_dataset(tmp_path / "ds"), tmp_path / "out")
    pool = ToolPool(2)
    pool.warm()
    deadline = time.monotonic() + 20
    while len(pool.pids) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = pool.pids
    assert len(pids) == 2
    pool.close()
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    refused = pool.run(box, "inspect", json.dumps({"path": "data/ct.dcm"}))
    assert refused.error == "tool_error" and "shutting down" in refused.text
    # Cheap tools never needed a worker.
    assert pool.run(box, "list_dir", json.dumps({"path": "data"})).error is None


def _kill_during_render(pool_of: list[Any]) -> Any:
    """Turn 2 of the script: stop the agent's only tool worker, kill it a moment later, answer a render."""

    def step(request: Any) -> Reply:
        agent = pool_of[0]
        pool = agent._process_pool
        (pid,) = pool.pids
        os.kill(pid, signal.SIGSTOP)
        threading.Thread(target=lambda: (_wait_busy(pool), os.kill(pid, signal.SIGKILL))).start()
        return Reply(tool_calls=(tool_call("render", {"index": 0, "source": RENDER_SRC}, "r1"),), usage=USAGE)

    return step


RENDER_SRC = "data/case0/image.nii.gz"


def test_the_model_sees_the_crash_as_a_tool_error_and_the_candidate_goes_on(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    holder: list[Any] = []
    render = tool_call("render", {"index": 0, "source": RENDER_SRC}, "r0")
    again = tool_call("render", {"index": 0, "source": RENDER_SRC}, "r2")
    steps = [
        assistant_turn(render),
        _kill_during_render(holder),
        assistant_turn(again, tool_call("write_annotation", {"index": 0, "annotation": annotation(0)}, "w0")),
        assistant_turn(tool_call("finish", {}, "end")),
        assistant_turn(tool_call("finish", {}, "end2")),  # the first finish is answered with what is missing
    ]
    server = fake_server(
        TurnScript([s if callable(s) else Reply(s.content, s.tool_calls, USAGE) for s in steps])
    )
    agent = make_agent(server, tool_processes=1)
    holder.append(agent)
    try:
        candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))
    finally:
        agent.close()

    # Sample 1 and data_meta.json were never written: the candidate went on and ended incomplete, not failed.
    assert candidate.status == "incomplete" and candidate.missing == (1,), candidate.reason
    third = server.chat_requests[2]["messages"]
    crash = next(m for m in third if m.get("tool_call_id") == "r1")
    assert "render crashed its tool process (killed by signal SIGKILL)" in crash["content"]
    fourth = server.chat_requests[3]["messages"]
    assert json.loads(next(m for m in fourth if m.get("tool_call_id") == "r2")["content"])["written"] == (
        "images/0.png"
    )
    assert (candidate.output_dir / "images" / "0.png").is_file()
    trace = [json.loads(line) for line in candidate.trace_path.read_text().splitlines()]  # type: ignore[union-attr]
    errors = [t["error"] for t in trace if t.get("event") == "tool"]
    assert errors == [None, "worker_crash", None, None, None, None]

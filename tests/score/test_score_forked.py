"""The per-dataset CLI shares the models among forks of itself (`benchmark.score.forked`): the same bytes as
one process, whatever a child does, and never a process left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from score_builders import Builder

from benchmark.score import evaluate, forked
from benchmark.score._io import RawJson, dumps_indented
from benchmark.score.evaluate import score_dataset, score_dataset_to_file, write_results
from benchmark.score.images import PNG_SIGNATURE, needs_pil

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="no os.fork on this platform")


@pytest.fixture(autouse=True)
def _single_threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the fork mechanics: a thread another test left in this worker process (a fake
    server's, a library's) must not turn them into serial runs (`processes_for` forks when single-threaded
    only)."""
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmark.score", *args], capture_output=True, text=True, timeout=120
    )


def _varied(build_dataset: Builder) -> Path:
    """A generated dataset with six models that score differently (one needs Pillow: a corrupt image)."""

    def task(i: int, ann: dict[str, Any]) -> None:
        if i % 2:
            ann["media_geometry"]["media"]["task_type"] = "detection"

    def drop(i: int, ann: dict[str, Any]) -> Any:
        return ... if i == 1 else None

    root = build_dataset(n=4, model="a_clean")
    for model, edit in (("b_task", task), ("c_drop", drop), ("d_clean", None), ("e_task", task)):
        build_dataset(n=4, edit=edit, model=model)
    build_dataset(n=4, model="f_corrupt")
    (root / "VLM" / "f_corrupt" / "agent1_data_organization" / "images" / "2.png").write_bytes(os.urandom(64))
    return root


def test_forked_cli_writes_the_bytes_of_one_process_on_a_generated_dataset(
    build_dataset: Builder, tmp_path: Path
) -> None:
    root = _varied(build_dataset)
    outs = {}
    for workers in ("1", "2", "3"):
        out = tmp_path / f"w{workers}.json"
        proc = _cli("--dataset-dir", str(root), "--output", str(out), "--workers", workers)
        assert proc.returncode == 0, proc.stderr
        outs[workers] = (out.read_bytes(), proc.stdout)
    assert outs["2"] == outs["1"] and outs["3"] == outs["1"]
    assert b'"unreadable image: ' in outs["1"][0]  # the Pillow path was taken (in whichever process)


def test_forked_cli_writes_the_bytes_of_one_process_on_a_conformance_case(
    conformance_dir: Path, tmp_path: Path
) -> None:
    case = conformance_dir / "cases" / "kits23"
    serial, parallel = tmp_path / "serial.json", tmp_path / "forked.json"
    one = _cli("--dataset-dir", str(case), "--output", str(serial), "--workers", "1")
    two = _cli("--dataset-dir", str(case), "--output", str(parallel), "--workers", "2")
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert parallel.read_bytes() == serial.read_bytes()
    assert two.stdout == one.stdout


# A child that dies (killed, exits, raises) while scoring: the parent scores its models itself, warns in one
# line, and has no child left (a zombie would still be waitable).
_DYING_CHILD = """
import os, signal, sys, time
import benchmark.score.evaluate as E
from benchmark.score.__main__ import main

PARENT = os.getpid()
real = E.score_prediction
slowed = []

def score_prediction(*args, **kwargs):
    if os.getpid() != PARENT:
        if {how!r} == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if {how!r} == "exit":
            os._exit(3)
        raise RuntimeError("a bug in the child")
    if not slowed:  # a slow first model in the parent: the child surely takes one meanwhile
        slowed.append(True)
        time.sleep(0.3)
    return real(*args, **kwargs)

E.score_prediction = score_prediction
rc = main(["--dataset-dir", {root!r}, "--output", {out!r}, "--workers", "2", "--no-print"])
try:
    os.waitpid(-1, os.WNOHANG)
    print("CHILD LEFT")
except ChildProcessError:
    print("NO CHILD", rc)
"""


@pytest.mark.parametrize("how", ["kill", "exit", "raise"])
def test_a_dying_child_is_replaced_by_the_parent_and_reaped(
    build_dataset: Builder, tmp_path: Path, how: str
) -> None:
    root = _varied(build_dataset)
    want = tmp_path / "serial.json"
    assert _cli("--dataset-dir", str(root), "--output", str(want), "--workers", "1").returncode == 0
    out = tmp_path / "forked.json"
    code = _DYING_CHILD.format(how=how, root=str(root), out=str(out))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "NO CHILD 0"
    assert out.read_bytes() == want.read_bytes()
    warnings = [line for line in proc.stderr.splitlines() if "scoring process" in line]
    expected = (
        "was killed by signal 9"
        if how == "kill"
        else "exited with status" + (" 3" if how == "exit" else " 1")
    )
    assert len(warnings) == 1 and expected in warnings[0], proc.stderr


def test_an_error_in_the_parent_propagates_after_the_children_are_reaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent = os.getpid()
    forks: list[int] = []
    real_fork = os.fork

    def fork() -> int:
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    # The children are followed by pid: this test process may have other children (a fork server another
    # test started), so "no child at all" would not be this code's doing.
    monkeypatch.setattr(forked.os, "fork", fork)

    def score(i: int) -> dict[str, Any]:
        if os.getpid() == parent:
            raise ValueError(f"bug on {i}")
        time.sleep(0.5)  # the children are slow: the parent surely takes an item
        return {"i": i}

    with pytest.raises(ValueError, match="bug on"):
        forked.map_forked(score, list(range(8)), 3)
    assert len(forks) == 2
    for pid in forks:
        with pytest.raises(ChildProcessError):  # already reaped: neither running nor a zombie
            os.waitpid(pid, os.WNOHANG)


@pytest.mark.parametrize("processes", [1, 2, 3])
def test_map_forked_returns_every_result_in_order_and_calls_meanwhile_once(processes: int) -> None:
    items = [f"m{i}" for i in range(20)]
    calls: list[int] = []
    got = forked.map_forked(
        lambda s: {"name": s, "n": len(s)}, items, processes, meanwhile=lambda: calls.append(os.getpid())
    )
    assert got == [{"name": s, "n": len(s)} for s in items]
    assert calls == [os.getpid()]


def test_an_unpicklable_result_in_a_child_falls_back_to_the_parent() -> None:
    parent = os.getpid()
    got = forked.map_forked(
        lambda i: {"i": i, "f": (lambda: 0) if os.getpid() != parent else None}, list(range(6)), 2
    )
    assert [r["i"] for r in got] == list(range(6)) and all(r["f"] is None for r in got)


def test_the_serial_path_when_forced_with_one_cpu_a_threaded_caller_or_without_fork(
    build_dataset: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _varied(build_dataset)
    want = score_dataset(root, workers=2)

    def no_fork() -> int:
        raise AssertionError("forked although it must not")

    monkeypatch.setattr(os, "fork", no_fork)
    assert score_dataset(root, workers=1) == want
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert forked.processes_for(6, None) == 1
    assert score_dataset(root, workers=None) == want
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert forked.processes_for(6, None) == 2
    assert forked.processes_for(3, None) == 1  # too few models to pay for a fork
    # A threaded caller (a fork copies one thread; a lock another holds would stay locked in the child).
    monkeypatch.setattr(forked.threading, "active_count", lambda: 2)
    assert forked.processes_for(6, 2) == 1
    assert score_dataset(root, workers=2) == want
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)
    monkeypatch.delattr(os, "fork")
    assert not forked.can_fork() and forked.processes_for(6, 2) == 1
    assert score_dataset(root, workers=2) == want


def test_a_failing_fork_scores_everything_here(
    build_dataset: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _varied(build_dataset)
    want = score_dataset(root, workers=1)

    def failing_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", failing_fork)
    assert score_dataset(root, workers=2) == want


def test_workers_help_covers_the_dataset_dir_path() -> None:
    proc = _cli("--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "(forks of this process); 1 = this process only" in text


def test_a_nested_encoding_is_the_text_of_the_whole_tree() -> None:
    entry = {"metrics": {"SV": 0.5}, "per_sample": [{"i": 1, "r": None}, {}], "error": None, "e": []}
    tree = {"dataset": "d", "models": {"a": entry, "b": {}}}
    nested = {
        "dataset": "d",
        "models": {k: RawJson(dumps_indented(v, depth=2)) for k, v in tree["models"].items()},
    }
    assert dumps_indented(nested) == dumps_indented(tree) == json.dumps(tree, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("workers", [1, 2])
def test_score_dataset_to_file_writes_what_write_results_writes(
    build_dataset: Builder, tmp_path: Path, workers: int
) -> None:
    root = _varied(build_dataset)
    full = score_dataset(root)
    want = write_results(full, tmp_path / "want.json").read_bytes()
    summary, path = score_dataset_to_file(root, tmp_path / "got.json", workers=workers)
    assert path.read_bytes() == want
    assert {m: (r["metrics"], r["error"]) for m, r in summary["models"].items()} == {
        m: (r["metrics"], r["error"]) for m, r in full["models"].items()
    }
    assert {k: v for k, v in summary.items() if k != "models"} == {
        k: v for k, v in full.items() if k != "models"
    }


def test_score_dataset_to_file_falls_back_to_json_dumps_for_odd_values(
    build_dataset: Builder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _varied(build_dataset)
    real = evaluate._DatasetJob.score_model

    def with_a_tuple(self: Any, model: str) -> dict[str, Any]:
        res = real(self, model)
        return dict(res, odd=(1, 2)) if model == "c_drop" else res

    monkeypatch.setattr(evaluate._DatasetJob, "score_model", with_a_tuple)
    full = score_dataset(root)
    assert full["models"]["c_drop"]["odd"] == (1, 2)
    _, path = score_dataset_to_file(root, tmp_path / "got.json", workers=2)
    assert path.read_text(encoding="utf-8") == json.dumps(full, indent=2, ensure_ascii=False)


def test_the_costly_items_go_to_the_first_child_and_the_others_stay_here() -> None:
    parent = os.getpid()

    def score(i: int) -> dict[str, Any]:
        if os.getpid() != parent:
            time.sleep(0.1)  # a slow child: without the marks, this process would take most items
        elif i == 0:
            time.sleep(0.3)  # the child has marked every item before this process looks for its next one
        return {"i": i, "pid": os.getpid()}

    # The odd items are costly: this process takes only even ones, leaving the odd ones to the child.
    got = forked.map_forked(score, list(range(12)), 2, needs_setup=lambda i: i % 2 == 1)
    assert [r["i"] for r in got] == list(range(12))
    by_parent = {r["i"] for r in got if r["pid"] == parent}
    assert 0 in by_parent and all(i % 2 == 0 for i in by_parent), by_parent


def test_many_costly_items_are_shared_and_all_scored() -> None:
    got = forked.map_forked(lambda i: {"i": i}, list(range(3 * forked.SETUP_IN_ITEMS)), 2, needs_setup=bool)
    assert [r["i"] for r in got] == list(range(3 * forked.SETUP_IN_ITEMS))


def test_needs_pil_is_true_for_the_images_pillow_would_check(tmp_path: Path) -> None:
    images = tmp_path / "images"
    assert not needs_pil(images)  # no folder
    images.mkdir()
    (images / "0.png").write_bytes(PNG_SIGNATURE + b"rest of a png")
    (images / "1.png").write_bytes(b"")  # empty: "empty image file", no Pillow
    (images / "notes.txt").write_bytes(b"not an image")
    assert not needs_pil(images)
    (images / "2.jpeg").write_bytes(b"\xff\xd8")
    assert needs_pil(images)
    (images / "2.jpeg").unlink()
    (images / "3.png").write_bytes(os.urandom(16).replace(b"\x89", b"\x00"))
    assert needs_pil(images)

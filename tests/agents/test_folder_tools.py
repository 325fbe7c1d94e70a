"""Tools for real folders: a label table sorting after 10,000 images is reached in two calls through the
real LiteLLM path; paging, tree summaries, find, grep, read_text offsets and table summaries are bounded and
stay inside data/."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_scripts import make_agent

from agents.base import Limits, ManifestEntry, Task
from agents.tools.sandbox import Sandbox, SandboxLimits
from agents.tools.tools import ToolBox
from testbed.fakeserver import FakeServer, TurnScript, assistant_turn, tool_call

LABELS = "image,label,site\n" + "".join(
    f"img_{i:05d}.png,{('nevus', 'melanoma', 'bcc')[i % 3]},s{i % 2}\n" for i in range(30)
)


def _touch_many(folder: Path, names: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        os.close(os.open(folder / name, os.O_CREAT | os.O_WRONLY, 0o644))


def _dataset(root: Path, first: str) -> Path:
    vlm = root / "VLM"
    vlm.mkdir(parents=True)
    (vlm / "random.txt").write_text(f"0 /authors/big/data/{first}\n", encoding="utf-8")
    (vlm / "ground_truth_big.json").write_text('{"secret": 1}', encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def flat_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10,000 images in data/ and the label table named to sort after all of them."""
    root = tmp_path_factory.mktemp("flat") / "big"
    _touch_many(root / "data", [f"img_{i:05d}.png" for i in range(10_000)])
    (root / "data" / "zz_labels.csv").write_text(LABELS, encoding="utf-8")
    return _dataset(root, "img_00000.png")


@pytest.fixture(scope="module")
def nested_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """100 patient folders x 100 DICOM slices, the label table in the last folder by name."""
    root = tmp_path_factory.mktemp("nested") / "big"
    for p in range(100):
        _touch_many(root / "data" / f"P{p:03d}", [f"slice_{s:03d}.dcm" for s in range(100)])
    (root / "data" / "zz_meta").mkdir()
    (root / "data" / "zz_meta" / "labels.csv").write_text(LABELS, encoding="utf-8")
    return _dataset(root, "P000/slice_000.dcm")


def _task(root: Path, out: Path) -> Task:
    return Task(
        root=root,
        name="big",
        entries=(ManifestEntry(0, "data/img_00000.png"),),
        out_dir=out,
        limits=Limits(max_turns=10, max_tool_calls=20, max_tokens=10**7),
    )


def _box(root: Path, out: Path, **limits: Any) -> ToolBox:
    task = _task(root, out)
    return ToolBox(task, Sandbox(root, task.output_dir, SandboxLimits(**limits)), vision=False)


def _tool_results(server: Any) -> dict[str, str]:
    last = server.chat_requests[-1]["messages"]
    return {m["tool_call_id"]: m["content"] for m in last if m.get("role") == "tool"}


def _reached_table_in(results: list[str]) -> int:
    """How many tool calls it took until one showed the table's columns (its content, not only its name)."""
    for count, text in enumerate(results, 1):
        if text.startswith("{") and json.loads(text).get("columns", {}).get("label", {}).get("n_unique") == 3:
            return count
    raise AssertionError("the label table was never read")


@pytest.mark.parametrize(
    ("fixture", "explore", "table"),
    [
        ("flat_tree", tool_call("list_dir", {"path": "data"}, "t1"), "data/zz_labels.csv"),
        ("nested_tree", tool_call("tree", {"path": "data"}, "t1"), "data/zz_meta/labels.csv"),
    ],
)
def test_a_label_table_sorting_after_10000_files_is_reached_in_two_calls(
    fixture: str,
    explore: dict[str, Any],
    table: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    fake_server: Callable[..., FakeServer],
) -> None:
    root: Path = request.getfixturevalue(fixture)

    # The scripted model reads the table it was shown: the path comes from the first result, not from us.
    def read_shown_table(req: Any) -> Any:
        shown = next(m["content"] for m in req["messages"] if m.get("tool_call_id") == "t1")
        names = re.findall(r"[\w/.-]*\w\.csv", shown)
        path = names[0] if names[0].startswith("data/") else f"data/{names[0]}"
        return assistant_turn(tool_call("table_head", {"path": path}, "t2"))

    script = TurnScript(
        [assistant_turn(explore), read_shown_table, assistant_turn(tool_call("finish", {}, "t3"))]
    )
    server = fake_server(script)
    asyncio.run(make_agent(server, vision=False).generate(_task(root, tmp_path / "c")))
    results = _tool_results(server)
    assert _reached_table_in([results["t1"], results["t2"]]) <= 3
    assert json.loads(results["t2"])["path"] == table
    # The first call named the table before any image: it is on the first lines, not after 10,000 names.
    first_lines = results["t1"].splitlines()[:8]
    assert any(table.rsplit("/", 1)[-1] in line for line in first_lines), first_lines


def test_list_dir_pages_with_offset_and_says_how_many_remain(flat_tree: Path, tmp_path: Path) -> None:
    box = _box(flat_tree, tmp_path / "c")
    first = box.run("list_dir", json.dumps({"path": "data", "limit": 50})).text.splitlines()
    assert first[0].startswith("data/ (10,001 entries: 1 text/table files, 0 folders, 10,000 other files")
    assert first[1].startswith("zz_labels.csv\t")
    assert first[2].startswith("img_00000.png")
    assert first[-1].startswith("... 9,951 more entries: list_dir(path='data', offset=50)")
    last = box.run("list_dir", json.dumps({"path": "data", "offset": 9_990, "limit": 50})).text.splitlines()
    assert last[1:] == [f"img_{i:05d}.png\t0" for i in range(9_989, 10_000)]
    # The sandbox's listing cap bounds any limit the model asks for.
    capped = _box(flat_tree, tmp_path / "c2", max_dir_entries=20)
    lines = capped.run("list_dir", json.dumps({"path": "data", "limit": 5000})).text.splitlines()
    assert len(lines) == 1 + 20 + 1


def test_tree_counts_extensions_per_folder_and_stays_bounded(nested_tree: Path, tmp_path: Path) -> None:
    text = _box(nested_tree, tmp_path / "c").run("tree", json.dumps({})).text
    assert text.splitlines()[0] == "data/: 10,001 files in 102 folders"
    assert "  10,000 .dcm in 100 folders" in text
    assert "  depth 1: 100 folders (each 100 .dcm), e.g. data/P000/" in text
    assert "data/zz_meta/labels.csv" in text
    assert len(text.splitlines()) < 30  # a summary, not 10,000 names
    # A walk past its bound says so instead of pretending to have seen everything.
    partial = _box(nested_tree, tmp_path / "c2", max_walk_entries=500).run("tree", "{}").text
    assert "stopped after 500 entries" in partial


def test_find_matches_names_and_paths_case_insensitively(nested_tree: Path, tmp_path: Path) -> None:
    box = _box(nested_tree, tmp_path / "c")
    assert box.run("find", json.dumps({"pattern": "*LABEL*"})).text.splitlines()[1:] == [
        "data/zz_meta/labels.csv"
    ]
    paths = box.run("find", json.dumps({"pattern": "P00*/slice_05*", "limit": 3})).text.splitlines()
    assert paths[0].startswith("100 matches for 'P00*/slice_05*'")
    assert paths[1:4] == [f"data/P000/slice_05{i}.dcm" for i in range(3)]
    assert paths[4] == "... 97 more: find(..., offset=3)"
    # The path written from the dataset root, as a model often does, matches the same files.
    for pattern in ("data/**/labels.csv", "**/labels.csv", "zz_meta/*.csv"):
        assert box.run("find", json.dumps({"pattern": pattern})).text.splitlines()[1:] == [
            "data/zz_meta/labels.csv"
        ], pattern
    dirs = box.run("find", json.dumps({"pattern": "zz*", "kind": "dir"})).text.splitlines()
    assert dirs[1:] == ["data/zz_meta/"]


def test_grep_finds_lines_in_text_files_only_and_is_bounded(nested_tree: Path, tmp_path: Path) -> None:
    box = _box(nested_tree, tmp_path / "c")
    text = box.run("grep", json.dumps({"pattern": "MELANOMA", "max_matches": 3})).text.splitlines()
    assert text[0].startswith("10 matching lines in 1 files (1 files searched")
    assert text[1] == "data/zz_meta/labels.csv:3: img_00001.png,melanoma,s1"
    assert text[-1] == "... 7 more matching lines not shown"
    bad = box.run("grep", json.dumps({"pattern": "("}))
    assert bad.error == "tool_error" and "invalid regular expression" in bad.text


def test_read_text_reads_from_an_offset_and_reports_the_total_size(flat_tree: Path, tmp_path: Path) -> None:
    box = _box(flat_tree, tmp_path / "c")
    size = len(LABELS.encode())
    head = box.run("read_text", json.dumps({"path": "data/zz_labels.csv", "max_bytes": 16})).text
    assert (
        head
        == LABELS[:16]
        + f"\n[bytes 0-16 of {size}; continue with read_text(path='data/zz_labels.csv', offset=16)]"
    )
    tail = box.run("read_text", json.dumps({"path": "data/zz_labels.csv", "offset": size - 10})).text
    assert tail == LABELS[-10:] + f"\n[bytes {size - 10}-{size} of {size}]"
    whole = box.run("read_text", json.dumps({"path": "data/zz_labels.csv", "max_bytes": 65536})).text
    assert whole == LABELS


@pytest.mark.parametrize("kind", ["csv", "tsv", "parquet", "xlsx"])
def test_table_head_summarises_every_column(kind: str, tmp_path: Path) -> None:
    import pandas as pd

    root = tmp_path / "tab"
    (root / "data").mkdir(parents=True)
    frame = pd.DataFrame(
        {
            "case": [f"c{i}" for i in range(12)],
            "label": [i % 4 for i in range(12)],
            "age": [20.5 + i for i in range(12)],
        }
    )
    path = root / "data" / f"meta.{kind}"
    if kind == "csv":
        frame.to_csv(path, index=False)
    elif kind == "tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif kind == "parquet":
        frame.to_parquet(path)
    else:
        frame.to_excel(path, index=False, sheet_name="cases")
    result = _box(root, tmp_path / "c").run(
        "table_head", json.dumps({"path": f"data/meta.{kind}", "rows": 2})
    )
    assert result.error is None, result.text
    summary = json.loads(result.text)
    assert summary["n_rows"] == 12 and summary["n_columns"] == 3
    assert summary["columns"]["label"]["n_unique"] == 4
    assert summary["columns"]["case"]["n_unique"] == 12
    assert summary["columns"]["age"]["min"] == 20.5 and summary["columns"]["age"]["max"] == 31.5
    assert summary["columns"]["label"]["examples"] == [0, 1, 2, 3]
    assert summary["head"] == [
        {"case": "c0", "label": 0, "age": 20.5},
        {"case": "c1", "label": 1, "age": 21.5},
    ]
    if kind == "xlsx":
        assert summary["sheets"] == ["cases"]


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("tree", {"path": "VLM"}),
        ("find", {"pattern": "*", "path": "data/../VLM"}),
        ("grep", {"pattern": "secret", "path": "VLM"}),
        ("table_head", {"path": "VLM/random.txt"}),
        ("read_text", {"path": "data/zz_labels.csv", "max_bytes": 10**9}),
    ],
)
def test_folder_tools_stay_inside_data(
    name: str, args: dict[str, Any], flat_tree: Path, tmp_path: Path
) -> None:
    result = _box(flat_tree, tmp_path / "c").run(name, json.dumps(args))
    assert result.error == "sandbox", result.text


def test_grep_does_not_follow_a_link_out_of_data(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    (root / "data").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("the secret answer\n", encoding="utf-8")
    (root / "data" / "notes.txt").symlink_to(tmp_path / "secret.txt")
    result = _box(root, tmp_path / "c").run("grep", json.dumps({"pattern": "secret"}))
    assert result.error is None
    assert "the secret answer" not in result.text
    assert result.text.startswith("0 matching lines in 0 files (0 files searched, 0 bytes; 1 skipped")


def test_list_output_pages_the_candidates_own_folder_like_list_dir(flat_tree: Path, tmp_path: Path) -> None:
    box = _box(flat_tree, tmp_path / "c")
    _touch_many(box.sandbox.output_dir / "images", [f"{i}.png" for i in range(250)])
    first = box.run("list_output", json.dumps({"path": "images"})).text.splitlines()
    assert first[0].startswith(
        "images/ (250 entries: 0 text/table files, 0 folders, 250 other files (250 .png))"
    )
    assert first[-1] == "... 150 more entries: list_output(path='images', offset=100)"
    rest = box.run(
        "list_output", json.dumps({"path": "images", "offset": 200, "limit": 100})
    ).text.splitlines()
    assert len(rest) == 1 + 50 and rest[-1].endswith("\t0")

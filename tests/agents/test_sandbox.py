"""The sandbox refuses every escape, reports it to the model, and nothing outside the candidate changes."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from agent_scripts import make_agent, make_task, tree_digest

from agents.tools.sandbox import Sandbox, SandboxError, SandboxLimits
from testbed.fakeserver import Reply, TurnScript, assistant_turn, tool_call

ESCAPES = [
    ("read_text", {"path": "data/../VLM/ground_truth_tiny.json"}),  # relative ..
    ("read_text", {"path": "/etc/passwd"}),  # absolute
    ("read_text", {"path": "data/link_out/secret.txt"}),  # symlink leaving the dataset
    ("read_text", {"path": "data/%2e%2e/VLM/random.txt"}),  # URL-encoded ..
    ("list_dir", {"path": "~"}),  # home
    ("read_text", {"path": "data/labels.csv\x00.png"}),  # NUL byte
    ("read_text", {"path": "VLM/random.txt"}),  # inside the dataset but outside data/
    (
        "render",
        {"index": 0, "source": "data/case0/mask.nii.gz", "kind": "mask"},
    ),  # write through planted link
    ("write_annotation", {"index": 99, "annotation": {}}),  # index outside the manifest
    ("read_text", {"path": "data/huge.bin", "max_bytes": 10**9}),  # read above the cap
    ("inspect", {"path": "data/huge.bin"}),  # file above the size cap
    ("view_image", {"path": "../../tiny_seg/data/preview.png"}),  # leave the output folder
    ("list_dir", {"path": "C:/Windows"}),  # drive path
    ("read_text", {"path": "data\\..\\VLM\\random.txt"}),  # backslashes
]


def test_escape_attempts_are_refused_and_reported_and_nothing_outside_changes(
    seg_dataset: Path, tmp_path: Path, fake_server
):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret", encoding="utf-8")
    os.symlink(outside, seg_dataset / "data" / "link_out")
    with (seg_dataset / "data" / "huge.bin").open("wb") as handle:
        handle.truncate(3 * 1024 * 1024)  # sparse: big on paper, cheap on disk
    out_dir = tmp_path / "cand"
    task = make_task(seg_dataset, out_dir)
    task.output_dir.mkdir(parents=True)
    os.symlink(seg_dataset / "data", task.output_dir / "masks")  # a planted link towards the dataset
    before = tree_digest(tmp_path, skip=out_dir)

    calls = [tool_call(name, args, f"esc_{k}") for k, (name, args) in enumerate(ESCAPES)]
    script = TurnScript([assistant_turn(*calls), assistant_turn(tool_call("finish", {}))], Reply(content="?"))
    server = fake_server(script)
    limits = SandboxLimits(max_file_bytes=1024 * 1024, max_text_bytes=64 * 1024)
    candidate = asyncio.run(make_agent(server, sandbox_limits=limits, max_failed_turns=100).generate(task))

    answers = {
        m["tool_call_id"]: m["content"] for m in server.chat_requests[1]["messages"] if m["role"] == "tool"
    }
    assert len(answers) == len(ESCAPES)
    for k, (name, args) in enumerate(ESCAPES):
        assert answers[f"esc_{k}"].startswith("refused path"), (name, args, answers[f"esc_{k}"])
    assert "top secret" not in str(server.chat_requests)
    assert "ground truth" not in str(server.chat_requests)
    assert tree_digest(tmp_path, skip=out_dir) == before
    assert candidate.status == "failed"  # it finished without writing a single annotation
    assert "no annotation" in (candidate.reason or "")


def test_paths_inside_the_dataset_resolve_including_internal_symlinks(seg_dataset: Path, tmp_path: Path):
    os.symlink(seg_dataset / "data" / "case0", seg_dataset / "data" / "alias")
    box = Sandbox(seg_dataset, tmp_path / "out")
    assert box.read_path("data/case0/image.nii.gz") == (seg_dataset / "data/case0/image.nii.gz").resolve()
    assert box.read_path("./data/alias/mask.nii.gz").name == "mask.nii.gz"
    assert box.read_path("") == box.read_path("data") == (seg_dataset / "data").resolve()
    assert box.write_path("images/0.png").parent.is_dir()


@pytest.mark.parametrize("bad", ["../x", "/abs", "~/x", "a%2Fb", "a\\b", "a\x00b", "data/../../x", "D:/x"])
def test_malformed_paths_raise_a_sandbox_error_naming_the_path(seg_dataset: Path, tmp_path: Path, bad: str):
    box = Sandbox(seg_dataset, tmp_path / "out")
    with pytest.raises(SandboxError) as err:
        box.read_path(bad)
    assert repr(bad) in str(err.value)
    with pytest.raises(SandboxError):
        box.output_path(bad)


def _tree_with_links(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A dataset and a candidate folder full of the links a model (or its run_python) could plant."""
    dataset = tmp_path / "ds"
    (dataset / "data" / "case0").mkdir(parents=True)
    (dataset / "data" / "case0" / "img.png").write_bytes(b"x")
    (dataset / "VLM").mkdir()
    (dataset / "VLM" / "gt.json").write_text("{}", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s", encoding="utf-8")
    data = dataset / "data"
    os.symlink(data / "case0", data / "alias")  # inside, to a folder
    os.symlink(data / "case0" / "img.png", data / "img_link.png")  # inside, to a file
    os.symlink(outside, data / "out")  # leaves the dataset
    os.symlink(dataset / "VLM", data / "vlm")  # inside the dataset, outside data/
    os.symlink(data / "alias", data / "chain")  # a link to a link
    os.symlink(tmp_path / "nowhere", data / "dangling")
    os.symlink("case0/../out", data / "relative_out")  # relative target through a link
    out = tmp_path / "cand"
    (out / "images").mkdir(parents=True)
    os.symlink(outside, out / "masks")
    os.symlink(out / "images", out / "pictures")
    paths = [
        "data/case0/img.png",
        "data/case0/missing/deeper.png",
        "data/case0/img.png/under_a_file",
        "data/alias/img.png",
        "data/img_link.png",
        "data/out/secret.txt",
        "data/vlm/gt.json",
        "data/chain/img.png",
        "data/dangling/x",
        "data/relative_out/secret.txt",
        "VLM/gt.json",
        "data/new_folder/new.png",
        "images/0.png",
        "masks/0.png",
        "pictures/0.png",
        "standardized_annotations/0.json",
    ]
    return dataset, out, paths


def test_fast_path_resolution_equals_resolve_on_every_kind_of_link(tmp_path: Path) -> None:
    dataset, out, paths = _tree_with_links(tmp_path)
    box = Sandbox(dataset, out)
    root, cand = dataset.resolve(), out.resolve()
    for path in paths:
        parts = tuple(p for p in path.split("/") if p)
        # The reference is the plain definition: follow every link, then check where it landed.
        expected_read = root.joinpath(*parts).resolve()
        if expected_read.is_relative_to(root / "data"):
            assert box.read_path(path) == expected_read, path
        else:
            with pytest.raises(SandboxError):
                box.read_path(path)
        expected_out = cand.joinpath(*parts).resolve()
        if expected_out.is_relative_to(cand):
            assert box.output_path(path) == expected_out, path
        else:
            with pytest.raises(SandboxError):
                box.output_path(path)


def test_writes_through_a_planted_folder_link_are_refused_and_real_folders_are_made(tmp_path: Path) -> None:
    dataset, out, _ = _tree_with_links(tmp_path)
    box = Sandbox(dataset, out)
    with pytest.raises(SandboxError):
        box.write_path("masks/0.png")  # masks -> outside
    assert box.write_path("pictures/0.png") == out.resolve() / "images" / "0.png"  # a link that stays inside
    made = box.write_path("standardized_annotations/deep/0.json")
    assert made.parent.is_dir() and not made.parent.is_symlink()
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["secret.txt"]

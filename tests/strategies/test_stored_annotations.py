"""`strategies.mechanics.stored_annotations`: within the block each annotation file is read once (pass@k runs
every selector on every subset of finished candidates); what callers get is theirs to change."""

from __future__ import annotations

import json
from pathlib import Path

from benchmark.layout import ANNOTATIONS_DIR
from strategies.mechanics import read_annotation, stored_annotations


def _candidate(tmp_path: Path) -> Path:
    root = tmp_path / "candidate"
    (root / ANNOTATIONS_DIR).mkdir(parents=True)
    (root / ANNOTATIONS_DIR / "0.json").write_text(json.dumps({"label": "cat", "n": [1]}), encoding="utf-8")
    (root / ANNOTATIONS_DIR / "1.json").write_text("{not json", encoding="utf-8")
    (root / ANNOTATIONS_DIR / "2.json").write_text("[1, 2]", encoding="utf-8")
    return root


def test_inside_the_block_a_file_is_read_once_and_outside_every_time(tmp_path: Path) -> None:
    root = _candidate(tmp_path)
    path = root / ANNOTATIONS_DIR / "0.json"
    with stored_annotations():
        assert read_annotation(root, 0) == {"label": "cat", "n": [1]}
        path.write_text(json.dumps({"label": "dog"}), encoding="utf-8")
        assert read_annotation(root, 0) == {"label": "cat", "n": [1]}  # the first reading, kept
        path.unlink()
        assert read_annotation(root, 0) == {"label": "cat", "n": [1]}
    assert read_annotation(root, 0) is None  # after the block: the disk as it is now
    path.write_text(json.dumps({"label": "dog"}), encoding="utf-8")
    assert read_annotation(root, 0) == {"label": "dog"}


def test_each_call_returns_a_new_dict_a_caller_may_change(tmp_path: Path) -> None:
    root = _candidate(tmp_path)
    with stored_annotations():
        first = read_annotation(root, 0)
        assert first is not None
        first["label"] = "changed"
        first["n"].append(2)
        assert read_annotation(root, 0) == {"label": "cat", "n": [1]}


def test_absent_malformed_and_non_object_files_are_none_inside_and_outside(tmp_path: Path) -> None:
    root = _candidate(tmp_path)
    outside = [read_annotation(root, i) for i in (1, 2, 3)]
    with stored_annotations():
        inside = [read_annotation(root, i) for i in (1, 2, 3)]
        (root / ANNOTATIONS_DIR / "3.json").write_text(json.dumps({"late": True}), encoding="utf-8")
        assert read_annotation(root, 3) is None  # absent when first asked: absent for the whole block
    assert outside == inside == [None, None, None]


def test_a_second_block_starts_empty(tmp_path: Path) -> None:
    root = _candidate(tmp_path)
    path = root / ANNOTATIONS_DIR / "0.json"
    with stored_annotations():
        assert read_annotation(root, 0) == {"label": "cat", "n": [1]}
    path.write_text(json.dumps({"label": "dog"}), encoding="utf-8")
    with stored_annotations():
        assert read_annotation(root, 0) == {"label": "dog"}

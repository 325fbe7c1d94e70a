"""The one reader of run folders (`experiments.stored.run_folder`): torn lines, missing and bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.stored.run_folder import json_or_empty, read_json, read_samples, run_info


def _run(tmp_path: Path, samples: str) -> Path:
    (tmp_path / "samples.jsonl").write_text(samples, encoding="utf-8")
    (tmp_path / "run.json").write_text(json.dumps({"strategy": "s3"}), encoding="utf-8")
    return tmp_path


def test_a_torn_last_sample_line_is_left_out_for_a_page_but_refused_for_a_table(tmp_path: Path) -> None:
    run = _run(tmp_path, '{"dataset": "a", "index": 0}\n\n{"dataset": "a", "ind')
    assert read_samples(run, skip_torn=True) == [{"dataset": "a", "index": 0}]
    with pytest.raises(ValueError):
        read_samples(run)


def test_missing_files_read_as_nothing_and_a_missing_run_json_raises(tmp_path: Path) -> None:
    assert read_samples(tmp_path) == []
    assert json_or_empty(tmp_path / "usage.json") == {}
    assert read_json(tmp_path / "metrics.json") is None
    with pytest.raises(FileNotFoundError):
        run_info(tmp_path)
    assert run_info(_run(tmp_path, "")) == {"strategy": "s3"}


def test_a_malformed_file_is_none_for_a_page_and_an_error_for_a_table(tmp_path: Path) -> None:
    (tmp_path / "usage.json").write_text("{not json", encoding="utf-8")
    assert read_json(tmp_path / "usage.json") is None
    with pytest.raises(ValueError):
        json_or_empty(tmp_path / "usage.json")

"""The CLI: per-dataset eval_results files and the macro table in md/csv/tex."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from score_builders import Builder

from benchmark.score.constants import METRIC_NAMES


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmark.score", *args], capture_output=True, text=True, timeout=60
    )


def test_dataset_dir_writes_eval_results_with_the_eleven_metrics(build_dataset: Builder) -> None:
    root = build_dataset()
    proc = _run("--dataset-dir", str(root / "VLM"), "--no-print")
    assert proc.returncode == 0, proc.stderr
    out = json.loads((root / "VLM" / "eval_results_official.json").read_text())
    assert list(out["models"]["m"]["metrics"]) == list(METRIC_NAMES)
    assert len(out["models"]["m"]["per_sample"]) == 2


def test_dataset_dir_on_a_conformance_copy_leaves_reference_file_alone(
    conformance_dir: Path, tmp_path: Path
) -> None:
    src = conformance_dir / "cases" / "rsna-pneumonia-detection-challenge"
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    before = (dst / "VLM" / "eval_results_v2.json").read_bytes()
    proc = _run(
        "--dataset-dir",
        str(dst),
        "--models",
        "oracle",
        "f14_no_meta",
        "--profile",
        "strict",
        "--output",
        str(tmp_path / "out.json"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "oracle" in proc.stdout
    assert (dst / "VLM" / "eval_results_v2.json").read_bytes() == before
    out = json.loads((tmp_path / "out.json").read_text())
    assert set(out["models"]) == {"oracle", "f14_no_meta"} and out["profile"] == "strict"


def test_root_prints_latex_tabular_fragment(build_dataset: Builder) -> None:
    root = build_dataset(model="my_run")
    proc = _run("--root", str(root.parent), "--format", "tex", "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("\\begin{tabular}{") and lines[-1] == "\\end{tabular}"
    n_cols = len(re.match(r"\\begin\{tabular\}\{(\w+)\}", lines[0]).group(1))  # type: ignore[union-attr]
    rows = [ln for ln in lines if ln.endswith("\\\\")]
    assert len(rows) == 2
    for row in rows:
        assert row.count(" & ") == n_cols - 1
    assert "my\\_run" in proc.stdout and "n\\_datasets" in proc.stdout
    assert re.search(r"(?<!\\)_", proc.stdout.replace("\\begin{tabular}", "")) is None


def test_root_csv_has_header_and_one_row_per_model(build_dataset: Builder) -> None:
    root = build_dataset()
    proc = _run("--root", str(root.parent), "--format", "csv", "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    header, row = proc.stdout.strip().splitlines()
    assert header.split(",")[: 1 + len(METRIC_NAMES)] == ["model", *METRIC_NAMES]
    assert row.startswith("m,1.0")


def test_root_without_datasets_exits_2(tmp_path: Path) -> None:
    assert _run("--root", str(tmp_path)).returncode == 2


@pytest.mark.parametrize("workers", ["0", "-2", "two"])
def test_a_bad_workers_value_is_one_line_and_exit_2_with_nothing_written(
    build_dataset: Builder, workers: str
) -> None:
    root = build_dataset()
    before = sorted(p.name for p in (root / "VLM").iterdir())
    proc = _run("--dataset-dir", str(root), "--workers", workers)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"medstrat score: error: argument --workers: expected a whole number >= 1, got '{workers}'"
        " (see --help)"
    ]
    assert sorted(p.name for p in (root / "VLM").iterdir()) == before

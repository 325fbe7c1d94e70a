"""``testbed.synth --samples N``: bundled datasets of any size (issue 21 item 7)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmark.discover import Dataset
from testbed.synth.suite import generate_suite


def test_samples_overrides_the_size_and_the_manifest_has_that_many_lines(tmp_path: Path) -> None:
    (built,) = generate_suite(tmp_path, size="full", only=["synth-dermoscopy-jpg"], samples=37)
    assert len(built.samples) == 37
    entries = list(Dataset.from_root(tmp_path / "synth-dermoscopy-jpg").entries())
    assert [e.index for e in entries] == list(range(37))
    assert all((tmp_path / "synth-dermoscopy-jpg" / e.relpath).is_file() for e in entries)


def test_an_out_of_range_sample_count_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "testbed.synth", str(tmp_path / "out"), "--samples", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    expected = "medstrat synth: error: --samples must be between 1 and 500, got 0"
    assert done.stderr.strip() == expected
    assert not (tmp_path / "out").exists()

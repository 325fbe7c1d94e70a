"""perf/strategy_study.py offline (agent=rules): one run folder per (dataset, seed, strategy), finished runs
skipped on a second invocation, and ``--analyse`` writes a row per strategy with finite CIs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import pytest
from perf_script import load_perf_script

DATASET = "synth-fundus-npy"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """perf/strategy_study.py imported as a module (perf/ is a folder of scripts, not a package)."""
    return load_perf_script("strategy_study")


@pytest.mark.slow
def test_a_rerun_skips_finished_runs_and_the_analysis_has_a_row_per_strategy(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "study"
    argv = ["--agent", "rules", "--out", str(out), "--bundled", DATASET, "--replica", "--seeds", "0"]
    argv += ["--samples", "2", "--n", "2", "--strategies", "s3", "s0", "s1", "s2"]
    assert script.main(argv) == 0
    runs = out / "runs" / DATASET / "seed0"
    assert sorted(p.name for p in runs.iterdir()) == ["s0", "s1", "s2", "s3"]
    assert all((runs / s / "run.json").is_file() for s in ("s0", "s1", "s2", "s3"))
    log = [json.loads(line) for line in (out / "study.jsonl").read_text().splitlines()]
    assert [e["strategy"] for e in log] == ["s3", "s0", "s1", "s2"] and {e["exit"] for e in log} == {0}

    stamps = {s: (runs / s / "run.json").stat().st_mtime_ns for s in ("s0", "s1", "s2", "s3")}
    capsys.readouterr()
    assert script.main(argv) == 0
    assert "finished before, skipped" in capsys.readouterr().out
    assert len((out / "study.jsonl").read_text().splitlines()) == len(log)  # no new run
    assert {s: (runs / s / "run.json").stat().st_mtime_ns for s in stamps} == stamps

    (out / "study.md").unlink()
    assert script.main(["--analyse", "--out", str(out)]) == 0
    table = (out / "study.md").read_text().split("## E2E per strategy")[1].split("##")[0]
    rows = {line.split("|")[1].strip(): line for line in table.splitlines()[3:] if line.startswith("| ")}
    assert sorted(rows) == ["s0", "s1", "s2", "s3", "s4"]
    for line in rows.values():
        low, high = (float(cell) for cell in line.strip("|").split("|")[-2:])
        assert math.isfinite(low) and math.isfinite(high) and low <= high
    assert (out / "study.png").stat().st_size > 0


def test_a_missing_strategy_is_one_skip_line_and_s3_runs_first(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--api-base", "http://127.0.0.1:9/v1", "--out", str(tmp_path), "--bundled", DATASET, "--replica"]
    argv += ["--seeds", "1", "--strategies", "s0", "no_such_strategy", "s3", "--dry-run"]
    assert script.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if "no_such_strategy" in line] == [
        "no_such_strategy: skipped (no conf/strategy/no_such_strategy.yaml in this checkout: "
        "strategy=no_such_strategy is not available)"
    ]
    runs = [line for line in lines if " -m experiments " in line]
    assert [r.split("strategy=")[1].split()[0] for r in runs] == ["s3", "s0"]
    cache = f"agent.cache={tmp_path}/cache/{DATASET}-seed1.sqlite"
    assert all(cache in r and "run.seed=1" in r and "agent.api_base=http://127.0.0.1:9/v1" in r for r in runs)
    assert not (tmp_path / "runs").exists()

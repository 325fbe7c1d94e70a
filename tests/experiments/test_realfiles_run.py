"""A whole run in a fresh interpreter over the realfiles suite (other people's files): rc 0, every dataset
scored, expected per-sample failures clean (no output, one line in the trace, no traceback anywhere)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.realfiles import BuiltRealDataset, build_realfiles

pytestmark = pytest.mark.heavy

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rules_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[BuiltRealDataset], Path, str]:
    """The suite, and one S0 run of the rules baseline at temperature 0 over it (run folder, console)."""
    base = tmp_path_factory.mktemp("realfiles-run")
    built = build_realfiles(base / "bench")
    run_dir = base / "run"
    env = {**os.environ, "MEDSTRAT_CACHE": str(base / "cache")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments",
            "strategy=s0",
            "agent.temperature=0",
            "benchmark=dir",
            f"benchmark.root={base / 'bench'}",
            "run.progress=false",
            f"hydra.run.dir={run_dir}",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return built, run_dir, proc.stdout + proc.stderr


def test_every_dataset_is_scored(rules_run: tuple[list[BuiltRealDataset], Path, str]) -> None:
    built, run_dir, _ = rules_run
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    assert set(metrics["datasets"]) == {ds.spec.name for ds in built}
    for name, row in metrics["datasets"].items():
        assert isinstance(row.get("E2E"), float), (name, row)


def test_no_traceback_in_the_console_or_the_log(rules_run: tuple[list[BuiltRealDataset], Path, str]) -> None:
    _, run_dir, console = rules_run
    logs = [p.read_text(encoding="utf-8") for p in run_dir.glob("*.log")]
    assert logs, "the run wrote no log"
    for text in [console, *logs]:
        assert "Traceback" not in text
        assert "DecompressionBomb" not in text


def test_nothing_at_warning_level_for_files_the_readers_handle(
    rules_run: tuple[list[BuiltRealDataset], Path, str],
) -> None:
    # Only actionable things are warnings: expected per-sample failures are INFO lines, and notes about data
    # the readers handled correctly (pydicom's excess pixel padding on its own test files) are debug lines.
    _, run_dir, console = rules_run
    for text in [console, *(p.read_text(encoding="utf-8") for p in run_dir.glob("*.log"))]:
        noisy = [line for line in text.splitlines() if "WARNING" in line or "Warning:" in line]
        assert not noisy, noisy[:5]


def _sample_errors(trace: Path) -> dict[int, str]:
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {int(e["sample"]): str(e["error"]) for e in events if e.get("event") == "sample_error"}


def test_expected_failures_write_nothing_and_say_why_in_one_line(
    rules_run: tuple[list[BuiltRealDataset], Path, str],
) -> None:
    built, run_dir, _ = rules_run
    assert any(ds.failures for ds in built)
    for ds in built:
        out = run_dir / "selected" / ds.spec.name / "agent1_data_organization"
        errors = _sample_errors(run_dir / "candidates" / ds.spec.name / "0" / "trace.jsonl")
        for i in ds.failures:
            assert not list((out / "images").glob(f"{i}.*")), (ds.spec.name, i)
            assert not (out / "standardized_annotations" / f"{i}.json").exists(), (ds.spec.name, i)
            assert i in errors and "\n" not in errors[i], (ds.spec.name, i, errors.get(i))
        meta = json.loads((out / "data_meta.json").read_text(encoding="utf-8"))
        written = {int(p.stem) for p in (out / "standardized_annotations").glob("*.json")}
        assert meta["data_volume"]["total"] == len(written)


def test_every_decodable_sample_is_written_or_its_failure_is_reported(
    rules_run: tuple[list[BuiltRealDataset], Path, str],
) -> None:
    built, run_dir, _ = rules_run
    for ds in built:
        out = run_dir / "selected" / ds.spec.name / "agent1_data_organization"
        errors = _sample_errors(run_dir / "candidates" / ds.spec.name / "0" / "trace.jsonl")
        written = {int(p.stem) for p in (out / "standardized_annotations").glob("*.json")}
        assert written, ds.spec.name
        for i in ds.truth:
            assert i in written or i in errors, (ds.spec.name, i)


def test_benchmark_realfiles_builds_the_suite_once_into_the_cache(tmp_path: Path) -> None:
    from experiments.run.suite import ensure_testbed_suite

    root = ensure_testbed_suite("realfiles", tmp_path)
    assert root.parent == tmp_path and root.name.startswith("realfiles-")
    manifest = root / "rf-mr-transfer-syntaxes" / "VLM" / "random.txt"
    stamp = manifest.stat().st_mtime_ns
    assert ensure_testbed_suite("realfiles", tmp_path) == root
    assert manifest.stat().st_mtime_ns == stamp  # found in the cache, not rebuilt

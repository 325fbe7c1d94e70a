"""SIGKILL mid-run, then resume: identical results, and no half-written JSON or PNG is ever visible."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fault_builders import broken_files

from testbed.synth.suite import generate_suite

DATASETS = ["synth-histology-png", "synth-polyp-coco-png"]

WRITER = """
import sys, numpy as np
from core.atomic import atomic_write_json
import medio
out = sys.argv[1]
doc = {"rows": [{"i": i, "text": "x" * 200} for i in range(5000)]}
rng = np.random.default_rng(0)
n = 0
while True:
    n += 1
    doc["n"] = n
    atomic_write_json(out + "/doc.json", doc)
    medio.write_png(rng.integers(0, 255, size=(512, 512), dtype=np.uint8), out + "/img.png")
    if n == 1:  # "ready" once both files exist: the kill always lands on a rewrite, however loaded
        print("ready", flush=True)
"""


def test_sigkill_during_atomic_writes_never_leaves_a_torn_json_or_png(tmp_path: Path) -> None:
    """Expect: killing a process that rewrites a 1 MB JSON and a 512×512 PNG in a loop (atomic writes:
    temp file + os.replace), at three different moments, always leaves both files complete and readable."""
    for delay in (0.15, 0.4, 0.75):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert broken_files(tmp_path) == [], delay
        assert json.loads((tmp_path / "doc.json").read_text(encoding="utf-8"))["n"] >= 1


# ---- end to end: python -m experiments killed at three points, then resumed ----------------------------


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    generate_suite(root, only=DATASETS)
    return root


def _cmd(suite: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "experiments",
        "strategy=s3",
        "strategy.n=3",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "run.progress=false",
        f"hydra.run.dir={run_dir}",
        *extra,
    ]


def _outputs(run_dir: Path) -> dict[str, bytes]:
    """The results a user compares: metrics, and every selected/candidate annotation, image and mask."""
    files: dict[str, bytes] = {}
    for pattern in (
        "selected/*/agent1_data_organization/**/*",
        "candidates/*/*/agent1_data_organization/**/*",
    ):
        for path in run_dir.glob(pattern):
            if path.is_file():
                files[path.relative_to(run_dir).as_posix()] = path.read_bytes()
    return files


def _first(pattern: str) -> Callable[[Path], bool]:
    return lambda run: any(run.glob(pattern))


KILL_POINTS = {
    "first candidate done": _first("candidates/*/*/candidate.json"),
    "first dataset selected": _first("selected/*/result.json"),
    "export written": _first("export/*/VLM/s3/agent1_data_organization/data_meta.json"),
}


@pytest.mark.slow
def test_sigkill_at_three_points_then_resume_gives_identical_metrics_and_outputs(
    suite: Path, tmp_path: Path
) -> None:
    """Expect: for each of three kill points (after the first candidate's done-marker, after the first
    dataset's result.json, during export/scoring), every JSON/PNG in the run folder parses right after the
    SIGKILL, and ``run.resume=true`` then produces the same metrics.json, metrics_strict.json and the same
    selected and candidate outputs, byte for byte, as an uninterrupted run."""
    env = dict(os.environ, MEDSTRAT_CACHE=str(tmp_path / "cache"))
    reference = tmp_path / "reference"
    subprocess.run(_cmd(suite, reference), env=env, check=True, capture_output=True, timeout=300)
    want_metrics = [json.loads((reference / n).read_text()) for n in ("metrics.json", "metrics_strict.json")]
    want = _outputs(reference)
    killed_at = {}
    export_torn: list[str] = []
    for n, (name, reached) in enumerate(KILL_POINTS.items()):
        run_dir = tmp_path / f"run{n}"
        proc = subprocess.Popen(
            _cmd(suite, run_dir), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 300
        while proc.poll() is None and not reached(run_dir) and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        killed_at[name] = proc.wait(10)
        assert killed_at[name] == -signal.SIGKILL, f"the run finished before '{name}'"
        broken = broken_files(run_dir)
        export_torn += [f"{name}: {b}" for b in broken if b.startswith("export/")]
        assert [b for b in broken if not b.startswith("export/")] == [], name
        assert not (run_dir / "metrics.json").exists() or name == "export written"
        subprocess.run(
            _cmd(suite, run_dir, "run.resume=true"), env=env, check=True, capture_output=True, timeout=300
        )
        got = [json.loads((run_dir / f).read_text()) for f in ("metrics.json", "metrics_strict.json")]
        assert got == want_metrics, name
        assert _outputs(run_dir).keys() == want.keys(), name
        assert _outputs(run_dir) == want, name
        assert broken_files(run_dir) == [], name
        assert list(run_dir.rglob("*.partial")) == [], name  # the resume discarded the staging copy
    assert export_torn == []

"""Issue 11 item 1: a whole run over an external root of other people's files, in a fresh interpreter, with 8
worker threads, repeated, never loses a dataset to a half-imported format library.

The format libraries (pydicom, nibabel ...) must not be imported before the run starts: that is the situation
of a user running ``python -m experiments benchmark=dir`` on their own data. To keep 20 runs affordable, one
fresh interpreter imports the framework (not the format libraries) and forks a child per run, so every run
starts with pydicom and nibabel un-imported, as a new process would.

The race is timing-dependent, and on a small machine whole runs of the code before the fix seldom hit it; the
same race is reproduced directly, through medio's entry points, by ``tests/medio/test_medio_import_lock.py``
(which fails on that code). This test guards the whole pipeline: by default with 3 runs (every run meets the
first imports; the runs must agree), and 20 runs as a stress test under ``-m slow`` (issue 33 item 5: the
twenty cost ~50 CPU seconds of the default suite and, at these odds, prove little more than three).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

WORKERS = 8
DATASETS = 8

_CHILDREN = r"""
import json, os, sys
from pathlib import Path

from experiments import compose_config
from experiments.run.experiment import run_experiment

# pandas is no format library: a real run imports it in its main thread while it builds the rules agent,
# before any worker thread exists, so importing it here leaves each child's threads exactly what a fresh
# `python -m experiments` gives them, at a fifth less CPU per run.
import pandas  # noqa: E402, F401

root, out = Path(sys.argv[1]), Path(sys.argv[2])
runs, workers, names = int(sys.argv[3]), sys.argv[4], sys.argv[5]
preimported = sorted(m for m in ("pydicom", "nibabel", "SimpleITK", "h5py", "tifffile") if m in sys.modules)
if preimported:
    sys.exit(f"format libraries imported before the run: {preimported}")
cfg = compose_config(
    ["strategy=s0", "benchmark=dir", f"benchmark.root={root}", f"benchmark.datasets=[{names}]",
     f"run.workers={workers}", "run.progress=false", "run.report=false"]
)
results = {}
pids = []
for k in range(runs):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            outcome = run_experiment(cfg, out / f"run{k}")
            (out / f"run{k}" / "child.json").write_text(json.dumps({"incomplete": outcome.incomplete}))
        except BaseException as exc:  # report, never leave the child running the parent's code
            (out / f"run{k}.crash").write_text(f"{type(exc).__name__}: {exc}")
            code = 1
        os._exit(code)
    pids.append(pid)
    if len(pids) == 2:  # two runs at a time on a small machine
        os.waitpid(pids.pop(0), 0)
for pid in pids:
    os.waitpid(pid, 0)
"""

# What a half-initialised module looks like in an error message.
_IMPORT_RACE = (
    "partially initialized",
    "circular import",
    "_DeadlockError",
    "deadlock detected",
    "has no attribute",
)


@pytest.fixture(scope="module")
def realfiles_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("realfiles")
    subprocess.run(
        [sys.executable, "-m", "testbed.synth", str(root), "--suite", "realfiles"],
        check=True,
        capture_output=True,
    )
    return root


@pytest.mark.heavy
@pytest.mark.parametrize("runs", [3, pytest.param(20, marks=pytest.mark.slow)], ids=["3 runs", "20 runs"])
def test_fresh_runs_with_eight_workers_lose_no_dataset(
    runs: int, realfiles_root: Path, tmp_path: Path
) -> None:
    # The eight smallest datasets (all DICOM or nibabel formats): the first imports happen in every run, and
    # fewer samples keep the runs affordable.
    sizes = {
        p.name: len((p / "VLM" / "random.txt").read_text().split("\n"))
        for p in realfiles_root.iterdir()
        if (p / "VLM" / "random.txt").is_file()
    }
    datasets = sorted(sorted(sizes, key=lambda n: (sizes[n], n))[:DATASETS])
    assert len(datasets) == DATASETS
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILDREN,
            str(realfiles_root),
            str(tmp_path),
            str(runs),
            str(WORKERS),
            ",".join(datasets),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not [m for m in _IMPORT_RACE if m in proc.stderr], proc.stderr[-2000:]
    crashes = {p.name: p.read_text() for p in tmp_path.glob("*.crash")}
    assert not crashes
    macros = []
    for k in range(runs):
        run = tmp_path / f"run{k}"
        metrics = json.loads((run / "metrics.json").read_text())
        assert sorted(metrics["datasets"]) == datasets, f"run {k} did not score every dataset"
        macros.append(metrics["macro"])
        failed = {}
        for result in run.glob("selected/*/result.json"):
            record = json.loads(result.read_text())
            reasons = [c.get("reason") for c in record["candidates"] if c["status"] == "failed"]
            if reasons:
                failed[result.parent.name] = reasons
        assert not failed, f"run {k}: {failed}"
        texts = [p.read_text(errors="replace") for p in run.rglob("*") if p.suffix in (".log", ".jsonl")]
        races = [m for t in texts for m in _IMPORT_RACE if m in t]
        assert not races, f"run {k}: an import race reached the log or a trace: {races}"
    assert all(m == macros[0] for m in macros), "the same run gave different scores"

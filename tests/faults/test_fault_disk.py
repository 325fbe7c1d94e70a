"""The output folder stops accepting writes mid-run (a full or read-only disk).

Why a monkeypatch and not chmod: tests run as root in CI, and root ignores file modes, so ``chmod -w``
changes nothing. Every file the run writes goes through an atomic rename (``os.replace`` in
``core.atomic`` and ``medio.write_png``), so making ``os.replace`` fail with ``EROFS`` for paths under
the run folder after N successful writes is exactly what a filesystem remounted read-only looks like to
the code, and it works for any user. Appends to trace logs (plain ``open``) are left alone: patching
``builtins.open`` would also break reads, and traces are diagnostics, not results.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from fault_builders import broken_files

from experiments import compose_config
from experiments.run.experiment import NothingProduced, run_experiment
from testbed.synth.suite import generate_suite

DATASETS = ["synth-histology-png", "synth-polyp-coco-png"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    generate_suite(root, only=DATASETS)
    return root


def _cfg(suite: Path):
    return compose_config(
        ["benchmark=dir", f"benchmark.root={suite}", "strategy=s3", "strategy.n=2", "run.progress=false"]
    )


def test_a_disk_that_turns_read_only_mid_run_stops_with_a_clear_error_and_keeps_finished_work(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expect: after 25 successful atomic writes into the run folder every further rename fails with
    EROFS; the run ends with an error that names EROFS / read-only (raised or recorded per dataset and
    the run marked incomplete); every JSON and PNG already in the run folder parses/decodes, and every
    candidate with a done-marker has all of its files."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    real_replace = os.replace
    budget = {"left": 25}

    def replace(src, dst, *args, **kwargs):
        if str(dst).startswith(str(run_dir)):
            if budget["left"] <= 0:
                raise OSError(errno.EROFS, "Read-only file system", str(dst))
            budget["left"] -= 1
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    error: str | None = None
    try:
        outcome = run_experiment(_cfg(suite), run_dir)
        error = json.dumps(outcome.errors) if outcome.errors else None
        incomplete = outcome.incomplete
    except (OSError, NothingProduced) as exc:  # NothingProduced: every dataset failed on the read-only disk
        error, incomplete = str(exc), True
    monkeypatch.setattr(os, "replace", real_replace)
    print(f"\nobserved: incomplete={incomplete} error={error!r}")
    assert incomplete
    assert error is not None and ("Read-only" in error or "EROFS" in error or "30" in error)
    assert broken_files(run_dir) == []
    for marker in run_dir.glob("candidates/*/*/candidate.json"):
        meta = json.loads(marker.read_text(encoding="utf-8"))
        if meta.get("status") == "ok":
            out = marker.parent / "agent1_data_organization"
            assert (out / "data_meta.json").is_file(), marker

"""Under Hydra, log warnings go to stderr with the errors: stdout holds only the results table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_warning_goes_to_stderr_and_stdout_keeps_only_the_table(
    suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments",
            "strategy=s3_paper",
            "strategy.n=2",
            "validator=evidence",  # the paper's procedure validates with mdsbench: it says so in a warning
            "benchmark=dir",
            f"benchmark.root={suite}",
            "benchmark.datasets=[synth-fundus-npy]",
            f"hydra.run.dir={tmp_path / 'run'}",
            "run.progress=false",
            "run.report=false",
        ],
        env=cli_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    warning = "validating with the mdsbench profile instead of evidence"
    assert warning in done.stderr
    assert warning not in done.stdout and "WARNING" not in done.stdout
    assert "E2E" in done.stdout and "official" in done.stdout

"""Under Hydra, log warnings go to stderr with the errors: stdout holds only the results table."""

from __future__ import annotations

from pathlib import Path

from cli_process import run_cli


def test_a_warning_goes_to_stderr_and_stdout_keeps_only_the_table(
    suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    done = run_cli(
        [
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
        cli_env,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    warning = "validating with the mdsbench profile instead of evidence"
    assert warning in done.stderr
    assert warning not in done.stdout and "WARNING" not in done.stdout
    assert "E2E" in done.stdout and "official" in done.stdout

"""Exits and configs (issue 23 item 7), through the real command line: degenerate options refused by the
preflight with exit 2 and no folder, OS permission errors as exit 2 naming the path, INCOMPLETE tables that
say what their macro covers, and one legend line under the metric table.

Each command runs in this process as ``python -m experiments`` runs it (`cli_in_process`): what is checked is
its message, exit code and files; fresh interpreters of the same command are in test_cli.py and
tests/test_cli_errors.py.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_in_process import run_as_main
from cli_process import nonblank_lines as _lines
from run_overrides import FAKE_AGENT

from experiments.run.results import METRIC_LEGEND, coverage_line

PROG = "python -m experiments: error: "


@pytest.fixture
def cli(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> Callable[[list[str]], subprocess.CompletedProcess[str]]:
    """``python -m experiments ARGS`` in this process, in ``tmp_path``, with the cache there."""

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("MEDSTRAT_CACHE", str(tmp_path / "cache"))
        capfd.readouterr()
        code = run_as_main("experiments", args)
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(["python", "-m", "experiments", *args], code, out, err)

    return run


def _base(suite: Path, run: Path, *extra: str) -> list[str]:
    return [
        "benchmark=dir",
        f"benchmark.root={suite}",
        "run.progress=false",
        "run.report=false",
        f"hydra.run.dir={run}",
        *extra,
    ]


def test_an_incomplete_table_says_how_many_datasets_its_macro_covers_and_which_failed(
    suite: Path, cli: Callable[[list[str]], subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    done = cli(_base(suite, tmp_path / "run", "strategy=s0", "agent._target_=strategy_fakes.FailOnAgent"))
    assert done.returncode == 3, done.stderr
    assert (
        "INCOMPLETE: macro over 1 of 2 datasets; failed: synth-fundus-npy (RuntimeError: cannot read "
        "synth-fundus-npy)"
    ) in _lines(done.stdout)


def test_the_metric_table_is_followed_by_one_legend_line(
    suite: Path, cli: Callable[[list[str]], subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    done = cli(_base(suite, tmp_path / "run", "strategy=s0", FAKE_AGENT))
    assert done.returncode == 0, done.stderr
    assert _lines(done.stderr).count(METRIC_LEGEND) == 1
    assert all(
        f"{m} " in METRIC_LEGEND for m in ("SV", "SSC", "SC", "IC", "IV", "INR", "CF", "MSC", "MSJ", "SCJ")
    )
    assert "INCOMPLETE" not in done.stdout


def test_coverage_is_silent_when_every_dataset_is_in_the_macro() -> None:
    doc = {"datasets": {"a": {}, "b": {}}}
    assert coverage_line(doc, ["a", "b"], {}) is None
    assert (
        coverage_line(doc, ["a", "b", "c"], {})
        == "INCOMPLETE: macro over 2 of 3 datasets; failed: c (no output)"
    )


def _unwritable(tmp_path: Path) -> Path:
    """A folder this process cannot create a sub-folder in (root ignores modes: then a sysfs path)."""
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        return locked / "run"
    if Path("/sys/kernel").is_dir():
        return Path("/sys/medstrat-no-such-dir/run")
    pytest.skip("running as root without sysfs: no folder refuses this process")


def test_a_run_folder_that_cannot_be_created_is_exit_2_with_the_path(
    suite: Path, cli: Callable[[list[str]], subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    run = _unwritable(tmp_path)
    done = cli(_base(suite, run, "strategy=s0", FAKE_AGENT))
    assert done.returncode == 2, done.stderr
    (line,) = _lines(done.stderr)
    assert line.startswith(f"{PROG}hydra.run.dir={run}: cannot create or lock the run folder (")
    assert "ermission denied" in line or "not permitted" in line


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (("strategy=s4", "strategy.n=1"), "strategy.n=1: input should be greater than or equal to 2"),
        (("strategy=s3", "strategy.n=1"), "strategy.n=1: input should be greater than or equal to 2"),
        (("strategy=s3_paper", "strategy.n=1"), "strategy.n=1: input should be greater than or equal to 2"),
        (("strategy=s0", "run.budget_usd=0"), "run.budget_usd=0: a budget must be positive"),
    ],
)
def test_degenerate_options_are_refused_by_the_preflight_with_no_folder(
    suite: Path,
    cli: Callable[[list[str]], subprocess.CompletedProcess[str]],
    tmp_path: Path,
    options: tuple[str, ...],
    expected: str,
) -> None:
    run = tmp_path / "run"
    done = cli(_base(suite, run, *options, FAKE_AGENT))
    assert done.returncode == 2, done.stderr
    (line,) = _lines(done.stderr)
    assert line.startswith(f"{PROG}{expected}"), line
    assert not run.exists()  # neither the run folder nor its .hydra/

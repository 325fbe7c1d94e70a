"""Plug-ins fail loudly (issue 23 item 2), through the command line: a selector that raises stops the run with
one line naming it, the dataset and sample and the exception (exit 2; the traceback with ``--debug``), unless
``selector.on_error=fallback``, which counts every fallback per dataset where the results are read.

The commands run in this process as ``python -m`` runs them (`cli_in_process`; fresh interpreters of both
commands are in test_cli.py, tests/test_cli_errors.py and test_selector_leaderboard.py): what is checked is
their message, exit code and files. The plug-in module is imported from a folder on ``sys.path``, as from
``PYTHONPATH``, and forgotten after each test (module and registry entry), so each test imports it anew.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_in_process import MEDSTRAT, run_as_main

from strategies.selectors import selectors

Command = Callable[..., subprocess.CompletedProcess[str]]

PLUGIN = """
from strategies import selector


@selector("boom")
def boom(index, candidates, reports, task):
    raise KeyError("label")
"""


@pytest.fixture(scope="module")
def plugins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the plug-in module ``boom_selector``."""
    folder = tmp_path_factory.mktemp("plugins")
    (folder / "boom_selector.py").write_text(PLUGIN)
    return folder


@pytest.fixture
def env(
    plugins: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> Iterator[Command]:
    """``python -m MODULE ARGS`` here with the plug-in folder importable; the plug-in is gone afterwards."""
    monkeypatch.syspath_prepend(str(plugins))
    monkeypatch.setenv("MEDSTRAT_CACHE", str(tmp_path / "cache"))
    # The registry is process-wide: other tests in this worker must not see (or list) "boom".
    entries, meta = dict(selectors._entries), dict(selectors._meta)

    def command(module: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        monkeypatch.chdir(cwd)
        capfd.readouterr()
        code = run_as_main(module, args)
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(["python", "-m", module, *args], code, out, err)

    yield command
    selectors._entries.clear()
    selectors._entries.update(entries)
    selectors._meta.clear()
    selectors._meta.update(meta)
    sys.modules.pop("boom_selector", None)


def _run(suite: Path, run: Path, env: Command, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [
        "strategy=s3",
        "strategy.n=2",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "run.imports=[boom_selector]",
        "selector.name=boom",
        "run.progress=false",
        "run.report=false",
        f"hydra.run.dir={run}",
        *extra,
    ]
    return env("experiments", args, run.parent)


def _names(suite: Path) -> list[str]:
    return sorted(p.name for p in suite.iterdir() if (p / "VLM" / "random.txt").is_file())


def test_a_selector_that_raises_stops_the_run_with_one_line(
    suite: Path, env: Command, tmp_path: Path
) -> None:
    done = _run(suite, tmp_path / "run", env)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    dataset = lines[0].split(" failed on ", 1)[1].split(" sample ", 1)[0]  # datasets run concurrently
    assert dataset in _names(suite)
    assert lines == [
        f"python -m experiments: error: selector boom failed on {dataset} sample 0: KeyError: 'label'; fix "
        "it, or let validator_max decide such samples (counted) with selector.on_error=fallback"
    ]
    assert not (tmp_path / "run" / "metrics.json").exists()  # never a table that ranks it as working


def test_with_debug_the_selectors_traceback_is_shown(suite: Path, env: Command, tmp_path: Path) -> None:
    done = _run(suite, tmp_path / "run", env, "--debug")
    assert done.returncode == 2, done.stderr
    assert "Traceback (most recent call last)" in done.stderr and 'raise KeyError("label")' in done.stderr
    assert (
        done.stderr.rstrip().splitlines()[-1].startswith("python -m experiments: error: selector boom failed")
    )


def test_with_on_error_fallback_every_fallback_is_counted_per_dataset(
    suite: Path, env: Command, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    done = _run(suite, run, env, "selector.on_error=fallback")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    per_dataset = {name: sum(1 for r in rows if r["dataset"] == name) for name in _names(suite)}
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["selector_fallbacks"] == {"total": len(rows), "datasets": per_dataset}
    assert json.loads((run / "metrics_strict.json").read_text())["selector_fallbacks"]["total"] == len(rows)
    assert all(r["selector_fallback"] is True and r["decision"]["fallback"] is True for r in rows)
    marked = [line for line in done.stdout.splitlines() if line.startswith("SELECTOR FALLBACK:")]
    assert marked == [
        f"SELECTOR FALLBACK: the selector raised on {len(rows)} samples ("
        + ", ".join(f"{n} {k}" for n, k in per_dataset.items())
        + "); validator_max chose there (selector.on_error=fallback)"
    ]
    assert "selector boom failed" not in done.stderr  # counted once in the table, not one line per sample


def test_an_unknown_on_error_policy_is_refused_before_any_work(
    suite: Path, env: Command, tmp_path: Path
) -> None:
    done = _run(suite, tmp_path / "run", env, "selector.on_error=ignore")
    assert done.returncode == 2, done.stderr
    assert "selector.on_error='ignore': expected one of raise, fallback" in done.stderr
    assert not (tmp_path / "run").exists()


def _leaderboard(run: Path, out: Path, env: Command, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [str(run), "--selectors", "boom,validator_max", "--imports", "boom_selector", "--out", str(out)]
    return env(MEDSTRAT, ["leaderboard", *args, "--workers", "1", *extra], out.parent)


def test_the_leaderboard_refuses_a_raising_selector_or_counts_its_fallbacks(
    rules_s3_run, env: Command, tmp_path: Path
) -> None:
    _, run = rules_s3_run
    refused = _leaderboard(run, tmp_path / "a", env)
    assert refused.returncode == 2, refused.stderr
    (line,) = [x for x in refused.stderr.splitlines() if x.strip()]
    assert line.startswith("medstrat leaderboard: error: selector boom failed on ")
    assert not (tmp_path / "a").exists()
    counted = _leaderboard(run, tmp_path / "b", env, "--on-error", "fallback")
    assert counted.returncode == 0, counted.stderr
    import pandas as pd

    frame = pd.read_csv(tmp_path / "b" / "selectors.csv").set_index(["validator", "selector"])
    samples = sum(1 for _ in (run / "samples.jsonl").read_text().splitlines())
    assert (frame.xs("boom", level="selector")["fallbacks"] == samples).all()
    assert (frame.xs("validator_max", level="selector")["fallbacks"] == 0).all()
    assert "**Selector fallback**" in (tmp_path / "b" / "selectors.md").read_text()

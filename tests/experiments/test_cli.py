"""`python -m experiments` as a user runs it: end to end, the export read by the scorer, resume after SIGKILL,
and the ablation files of a sweep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmark.score.aggregate import macro
from benchmark.score.constants import METRIC_NAMES
from benchmark.score.evaluate import score_root
from experiments.analysis.ablation import write_ablation
from experiments.run.experiment import run_experiment


def cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "experiments", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_runs_s3_prints_both_tables_and_its_export_scores_identically(
    suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    done = cli(
        "strategy=s3",
        "strategy.n=3",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "agent._target_=strategy_fakes.NoisyOracleAgent",
        f"hydra.run.dir={run_dir}",
        "run.progress=false",
        env=cli_env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "official" in done.stdout and "strict" in done.stdout and "E2E" in done.stdout
    assert (run_dir / ".hydra" / "config.yaml").is_file()
    ours = json.loads((run_dir / "metrics.json").read_text())
    theirs = macro(score_root(run_dir / "export", models=["s3"], workers=1), ["s3"])["models"]["s3"][
        "metrics"
    ]
    assert ours["macro"] == pytest.approx({k: theirs[k] for k in METRIC_NAMES}, abs=1e-12)


def test_an_unknown_strategy_name_lists_the_valid_ones(cli_env: dict[str, str], tmp_path: Path) -> None:
    done = cli("strategy=s9", env=cli_env, cwd=tmp_path)
    assert done.returncode != 0 and "s3" in done.stderr and "s4" in done.stderr


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "experiments", *args],
        env=env,
        cwd=cwd,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_a_run_killed_halfway_and_resumed_equals_an_uninterrupted_run(
    suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    common = [
        "strategy=s3",
        "strategy.n=4",
        "run.concurrency=1",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "agent._target_=strategy_fakes.SlowAgent",
        "+agent.delay=0.4",
        "run.progress=false",
    ]
    whole = cli(*common, f"hydra.run.dir={tmp_path / 'whole'}", env=cli_env, cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    killed = tmp_path / "killed"
    proc = _run([*common, f"hydra.run.dir={killed}"], cli_env, tmp_path)
    deadline = time.time() + 60
    while len(list(killed.glob("candidates/*/*/candidate.json"))) < 3 and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "metrics.json").exists()
    resumed = cli(*common, f"hydra.run.dir={killed}", "run.resume=true", env=cli_env, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((killed / "metrics.json").read_text()) == json.loads(
        (tmp_path / "whole" / "metrics.json").read_text()
    )


def test_the_ablation_writes_tables_tests_and_a_figure(make_cfg, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    for i, strategy in enumerate(("s0", "s3")):
        run_experiment(
            make_cfg(f"strategy={strategy}", "strategy.n=2" if strategy == "s3" else "run.seed=0"),
            sweep / f"{i}_{strategy}",
        )
    written = write_ablation(sweep)
    assert {p.name for p in written} == {
        "ablation.csv",
        "ablation_thresholds.csv",
        "ablation.md",
        "ablation.tex",
        "ablation.png",
        "ablation_cost.png",
        "ablation_budget.csv",
        "passk.csv",  # the S3 row's pass@k / selected@k curves (experiments.analysis.passk), table and figure
        "passk.png",
    }
    assert "## pass@k, pass^k and selected@k: s3" in (sweep / "ablation.md").read_text()
    import pandas as pd

    table = pd.read_csv(sweep / "ablation.csv")
    assert list(table["strategy"]) == ["s0", "s3"]
    assert {
        *METRIC_NAMES,
        "tokens",
        "USD",
        "E2E/USD",
        "E2E_lo",
        "E2E_hi",
        "p_vs_s0",
        "oracle_bestofn_E2E",
        "calls",
        "prompt_tokens",
        "completion_tokens",
        "wall_s",
        "E2E_sd",
        "seeds",
    } <= set(table.columns)
    s3 = table.set_index("strategy").loc["s3"]
    assert s3["E2E_lo"] <= s3["E2E"] <= s3["E2E_hi"] and 0 < s3["p_vs_s0"] <= 1
    assert s3["oracle_bestofn_E2E"] >= s3["E2E"]
    grid = pd.read_csv(sweep / "ablation_thresholds.csv")
    assert len(grid) == 2 * 4 * 5 * 5
    assert "\\begin{tabular}" in (sweep / "ablation.tex").read_text()
    assert (sweep / "ablation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    budget = pd.read_csv(sweep / "ablation_budget.csv").set_index("strategy")
    assert budget.loc["s0", "s3_n"] == 1  # S0 made one candidate per dataset: S3 at that spend is best-of-1


@pytest.mark.slow
def test_s3_beats_s0_on_the_bundled_suite_with_the_rules_agent(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments",
            "-m",
            "strategy=s0,s3",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
            "run.progress=false",
        ],
        env=cli_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    e2e = {
        p.name.split("_", 1)[1]: json.loads((p / "metrics.json").read_text())["macro"]["E2E"]
        for p in (tmp_path / "sweep").iterdir()
        if (p / "metrics.json").is_file()
    }
    assert e2e["s3"] >= e2e["s0"]
    assert (tmp_path / "sweep" / "ablation.md").is_file() and (tmp_path / "sweep" / "ablation.png").is_file()

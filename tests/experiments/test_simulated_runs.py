"""Runs on simulated candidates: gated, marked "simulation", and reporting miss rates per mistake type."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import DictConfig

from experiments import compose_config
from experiments.run.experiment import run_experiment
from experiments.selection.reselect import reselect
from testbed.simulated import SimulationSourceMissing


def simulated_cfg(suite: Path, *overrides: str) -> DictConfig:
    return compose_config(
        [
            "benchmark=dir",
            f"benchmark.root={suite}",
            "agent=simulated",
            "analysis.simulated=true",
            "run.progress=false",
            "run.report=false",
            *overrides,
        ]
    )


def test_an_s3_run_on_simulated_candidates_reports_miss_rates_next_to_mdsbench_and_random(
    suite: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    cfg = simulated_cfg(suite, "strategy=s3", "strategy.n=4", "agent.clean=0.2", "run.report=true")
    outcome = run_experiment(cfg, run_dir)
    doc = json.loads((run_dir / "metrics.json").read_text())
    assert doc["simulation"] is True
    columns = doc["miss_rates"]["selectors"]
    assert set(columns) == {"s3/validator_max", "mdsbench", "random"}
    assert any(columns.values())
    for counts in columns.values():
        for cell in counts.values():
            assert 0 <= cell["misses"] <= cell["opportunities"] > 0
    assert set(doc["miss_rates"]["types"]) >= {k for c in columns.values() for k in c}
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert all(r["simulation"] for r in rows)
    chosen = [r for r in rows if "mistakes" in r]
    assert chosen and all(
        r["mistakes"]["chosen"] == r["mistakes"]["candidates"][str(r["decision"]["candidate"])]
        for r in chosen
    )
    assert "SIMULATION" in outcome.table and "miss rate per mistake type" in outcome.table
    assert json.loads((run_dir / "run.json").read_text())["simulation"] is True
    page = (run_dir / "report.html").read_text()
    assert "SIMULATION" in page and 'id="miss-rates"' in page
    # Reselecting the stored simulated candidates (no agent) is still marked a simulation, with miss rates.
    again = reselect(run_dir, ["selector=consensus", "run.report=false"], tmp_path / "again")
    redone = json.loads((again.run_dir / "metrics.json").read_text())
    assert redone["simulation"] is True and "s3/consensus" in redone["miss_rates"]["selectors"]


def test_s4_with_the_consensus_selector_runs_on_simulated_candidates(suite: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_experiment(simulated_cfg(suite, "strategy=s4", "strategy.n=3", "selector=consensus"), run_dir)
    doc = json.loads((run_dir / "metrics.json").read_text())
    assert "s4/consensus" in doc["miss_rates"]["selectors"]
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert all(
        r["decision"]["reason"].startswith("fieldwise")
        for r in rows
        if r["decision"]["candidate"] is not None
    )


def test_the_cli_refuses_the_simulated_agent_without_analysis_simulated(
    suite: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments",
            "agent=simulated",
            "benchmark=dir",
            f"benchmark.root={suite}",
            f"hydra.run.dir={tmp_path / 'run'}",
            "run.progress=false",
        ],
        env=cli_env,
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "analysis.simulated=true" in done.stderr
    assert not (tmp_path / "run" / "candidates").exists()


def test_a_dataset_without_a_correct_output_stops_the_run_before_any_work(
    suite: Path, tmp_path: Path
) -> None:
    cfg = simulated_cfg(suite, "strategy=s3", "agent.source=no-such-run")
    with pytest.raises(SimulationSourceMissing, match=r"--oracle oracle"):
        run_experiment(cfg, tmp_path / "run")
    assert not (tmp_path / "run" / "candidates").exists()


def test_the_ablation_says_which_rows_ran_on_simulated_candidates(tmp_path: Path) -> None:
    from benchmark.score.constants import METRIC_NAMES
    from experiments.analysis.ablation import write_ablation

    sweep = tmp_path / "sweep"
    for job, (strategy, simulated) in enumerate((("s0", False), ("s3", True))):
        folder = sweep / f"{job}_{strategy}"
        (folder / ".hydra").mkdir(parents=True)
        metrics = {k: 0.8 for k in METRIC_NAMES}
        doc = {"profile": "official", "macro": metrics, "datasets": {"d0": metrics, "d1": metrics}}
        if simulated:
            doc["simulation"] = True
        (folder / "metrics.json").write_text(json.dumps(doc))
        (folder / "usage.json").write_text(json.dumps({"total": {"calls": 1}, "candidates": 1}))
        (folder / "run.json").write_text(json.dumps({"strategy": strategy, "config": {"run": {"seed": 0}}}))
        (folder / ".hydra" / "overrides.yaml").write_text(f"- strategy={strategy}\n")
    write_ablation(sweep, figure=False)
    md = (sweep / "ablation.md").read_text()
    assert "**Simulation**: s3 ran on simulated candidates" in md

"""Every command that writes leaves a user's results alone unless asked (issue 54 item 3; the table in
docs/reliability.md): each test points a command at a target holding results it used to overwrite or delete,
and checks for the one-line refusal (exit 2) and the target's bytes unchanged."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process
from cli_process import nonblank_lines
from omegaconf import DictConfig

from benchmark.score.__main__ import main as score_main
from benchmark.score.constants import METRIC_NAMES
from experiments.report.__main__ import main as report_main
from experiments.run.merge import main as merge_main
from testbed.perturb.__main__ import main as perturb_main
from testbed.synth.__main__ import main as synth_main

DATASET = "synth-fundus-npy"


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _finished_run(folder: Path, dataset: str, e2e: float) -> Path:
    """A run folder as far as the merge reads it: both metrics files, samples, usage."""
    folder.mkdir(parents=True)
    for name in ("metrics.json", "metrics_strict.json"):
        metrics = dict.fromkeys(METRIC_NAMES, e2e)
        doc = {"macro": metrics, "datasets": {dataset: metrics}}
        (folder / name).write_text(json.dumps(doc))
    (folder / "run.json").write_text(json.dumps({"strategy": "s3"}))
    (folder / "samples.jsonl").write_text(json.dumps({"dataset": dataset}) + "\n")
    (folder / "usage.json").write_text(json.dumps({"total": {"calls": 1}}))
    return folder


def test_merge_refuses_an_out_that_is_a_run_or_another_merge_and_remerges_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _finished_run(tmp_path / "a", "x", 0.5), _finished_run(tmp_path / "b", "y", 1.0)
    other = _finished_run(tmp_path / "other", "z", 0.0)
    kept = _digest(other)
    assert merge_main([str(a), str(b), "--out", str(other)]) == 2
    (line,) = nonblank_lines(capsys.readouterr().err)
    assert "is a run folder; merging there would overwrite its metrics.json" in line
    assert _digest(other) == kept

    merged = tmp_path / "merged"
    assert merge_main([str(a), "--out", str(merged)]) == 0
    first = _digest(merged)
    assert merge_main([str(a), str(b), "--out", str(merged)]) == 2  # a merge of other runs: kept
    assert "holds the merge of other runs" in capsys.readouterr().err
    assert _digest(merged) == first
    assert merge_main([str(a), "--out", str(merged)]) == 0  # the same runs again: the same files


def test_the_suite_generator_refuses_to_delete_runs_written_into_its_datasets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "suite"
    args = [str(out), "--only", DATASET, "--oracle", "oracle"]
    assert synth_main(args) == 0
    assert synth_main(args) == 0  # its own files, oracle included, are rebuilt
    run = out / DATASET / "VLM" / "my_model" / "agent1_data_organization"
    run.mkdir(parents=True)
    (run / "data_meta.json").write_text("{}")
    kept = _digest(out)
    capsys.readouterr()
    assert synth_main(args) == 2
    (line,) = nonblank_lines(capsys.readouterr().err)
    assert f"holds results a regenerated dataset would delete ({run.parent})" in line
    assert _digest(out) == kept


def test_perturb_refuses_an_out_holding_an_output_it_did_not_write(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    correct = suite / DATASET / "VLM" / "oracle"
    out = tmp_path / "candidate"
    assert perturb_main([str(correct), str(out), "--dataset-dir", str(suite / DATASET)]) == 0
    assert perturb_main([str(correct), str(out), "--dataset-dir", str(suite / DATASET)]) == 0  # its own
    run = tmp_path / "run"
    (run / "agent1_data_organization").mkdir(parents=True)
    (run / "agent1_data_organization" / "data_meta.json").write_text("{}")
    kept = _digest(run)
    capsys.readouterr()
    assert perturb_main([str(correct), str(run), "--dataset-dir", str(suite / DATASET)]) == 2
    assert "holds an agent1_data_organization/ this command did not write" in capsys.readouterr().err
    assert _digest(run) == kept


def test_report_out_refuses_another_runs_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _finished_run(tmp_path / "source", "x", 0.5)
    other = _finished_run(tmp_path / "other", "y", 1.0)
    (other / "report.html").write_text("<p>the other run</p>")
    kept = _digest(other)
    assert report_main([str(source), "--out", str(other)]) == 2
    (line,) = nonblank_lines(capsys.readouterr().err)
    assert line.endswith(f"--out {other} is another run's folder; pick a folder of its own")
    assert _digest(other) == kept


def test_score_output_refuses_an_existing_file_that_is_not_eval_results(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "ground_truth_copy.json"
    target.write_text('{"version": "1.1"}')
    args = ["--dataset-dir", str(suite / DATASET), "--output", str(target), "--workers", "1", "--no-print"]
    assert score_main(args) == 2
    assert "exists and is not an eval_results file" in capsys.readouterr().err
    assert target.read_text() == '{"version": "1.1"}'
    fresh = tmp_path / "eval.json"
    assert score_main([*args[:3], str(fresh), *args[4:]]) == 0
    assert score_main([*args[:3], str(fresh), *args[4:]]) == 0  # an earlier eval_results file is rewritten


def test_a_tracked_sweep_into_a_folder_holding_a_sweep_writes_no_tracking_json(
    suite: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sweep = tmp_path / "sweep"
    (sweep / "0_s0" / "selected").mkdir(parents=True)
    (sweep / "0_s0" / "run.json").write_text(json.dumps({"strategy": "s0"}))
    (sweep / "tracking.json").write_text('{"run_id": "the first sweep"}')
    kept = _digest(sweep)
    args = ["-m", "strategy=s3", "benchmark=dir", f"benchmark.root={suite}", "tracking=mlflow"]
    done = run_cli_in_process([*args, f"hydra.sweep.dir={sweep}"], os.environ, tmp_path, capfd)
    assert done.returncode == 2, done.stderr
    assert _digest(sweep) == kept  # the preflight refuses before the tracking callback opens a run
    assert not (tmp_path / "mlflow.db").exists()


def test_reselect_refuses_an_out_holding_a_run(
    make_cfg: Callable[..., DictConfig], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from omegaconf import OmegaConf

    from experiments.selection.reselect import main as reselect_main

    source = tmp_path / "source"
    (source / "candidates" / DATASET).mkdir(parents=True)
    config = OmegaConf.to_container(make_cfg("strategy=s3"), resolve=True)
    (source / "run.json").write_text(json.dumps({"strategy": "s3", "config": config}))
    out = _finished_run(tmp_path / "out", "x", 0.5)
    kept = _digest(out)
    assert reselect_main([str(source), "selector=majority", f"hydra.run.dir={out}"]) == 2
    assert f"{out} already holds a run; reselect into a new folder" in capsys.readouterr().err
    assert _digest(out) == kept and not (out / "candidates").exists()

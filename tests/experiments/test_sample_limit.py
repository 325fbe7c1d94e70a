"""``benchmark.samples=N`` on a benchmark folder (``benchmark=dir``, the replica and other suites on disk):
the run, its validator and its scores cover the first N manifest entries of each dataset, and say so; and a
``benchmark`` key the benchmark does not read is refused before any folder, instead of being ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process

from benchmark.discover import discover

RULES = ["agent=rules", "run.progress=false", "run.report=false", "run.processes=1"]


def _args(suite: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        "strategy=s0",
        "benchmark=dir",
        f"benchmark.root={suite}",
        f"hydra.run.dir={run_dir}",
        *RULES,
        *extra,
    ]


def test_a_sample_limit_on_a_folder_runs_and_scores_the_first_n_samples_only(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    done = run_cli_in_process(_args(suite, run, "benchmark.samples=2"), cli_env, tmp_path, capfd)
    assert done.returncode == 0, done.stderr
    assert "first 2 samples each" in done.stdout
    info = json.loads((run / "run.json").read_text())
    assert info["samples_per_dataset"] == 2
    datasets = {d.name: d for d in discover(suite)}
    assert set(info["samples"]) == set(datasets) and set(info["samples"].values()) == {2}
    for name, dataset in datasets.items():
        first = [e.index for e in dataset.entries()[:2]]
        assert len(dataset.entries()) > 2  # the limit cut something
        written = sorted(
            int(p.stem) for p in (run / "selected" / name).rglob("standardized_annotations/*.json")
        )
        assert written == first
        exported = (run / "export" / name / "VLM" / "random.txt").read_text().splitlines()
        assert [int(line.split()[0]) for line in exported] == first
        assert not (run / "export" / name / "VLM" / "random.txt").is_symlink()
    rows = [json.loads(r) for r in (run / "samples.jsonl").read_text().splitlines()]
    assert sorted({(r["dataset"], r["index"]) for r in rows}) == sorted(
        (name, e.index) for name, d in datasets.items() for e in d.entries()[:2]
    )
    # The strict profile counts a missing sample as 0: scored against the whole manifest, the rules agent's
    # two samples would be a fraction of it.
    strict = json.loads((run / "metrics_strict.json").read_text())
    assert all(m["SV"] == 1.0 for m in strict["datasets"].values()), strict["datasets"]
    # The dataset itself is untouched.
    for dataset in datasets.values():
        assert len(dataset.entries()) == len(discover(dataset.root)[0].entries())


def test_a_resumed_sample_limited_run_skips_its_finished_samples_and_keeps_its_scores(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    first = run_cli_in_process(_args(suite, run, "benchmark.samples=1"), cli_env, tmp_path, capfd)
    assert first.returncode == 0, first.stderr
    before = (run / "metrics_strict.json").read_text()
    again = run_cli_in_process(
        _args(suite, run, "benchmark.samples=1", "run.resume=true"), cli_env, tmp_path, capfd
    )
    assert again.returncode == 0, again.stderr
    assert json.loads((run / "metrics_strict.json").read_text()) == json.loads(before)
    other = run_cli_in_process(
        _args(suite, run, "benchmark.samples=2", "run.resume=true"), cli_env, tmp_path, capfd
    )
    assert other.returncode == 2 and "benchmark.samples" in other.stderr, other.stderr


@pytest.mark.parametrize(
    ("override", "key"),
    [("+benchmark.foo=1", "benchmark.foo"), ("+benchmark.size=full", "benchmark.size")],
)
def test_a_benchmark_key_the_benchmark_does_not_read_is_refused_before_any_folder(
    suite: Path,
    cli_env: dict[str, str],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    override: str,
    key: str,
) -> None:
    run = tmp_path / "run"
    done = run_cli_in_process(_args(suite, run, override), cli_env, tmp_path, capfd)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert key in lines[0] and "valid: datasets, name, root, samples, shard" in lines[0], lines[0]
    assert not run.exists()


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_a_sample_limit_that_is_not_a_positive_number_is_refused(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str], value: str
) -> None:
    done = run_cli_in_process(
        _args(suite, tmp_path / "run", f"benchmark.samples={value}"), cli_env, tmp_path, capfd
    )
    assert done.returncode == 2 and "benchmark.samples" in done.stderr, done.stderr


def test_the_validator_of_a_sample_limited_task_checks_only_its_samples(suite: Path, tmp_path: Path) -> None:
    from agents.base import Task
    from strategies.base import ProfileValidator

    dataset = discover(suite)[0]
    task = Task.from_dataset(dataset.first(2), tmp_path / "c0")
    out = tmp_path / "c0" / "agent1_data_organization"
    (out / "standardized_annotations").mkdir(parents=True)
    report = ProfileValidator(store_reports=False).validate(out, task)
    # The samples past the limit are not the candidate's to write: a reviser told they are missing would write
    # them, and data_meta's counts would be checked against the whole manifest.
    assert sorted(report.samples) == [e.index for e in dataset.entries()[:2]]

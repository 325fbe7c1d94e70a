"""tracking=mlflow: real ``python -m experiments`` runs logged with the real MLflow client to a local store.

One 2 × 2 sweep (strategy s0, s3 × seed 0, 1; one small dataset, the noisy-oracle test agent) into the default
store (``sqlite:///<cwd>/mlflow.db``) is shared by the tests of this module; the failure tests run their own
single runs. tests/experiments/test_tracking_store.py covers the stores themselves.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_process import run_cli, subprocess_env
from run_overrides import FAKE_AGENT

from benchmark.score.constants import METRIC_NAMES

pytestmark = pytest.mark.heavy

DATASET = "synth-fundus-npy"
PROFILES = ("official", "strict")


def _run_args(suite: Path) -> list[str]:
    return [
        "benchmark=dir",
        f"benchmark.root={suite}",
        f"benchmark.datasets=[{DATASET}]",
        FAKE_AGENT,
        "run.progress=false",
    ]


@pytest.fixture(scope="module")
def sweep(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    """(sweep folder, store URI, env) of ``-m strategy=s0,s3 run.seed=0,1 tracking=mlflow``, started in a
    fresh folder (the default store is ``mlflow.db`` there)."""
    base = tmp_path_factory.mktemp("tracked")
    uri = f"sqlite:///{(base / 'mlflow.db').resolve()}"
    env = subprocess_env(base / "cache")
    args = [
        "-m",
        "strategy=s0,s3",
        "run.seed=0,1",
        *_run_args(suite),
        "tracking=mlflow",
        f"hydra.sweep.dir={base / 'sweep'}",
    ]
    done = run_cli(args, env, base)
    assert done.returncode == 0, done.stderr
    assert "tracking: warning" not in done.stderr
    return base / "sweep", uri, env


@pytest.fixture
def store(sweep: tuple[Path, str, dict[str, str]]) -> Iterator[str]:
    """The sweep's store as this process's MLflow tracking URI."""
    import mlflow

    mlflow.set_tracking_uri(sweep[1])
    yield sweep[1]
    mlflow.set_tracking_uri(None)


def _runs(uri: str):  # type: ignore[no-untyped-def]
    import mlflow

    return mlflow.search_runs(experiment_names=["medstrat"], output_format="pandas")


def test_a_sweep_is_one_parent_run_with_a_child_run_per_job(sweep, store: str) -> None:
    runs = _runs(store)
    assert len(runs) == 5
    parents = runs[runs["tags.kind"] == "sweep"]
    children = runs[runs["tags.kind"] == "run"]
    assert len(parents) == 1 and len(children) == 4
    parent_id = parents["run_id"].iloc[0]
    assert set(children["tags.mlflow.parentRunId"]) == {parent_id}
    assert set(zip(children["params.strategy.name"], children["params.run.seed"], strict=True)) == {
        ("s0", "0"),
        ("s0", "1"),
        ("s3", "0"),
        ("s3", "1"),
    }
    assert set(runs["status"]) == {"FINISHED"}
    assert parents["params.sweep.strategy"].iloc[0] == "s0,s3"


def test_each_child_run_holds_the_eleven_metrics_of_both_profiles_and_the_cost_of_its_folder(
    sweep, store: str
) -> None:
    sweep_dir = sweep[0]
    children = _runs(store).set_index("tags.run_dir")
    for job in sorted(p for p in sweep_dir.iterdir() if (p / "metrics.json").is_file()):
        row = children.loc[str(job.resolve())]
        for profile, name in (("official", "metrics.json"), ("strict", "metrics_strict.json")):
            doc = json.loads((job / name).read_text(encoding="utf-8"))
            for metric in METRIC_NAMES:
                assert row[f"metrics.{profile}/{metric}"] == pytest.approx(doc["macro"][metric])
                per_dataset = doc["datasets"][DATASET][metric]
                assert row[f"metrics.{profile}/{DATASET}/{metric}"] == pytest.approx(per_dataset)
        usage = json.loads((job / "usage.json").read_text(encoding="utf-8"))["total"]
        assert row["metrics.tokens"] == usage["total_tokens"] > 0
        assert row["metrics.calls"] == usage["calls"]
        assert row["metrics.usd"] == pytest.approx(usage["cost_usd"])
        assert row["metrics.cache_hits"] == usage["cache_hits"]
        assert row["metrics.selector_fallbacks"] == 0 and row["metrics.incomplete"] == 0
        assert row["params.validator.profile"] == "evidence"
        assert row["params.agent._target_"] == FAKE_AGENT.split("=", 1)[1]
        assert row["params.run.budget_usd"] == "null"
        assert row["tags.version.medstrat"] and len(row["tags.mlflow.source.git.commit"]) == 40


def test_runs_carry_their_report_and_metrics_files_and_the_parent_the_ablation(sweep, store: str) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(store)
    runs = _runs(store)
    for _, row in runs.iterrows():
        names = {a.path for a in client.list_artifacts(row["run_id"])}
        if row["tags.kind"] == "sweep":
            assert {"ablation.md", "ablation.csv", "ablation.png", "report.html"} <= names
        else:
            assert {"report.html", "metrics.json", "metrics_strict.json", "usage.json"} <= names
            # the report logged last is the one the sweep's end rewrote (it shows the ablation figure)
            local = Path(row["tags.run_dir"]) / "report.html"
            logged = Path(client.download_artifacts(row["run_id"], "report.html"))
            assert logged.read_bytes() == local.read_bytes()


def test_a_reselection_is_logged_in_the_source_experiment_with_a_source_run_tag(
    sweep, store: str, tmp_path: Path
) -> None:
    from experiments.selection.reselect import reselect

    source = sweep[0] / "2_s3"
    source_id = json.loads((source / "tracking.json").read_text(encoding="utf-8"))["run_id"]
    reselect(source, ["selector=first", "run.report=false"], tmp_path / "first")
    runs = _runs(store)
    mine = runs[runs["tags.kind"] == "reselect"]
    assert len(mine) == 1
    row = mine.iloc[0]
    assert row["tags.source_run"] == source_id
    assert row["params.selector.name"] == "first"
    assert row["params.agent._target_"] == FAKE_AGENT.split("=", 1)[1]  # the maker, not the replay stand-in
    assert row["metrics.official/E2E"] == pytest.approx(
        json.loads((tmp_path / "first" / "metrics.json").read_text(encoding="utf-8"))["macro"]["E2E"]
    )


def test_a_leaderboard_of_tracked_runs_is_logged_with_its_source_run(
    sweep, store: str, tmp_path: Path
) -> None:
    from experiments.selection.leaderboard import main

    source = sweep[0] / "3_s3"
    source_id = json.loads((source / "tracking.json").read_text(encoding="utf-8"))["run_id"]
    out = tmp_path / "board"
    code = main(
        [str(source), "--selectors", "validator_max,first", "--validators", "evidence", "--out", str(out)]
    )
    assert code == 0
    runs = _runs(store)
    row = runs[runs["tags.kind"] == "leaderboard"].iloc[0]
    assert row["tags.source_run"] == source_id
    assert 0.0 <= row["metrics.evidence/validator_max/E2E"] <= 1.0
    assert "metrics.evidence/first/E2E" in runs.columns


def test_a_resumed_run_logs_into_its_mlflow_run_instead_of_a_new_one(
    sweep, store: str, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resumed run runs in this process (`cli()`, as ``python -m experiments`` calls it): what it proves
    is where it logs, not a property of a fresh interpreter (the sweep above is one). Started in the sweep's
    folder with no ``tracking.uri``, it finds the same default store."""
    import logging

    from experiments.__main__ import cli

    sweep_dir, _, env = sweep
    job = sweep_dir / "0_s0"
    before = json.loads((job / "tracking.json").read_text(encoding="utf-8"))["run_id"]
    count = len(_runs(store))
    args = ["strategy=s0", "run.seed=0", *_run_args(suite), "tracking=mlflow"]
    for name in ("MEDSTRAT_CACHE", "HYDRA_FULL_ERROR", "MEDSTRAT_DEBUG"):  # cli() sets the last two
        monkeypatch.setenv(name, env.get(name, ""))
    monkeypatch.chdir(sweep_dir.parent)
    monkeypatch.setattr(
        sys, "argv", ["python -m experiments", *args, "run.resume=true", f"hydra.run.dir={job}"]
    )
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        assert cli() == 0
    finally:  # Hydra configured logging for the job (a file in the run folder): this process keeps its own
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:], root.level = handlers, level
    assert json.loads((job / "tracking.json").read_text(encoding="utf-8"))["run_id"] == before
    assert len(_runs(store)) == count


def test_a_run_that_exits_incomplete_is_logged_with_its_incomplete_counts(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into MLflow's file store (``tracking.uri=file:///…``, the opt-in the callback makes for it)."""
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    args = ["strategy=s3", *_run_args(suite), "run.budget_tokens=250", f"hydra.run.dir={tmp_path / 'run'}"]
    args += ["tracking=mlflow", f"tracking.uri={uri}"]
    done = run_cli(args, subprocess_env(tmp_path / "cache"), tmp_path)
    assert done.returncode == 3, done.stderr  # the budget stopped it: exit 3, and Hydra never ran on_job_end
    assert "tracking: warning" not in done.stderr
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("medstrat")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1
    metrics = runs[0].data.metrics
    assert metrics["incomplete"] == 1 and metrics["budget_hit"] == 1
    usage = json.loads((tmp_path / "run" / "usage.json").read_text(encoding="utf-8"))
    assert metrics["tokens"] == usage["total"]["total_tokens"]
    assert runs[0].data.tags["incomplete"] == "true"


# `python -m experiments` runs one after the other in one fresh interpreter (argv[1]: a JSON list of
# [args, folder]); each one's stderr follows a PROBE_RUN line, and its run folder is moved to `folder`
# afterwards so that the next run writes the same path. Whether MLflow was imported is read after each run.
_PROBE = """
import json, os, sys
from experiments.__main__ import cli
for k, (args, keep) in enumerate(json.loads(sys.argv[1])):
    print(f"PROBE_RUN={k}", file=sys.stderr, flush=True)
    sys.argv = ["python -m experiments", *args]
    try:
        code = cli()
    except SystemExit as exc:
        code = exc.code
    imported = any(m == "mlflow" or m.startswith("mlflow.") for m in sys.modules)
    print(f"PROBE_EXIT={code}", f"MLFLOW_IMPORTED={imported}", file=sys.stderr, flush=True)
    os.rename(sys.argv[-1].split("=", 1)[1], keep)
"""


def _outputs(run_dir: Path) -> dict[str, bytes]:
    """Every file of a run except Hydra's own records, the log and the lock (they hold times, pids and the
    command line); ``run.json`` without its wall time."""
    out: dict[str, bytes] = {}
    for path in sorted(run_dir.rglob("*")):
        rel = path.relative_to(run_dir).as_posix()
        if not path.is_file() or rel.startswith(".hydra/") or rel in ("__main__.log", ".run.lock"):
            continue
        data = path.read_bytes()
        if rel == "run.json":
            info = json.loads(data)
            info.pop("wall_s")
            info["config"].pop("tracking", None)
            data = json.dumps(info, sort_keys=True).encode()
        out[rel] = data
    return out


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _probe(runs: list[tuple[list[str], Path]], env: dict[str, str], cwd: Path) -> list[tuple[int, str]]:
    """Run each (args ending in ``hydra.run.dir=...``, folder) in turn in one fresh interpreter; each run's
    (exit code, stderr) in order."""
    import subprocess

    plan = json.dumps([[args, str(keep)] for args, keep in runs])
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, plan], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    parts = done.stderr.split("PROBE_RUN=")[1:]
    assert len(parts) == len(runs), done.stderr
    codes = [int(part.rsplit("PROBE_EXIT=", 1)[1].split()[0]) for part in parts]
    return [(code, part.split("\n", 1)[1]) for code, part in zip(codes, parts, strict=True)]


def test_a_broken_store_is_one_warning_and_the_run_is_byte_identical_to_a_run_without_tracking(
    suite: Path, tmp_path: Path
) -> None:
    """The plain run first in a fresh interpreter (tracking off never imports MLflow); the runs against a
    broken store follow in the same interpreter (what they prove is their stderr and their folder)."""
    env = subprocess_env(tmp_path / "cache")
    run_dir = tmp_path / "run"  # the same path each time: the outputs name their own folder
    args = ["strategy=s0", *_run_args(suite), f"hydra.run.dir={run_dir}"]
    (tmp_path / "a_file").write_text("in the way of the store\n")
    broken = [
        f"tracking.uri={(tmp_path / 'a_file' / 'mlruns').as_uri()}",
        f"tracking.uri=http://127.0.0.1:{_free_port()}",
        f"tracking.uri=sqlite:///{tmp_path / 'a_file' / 'mlflow.db'}",
    ]
    # hydra.run.dir stays last: the probe reads the run folder from it
    runs = [(args, tmp_path / "plain")]
    runs += [(["tracking=mlflow", uri, *args], tmp_path / f"broken{k}") for k, uri in enumerate(broken)]
    (plain_code, plain), *tracked = _probe(runs, env, tmp_path)
    assert plain_code == 0, plain
    assert "MLFLOW_IMPORTED=False" in plain  # tracking off: MLflow is never imported
    expected = _outputs(tmp_path / "plain")
    for k, (code, stderr) in enumerate(tracked):
        assert code == 0, stderr
        warnings = [line for line in stderr.splitlines() if "tracking" in line.lower()]
        assert len(warnings) == 1 and warnings[0].startswith("tracking: warning: not logged to"), stderr
        assert "Traceback" not in stderr
        assert _outputs(tmp_path / f"broken{k}") == expected
        assert not (tmp_path / f"broken{k}" / "tracking.json").exists()

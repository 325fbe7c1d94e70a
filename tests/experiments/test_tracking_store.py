"""tracking=mlflow's default store, ``sqlite:///<cwd>/mlflow.db``: what a user's own MLflow client finds there
with no setting, parallel jobs and processes logging into one new database, and the file store's opt-in that
does not outlive opening it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_process import subprocess_env


def _without_mlflow_settings() -> dict[str, str]:
    """This process's environment with every ``MLFLOW_*`` variable removed: a user's plain shell."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}


# A user's own MLflow client, in the folder the run started in, on the store the docs name.
_READ_BACK = """
import json, mlflow
client = mlflow.MlflowClient(tracking_uri="sqlite:///mlflow.db")
experiment = client.get_experiment_by_name("medstrat")
runs = client.search_runs([experiment.experiment_id])
frame = mlflow.search_runs(experiment_names=["medstrat"], output_format="pandas")
print(json.dumps({
    "runs": [
        {"name": r.info.run_name, "status": r.info.status, "metrics": r.data.metrics,
         "artifacts": sorted(a.path for a in client.list_artifacts(r.info.run_id))}
        for r in runs
    ],
    "frame_rows": len(frame),
}))
"""


@pytest.mark.heavy
def test_the_default_store_opens_with_a_plain_mlflow_client_and_no_environment_variable(
    tracked_run: tuple[Path, Path],
) -> None:
    base, run_dir = tracked_run
    assert (base / "mlflow.db").is_file() and not (base / "mlruns").exists()
    read = subprocess.run(
        [sys.executable, "-c", _READ_BACK],
        env=_without_mlflow_settings(),
        cwd=base,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert read.returncode == 0, read.stderr
    found = json.loads(read.stdout.strip().splitlines()[-1])
    assert found["frame_rows"] == 1 and len(found["runs"]) == 1
    run = found["runs"][0]
    assert run["name"] == run_dir.name and run["status"] == "FINISHED"
    macro = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))["macro"]
    assert run["metrics"]["official/E2E"] == pytest.approx(macro["E2E"])
    assert {"report.html", "metrics.json"} <= set(run["artifacts"])
    assert (base / "mlartifacts" / "medstrat").is_dir()  # the artifacts beside the database


@pytest.mark.heavy
def test_a_parallel_sweep_logs_every_job_into_one_new_sqlite_store(
    joblib_tracked_sweep: tuple[Path, Path],
) -> None:
    """The joblib launcher runs both jobs at once, each in its own process, on a store no run made yet."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{joblib_tracked_sweep[0] / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("medstrat")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    kinds = sorted(r.data.tags["kind"] for r in runs)
    assert kinds == ["run", "run", "sweep"]
    parent = next(r.info.run_id for r in runs if r.data.tags["kind"] == "sweep")
    children = [r for r in runs if r.data.tags["kind"] == "run"]
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent}
    assert sorted(r.data.params["strategy.name"] for r in children) == ["s0", "s3"]
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert all("official/E2E" in r.data.metrics for r in children)


# Waits for argv[2] to appear (both processes have imported MLflow by then), then opens the store argv[1]
# names, which neither process has created yet: "ours" through `open_store`, logging one run (no guard, so a
# failure exits 1); "plain" through MLflow's own client (a `mlflow ui` or a user's script started then).
_OPEN_AT_ONCE = """
import pathlib, sys, time
import mlflow.tracking
from experiments.tracking.mlflow_store import TrackingSettings, open_store
uri, kind = sys.argv[1], sys.argv[5]
go, ready, folder = (pathlib.Path(p) for p in sys.argv[2:5])
ready.touch()
while not go.exists():
    time.sleep(0.005)
if kind == "plain":
    mlflow.tracking.MlflowClient(tracking_uri=uri).search_experiments()
else:
    store = open_store(TrackingSettings(uri))
    folder.mkdir()
    run = store.open_run(folder, folder.name, {})
    store.log(run, metrics={"m": 1.0})
    store.finish(run)
"""


@pytest.mark.heavy
# Not with MLflow's own client as the other process (`mlflow ui` started at the same moment): that one has
# no retry and, about one time in five here, dies half-way through its migrations and leaves the database in
# a state MLflow itself cannot open (a leftover alembic table, a circular-dependency error). Ours then gives
# up after `_SQLITE_STUCK_S` with one line; docs/experiments.md says to start `mlflow ui` after the first run.
@pytest.mark.parametrize("kinds", [("ours", "ours")], ids=["two_runs"])
def test_two_processes_creating_one_sqlite_store_at_once_both_log_their_run(
    kinds: tuple[str, str], tmp_path: Path
) -> None:
    """MLflow creates the database's tables on first use; two processes doing that at once collide
    ("duplicate column name") unless ours waits for the other: on our lock when both are runs, until the
    tables are there when the other is MLflow's own client."""
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    (tmp_path / "store").mkdir()
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _OPEN_AT_ONCE,
                uri,
                str(go),
                str(tmp_path / f"ready{k}"),
                str(tmp_path / f"r{k}"),
                kind,
            ],
            env=subprocess_env(tmp_path / "cache"),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k, kind in enumerate(kinds)
    ]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready{k}").exists() for k in range(2)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "never got ready"
        time.sleep(0.01)
    go.touch()
    results = [p.communicate(timeout=120) for p in procs]
    ours = [k for k, kind in enumerate(kinds) if kind == "ours"]
    for k in ours:
        assert procs[k].returncode == 0, results[k][1][-2000:]

    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("medstrat")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in runs) == [f"r{k}" for k in ours]
    assert all(r.data.metrics == {"m": 1.0} for r in runs)


def test_the_file_store_is_one_setting_away_and_its_opt_in_ends_once_it_is_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.exceptions import MlflowException

    from experiments.tracking.mlflow_store import open_store, tracking_settings

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    uri = (tmp_path / "mlruns").as_uri()
    settings = tracking_settings({"backend": "mlflow", "uri": uri}, tmp_path)
    assert settings is not None and settings.uri == uri
    store = open_store(settings)
    (tmp_path / "run").mkdir()
    run = store.open_run(tmp_path / "run", "run", {"kind": "run"})
    store.log(run, params={"strategy.name": "s0"}, metrics={"official/E2E": 0.5})
    store.finish(run)
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ
    assert store.client.get_run(run).data.metrics == {"official/E2E": 0.5}
    assert (tmp_path / "mlruns").is_dir()
    # The opt-in was ours, for that store only: MLflow still refuses another file store in this process.
    with pytest.raises(MlflowException, match="MLFLOW_ALLOW_FILE_STORE"):
        from mlflow.tracking import MlflowClient

        MlflowClient(tracking_uri=(tmp_path / "other").as_uri())


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (None, "sqlite:///{cwd}/mlflow.db"),
        ("sqlite:///sub/runs.db", "sqlite:///{cwd}/sub/runs.db"),
        ("sqlite:////abs/runs.db", "sqlite:////abs/runs.db"),
        ("runs.db", "sqlite:///{cwd}/runs.db"),
        ("mlruns", "file://{cwd}/mlruns"),
        ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
    ],
)
def test_a_store_named_relative_to_the_start_folder_is_made_absolute(
    uri: str | None, expected: str, tmp_path: Path
) -> None:
    """Every job of a sweep (and a resume started elsewhere) must name the very same store."""
    from experiments.tracking.mlflow_store import tracking_settings

    settings = tracking_settings({"backend": "mlflow", "uri": uri}, tmp_path)
    assert settings is not None
    assert settings.uri == expected.format(cwd=tmp_path.resolve().as_posix())


def test_a_database_of_a_newer_mlflow_fails_within_seconds_instead_of_being_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait for a store another process is creating does not hold a run on a store that will never
    open (here its schema version is one this MLflow does not know): its unchanged error is given up after
    `_SQLITE_STUCK_S`, not after the whole `_SQLITE_CREATION_WAIT_S`."""
    import shutil
    import sqlite3

    from experiments.tracking import mlflow_store
    from experiments.tracking.mlflow_store import TrackingSettings, open_store

    made = tmp_path / "made" / "mlflow.db"
    open_store(TrackingSettings(f"sqlite:///{made}")).experiment_id()
    # A copy under another name: MLflow keeps one store per URI and process, so this one is opened anew.
    newer = tmp_path / "newer" / "mlflow.db"
    newer.parent.mkdir()
    shutil.copyfile(made, newer)
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE alembic_version SET version_num = 'from_a_newer_mlflow'")
    stuck_s = 1.0  # the shipped 5 s, shortened: what is checked is which of the two limits ends the wait
    monkeypatch.setattr(mlflow_store, "_SQLITE_STUCK_S", stuck_s)
    assert 10 * stuck_s <= mlflow_store._SQLITE_CREATION_WAIT_S
    start = time.monotonic()
    with pytest.raises(Exception, match="from_a_newer_mlflow"):
        open_store(TrackingSettings(f"sqlite:///{newer}")).experiment_id()
    waited = time.monotonic() - start
    assert stuck_s <= waited < stuck_s + 4, waited

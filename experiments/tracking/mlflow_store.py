"""Logging run folders to MLflow: one MLflow run per run folder, its id kept in its ``tracking.json``.

Everything that touches MLflow lives here and is imported only when tracking is on (``tracking=mlflow``),
so a run without tracking never imports it. Every entry point of `experiments.tracking` goes through
`guarded`: a tracker that fails (a store that cannot be written, a server that is down) costs one warning
line on stderr and never an exception, an exit code or a changed file of the run.

The default store is ``sqlite:///<cwd>/mlflow.db``: a database MLflow 3 opens as it is, from any MLflow
client or ``mlflow ui``, with no setting (SQLAlchemy and Alembic come with the ``tracking`` extra). MLflow
creates its tables on a database's first use (Alembic migrations, seconds); two processes doing that at once
collide ("duplicate column name"), so every open of a SQLite store holds an ``flock`` on a lock file beside
the database (``.mlflow.db.lock``) while MLflow checks or creates its tables; a process that does not take
that lock (``mlflow ui`` started at the same moment) is waited for instead. MLflow 3 keeps its file store
(``file:///…/mlruns``) in "maintenance mode" and refuses to open one unless ``MLFLOW_ALLOW_FILE_STORE=true``
(``mlflow/store/tracking/file_store.py``); a user who names a file store has opted in, so `open_store` sets
that variable only while MLflow builds the store (MLflow caches the store per URI, and the check is in its
constructor) and restores it after. A tracking server is asked without retries and with a timeout
(``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` / ``MLFLOW_HTTP_REQUEST_TIMEOUT``): MLflow's default backoff would hold
a finished run for minutes when the server is down.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.atomic import atomic_write_json, read_json_or_none
from core.cli_errors import one_line

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

__all__ = [
    "DEFAULT_DATABASE",
    "TRACKING_FILE",
    "MlflowStore",
    "TrackingSettings",
    "guarded",
    "open_store",
    "stored_link",
    "tracking_settings",
]

DEFAULT_DATABASE = "mlflow.db"
"""The default store's SQLite file, in the folder the command starts in (beside ``outputs/``)."""

TRACKING_FILE = "tracking.json"
"""In a run (or sweep) folder: ``{"tracking_uri", "experiment_id", "run_id"}`` of its MLflow run, so a
resume logs into the same MLflow run and a reselection links to it."""

_BATCH_PARAMS = 100
_BATCH_METRICS = 1000
"""MLflow's per-request limits of ``log_batch`` (``mlflow/utils/validation.py``)."""

_FINISHED, _FAILED = "FINISHED", "FAILED"

_FILE_STORE_OPT_IN = "MLFLOW_ALLOW_FILE_STORE"

_SQLITE_CREATION_WAIT_S = 30.0
_SQLITE_STUCK_S = 5.0
"""How long a SQLite store that another process is creating is waited for (its creation took 2-10 s on a
shared 2-core machine), and how long one unchanged error of it is (a store that fails for a reason other
than MLflow's table creation is one warning at once)."""


@dataclass(frozen=True)
class TrackingSettings:
    """Where and how to log.

    Attributes:
        uri: The MLflow tracking URI (``file:///…/mlruns``, ``sqlite:///…/mlflow.db``, ``http://host:port``).
        experiment: The MLflow experiment's name.
        timeout_s: A tracking server's request timeout.
    """

    uri: str
    experiment: str = "medstrat"
    timeout_s: float = 10.0


def tracking_settings(node: Mapping[str, Any] | None, cwd: Path) -> TrackingSettings | None:
    """The settings of a config's ``tracking`` node, or None when tracking is off.

    Args:
        node: The ``tracking`` node (``conf/tracking/mlflow.yaml``), None or absent when off.
        cwd: Where a relative store lives: ``uri: null`` means ``sqlite:///<cwd>/mlflow.db``, beside
            ``outputs/``; a relative ``sqlite:///name.db`` or plain path is resolved against it too, so
            every job of a sweep names the same absolute store.

    Returns:
        The settings, or None unless ``node.backend`` is ``mlflow``.
    """
    if not isinstance(node, Mapping) or str(node.get("backend") or "none") != "mlflow":
        return None
    uri = str(node.get("uri") or "")
    if not uri:
        uri = _sqlite_uri(cwd / DEFAULT_DATABASE)
    elif uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        uri = _sqlite_uri(cwd / uri.removeprefix("sqlite:///"))
    elif "://" not in uri and not uri.startswith(("file:", "sqlite:")):
        # a plain path: a SQLite database when it is named like one, MLflow's file store otherwise
        path = cwd / uri
        uri = _sqlite_uri(path) if path.suffix in (".db", ".sqlite") else path.resolve().as_uri()
    return TrackingSettings(
        uri, str(node.get("experiment") or "medstrat"), float(node.get("timeout_s") or 10.0)
    )


def _sqlite_uri(path: Path) -> str:
    return f"sqlite:///{path.resolve().as_posix()}"


def _sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (relative ones against the working folder, as MLflow
    reads them), or None for another kind of store or an in-memory database."""
    if not uri.startswith("sqlite:///"):
        return None
    name = uri.removeprefix("sqlite:///").split("?", 1)[0]
    if not name or name == ":memory:":
        return None
    path = Path(name)
    return path if path.is_absolute() else Path.cwd() / path


def _warn(settings: TrackingSettings | None, error: BaseException) -> None:
    # Printed, not logged: at a sweep's start and end Hydra's job logging is not set up, and the one line
    # must reach stderr (stdout holds only the results table).
    where = f" to {settings.uri}" if settings is not None else ""
    print(f"tracking: warning: not logged{where}: {one_line(error)[:300]}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def guarded(settings: TrackingSettings | None) -> Iterator[None]:
    """Turn any failure of the tracker into one warning line on stderr (the run is done and saved).

    Args:
        settings: The store the block logs to (named in the warning).
    """
    try:
        yield
    except Exception as exc:  # the tracker is optional: no failure of it may fail or change the run
        _warn(settings, exc)


def _prepare_environment(uri: str, timeout_s: float) -> None:
    if uri.startswith(("http://", "https://")):
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(max(1, int(timeout_s))))


@contextlib.contextmanager
def _opening(uri: str) -> Iterator[None]:
    """Around building MLflow's store for ``uri``: the file store's opt-in, or the SQLite store's lock."""
    database = _sqlite_path(uri)
    if uri.startswith("file:"):
        before = os.environ.get(_FILE_STORE_OPT_IN)
        os.environ[_FILE_STORE_OPT_IN] = "true"
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(_FILE_STORE_OPT_IN, None)
            else:
                os.environ[_FILE_STORE_OPT_IN] = before
    elif database is not None:
        database.parent.mkdir(parents=True, exist_ok=True)
        lock = database.parent / f".{database.name}.lock"
        with lock.open("a") as handle:
            # Blocking: the second process waits while the first creates the tables (seconds), then
            # finds them and only checks their version (milliseconds).
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    else:
        yield


def _still_being_created(error: Exception) -> bool:
    """An error of MLflow's table creation that another process creating them at the same moment causes."""
    from alembic.util import CommandError
    from mlflow.exceptions import MlflowException
    from sqlalchemy.exc import OperationalError

    if isinstance(error, OperationalError | CommandError):
        return True
    return isinstance(error, MlflowException) and "out-of-date database schema" in str(error)


def _client(uri: str) -> MlflowClient:
    """MLflow's client of ``uri``. A SQLite store whose tables a process that does not take our lock (a
    ``mlflow ui`` started at the same moment, a user's script) is creating is asked again while its error
    keeps changing (the other process's migrations move on), at most `_SQLITE_CREATION_WAIT_S` in all; an
    error that stays the same for `_SQLITE_STUCK_S` (a database of a newer MLflow, a read-only file) is
    raised then."""
    from mlflow.tracking import MlflowClient

    start = time.monotonic()
    last, changed = "", start
    while True:
        try:
            return MlflowClient(tracking_uri=uri)
        except Exception as exc:
            now = time.monotonic()
            if str(exc) != last:
                last, changed = str(exc), now
            if (
                _sqlite_path(uri) is None
                or not _still_being_created(exc)
                or now - start > _SQLITE_CREATION_WAIT_S
                or now - changed > _SQLITE_STUCK_S
            ):
                raise
            time.sleep(0.5)


def stored_link(folder: Path, uri: str | None = None) -> dict[str, str] | None:
    """The folder's ``tracking.json`` (its MLflow run), or None when it was never logged (or, given ``uri``,
    logged to another store)."""
    path = folder / TRACKING_FILE
    data = read_json_or_none(path) if path.is_file() else None
    link = {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None
    return None if link is None or (uri is not None and link.get("tracking_uri") != uri) else link


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class MlflowStore:
    """One tracking store, through MLflow's client API (no global "active run" state).

    Args:
        settings: Where to log.
    """

    def __init__(self, settings: TrackingSettings) -> None:
        _prepare_environment(settings.uri, settings.timeout_s)
        # MLflow logs its housekeeping at INFO on its own handler ("Creating initial MLflow database
        # tables..."): stderr keeps the run's lines and, when tracking fails, our one warning.
        logging.getLogger("mlflow").setLevel(logging.WARNING)

        self.settings = settings
        with _opening(settings.uri):  # MLflow builds (and caches) the store here, for this process
            self.client: MlflowClient = _client(settings.uri)
        self._experiments: dict[str, str] = {}

    def experiment_id(self) -> str:
        """The id of the settings' experiment, created on first use."""
        name = self.settings.experiment
        if name not in self._experiments:
            found = self.client.get_experiment_by_name(name)
            if found is not None:
                self._experiments[name] = found.experiment_id
            else:
                # MLflow 3's UI opens an experiment of unknown kind as a GenAI one (traces); these are
                # runs with params and metrics, its "model training" view.
                self._experiments[name] = self.client.create_experiment(
                    name,
                    artifact_location=self._artifact_location(name),
                    tags={"mlflow.experimentKind": "custom_model_development"},
                )
        return self._experiments[name]

    def _artifact_location(self, name: str) -> str | None:
        """``mlartifacts/<experiment>`` beside the database for ``sqlite:`` (MLflow would use ``./mlruns`` of
        whatever folder the first run started in); the store's own default otherwise."""
        database = _sqlite_path(self.settings.uri)
        if database is None:
            return None
        return (database.parent / "mlartifacts" / name).resolve().as_uri()

    def open_run(
        self,
        folder: Path,
        run_name: str,
        tags: Mapping[str, str],
        *,
        experiment_id: str | None = None,
        parent_run_id: str | None = None,
        started_s_ago: float = 0.0,
    ) -> str:
        """The MLflow run of ``folder``: the one its ``tracking.json`` names (a resume) or a new one.

        Args:
            folder: The run or sweep folder (``tracking.json`` is written into it).
            run_name: The name shown in MLflow's run table.
            tags: Tags of a new run (a reused run gets them again).
            experiment_id: The experiment (default: the settings').
            parent_run_id: The sweep's MLflow run (MLflow nests a run under ``mlflow.parentRunId``).
            started_s_ago: How long ago the run started (a run folder is logged once it is finished, and
                MLflow's table shows start time and duration).

        Returns:
            The MLflow run id.
        """
        all_tags = {**tags, "mlflow.runName": run_name}
        if parent_run_id is not None:
            all_tags["mlflow.parentRunId"] = parent_run_id
        link = stored_link(folder, self.settings.uri)
        if link is not None:
            with contextlib.suppress(Exception):  # deleted from the store since: a new run is made below
                run = self.client.get_run(link["run_id"])
                if run.info.lifecycle_stage == "active":
                    self.client.update_run(run.info.run_id, status="RUNNING")
                    self.log(run.info.run_id, tags=all_tags)
                    return str(run.info.run_id)
        experiment = experiment_id or self.experiment_id()
        start_ms = int((time.time() - started_s_ago) * 1000)
        run = self.client.create_run(experiment, start_time=start_ms, tags=all_tags, run_name=run_name)
        atomic_write_json(
            folder / TRACKING_FILE,
            {"tracking_uri": self.settings.uri, "experiment_id": experiment, "run_id": run.info.run_id},
        )
        return str(run.info.run_id)

    def log(
        self,
        run_id: str,
        *,
        params: Mapping[str, str] | None = None,
        metrics: Mapping[str, float] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        """Log params, metrics and tags in batches; params already on the run are left as they are (MLflow
        refuses to change a param, and a resumed run logs its config again)."""
        from mlflow.entities import Metric, Param, RunTag

        if params:
            known = self.client.get_run(run_id).data.params
            fresh = [Param(k, str(v)[:6000]) for k, v in params.items() if k not in known]
            for chunk in _chunks(fresh, _BATCH_PARAMS):
                self.client.log_batch(run_id, params=list(chunk))
        if tags:
            for chunk in _chunks([RunTag(k, str(v)) for k, v in tags.items()], _BATCH_PARAMS):
                self.client.log_batch(run_id, tags=list(chunk))
        if metrics:
            now = int(time.time() * 1000)
            entries = [Metric(k, float(v), now, 0) for k, v in metrics.items()]
            for chunk in _chunks(entries, _BATCH_METRICS):
                self.client.log_batch(run_id, metrics=list(chunk))

    def log_files(self, run_id: str, paths: Sequence[Path]) -> None:
        """Copy files (and folders, keeping their name) into the run's artifacts; a file logged again
        replaces the old copy."""
        for path in paths:
            if path.is_dir():
                self.client.log_artifacts(run_id, str(path), artifact_path=path.name)
            else:
                self.client.log_artifact(run_id, str(path))

    def finish(self, run_id: str, failed: bool = False) -> None:
        """Mark the run finished (or failed)."""
        self.client.set_terminated(run_id, status=_FAILED if failed else _FINISHED)


def open_store(settings: TrackingSettings) -> MlflowStore:
    """A store for ``settings`` (imports MLflow; raises ImportError without the ``tracking`` extra).

    Raises:
        ImportError: MLflow is not installed (``pip install "medstrat[tracking]"``).
    """
    try:
        return MlflowStore(settings)
    except ImportError as exc:
        raise ImportError(f'{exc}; install the tracker with: pip install "medstrat[tracking]"') from exc

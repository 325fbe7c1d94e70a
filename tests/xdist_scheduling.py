"""The pytest-xdist scheduling of this test suite: tests sharing an expensive fixture run on one worker, and
the tests marked ``heavy`` start first.

A plugin: `tests/conftest.py` loads it; `tests/test_xdist_groups.py` loads it alone, without the suite's
conftests, to check it on a small sample."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

# Session fixtures of a conftest that cost seconds and are used by several modules: under pytest-xdist, the
# tests that use one form one group, run by one worker, so the fixture is built once.
SHARED_GROUPS = ("rules_s3_run", "rules_s3_run_small", "roles_runs", "tracked_run", "joblib_tracked_sweep")


def _xdist_group(item: pytest.Item) -> str | None:
    """The group a test joins so that an expensive fixture it uses is built by one worker only.

    A test marked ``xdist_group(NAME)`` joins NAME; tests using a fixture of `SHARED_GROUPS` join that
    fixture's group; tests using a module- or session-scoped fixture defined in their own module join their
    module's group.
    """
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    module = item.nodeid.split("::", 1)[0]
    for name in info.names_closure:
        if name in SHARED_GROUPS:
            return str(name)
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name, ())
        if defs and defs[-1].scope in ("module", "session") and defs[-1].baseid == module:
            return Path(module).stem  # short in reports; a name shared by two modules only merges groups
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist: group the tests sharing an expensive fixture; start the ``heavy`` ones first.

    Workers take one unit at a time (a test, or a whole group: `_GroupScheduling`). A long test taken last
    keeps one worker busy while the other has nothing left, so the units holding a test marked ``heavy`` go
    first (a stable sort: the rest keep their order; ``--no-loadscope-reorder`` in pyproject.toml). Each
    worker writes the groups it found for the controller's scheduler. A run in one process is left as
    collected.
    """
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """An xdist worker writes the groups of the tests it will be asked to run (their final node ids).

    First among the hook's implementations: xdist's own one sends the controller the worker's collection,
    and the controller reads the groups files as soon as the last collection arrives. Written after that
    message, a file was often not there yet when the whole suite ran (two workers finish collecting within
    milliseconds of each other), and every group was split over both workers again with no error.
    """
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is None:
        return
    groups = {item.nodeid: group for item in session.items if (group := _xdist_group(item)) is not None}
    folder = Path(workerinput[_GROUPS_KEY])
    partial = folder / f".{workerinput['workerid']}.json"
    partial.write_text(json.dumps(groups), encoding="utf-8")
    partial.replace(folder / f"{workerinput['workerid']}.json")  # whole or absent for the controller


# Where the workers leave the groups they found (a folder the controller makes; its path in `workerinput`).
_GROUPS_KEY = "medstrat_xdist_groups"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell each xdist worker where to write its groups (the controller's folder)."""
    node.workerinput[_GROUPS_KEY] = node.config.stash[_GROUPS_DIR]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The scheduler that hands out one test, or one whole group of `_xdist_group`, at a time.

    Why not ``--dist loadgroup`` with ``xdist_group`` marks: pytest-xdist passes a group to the controller by
    appending ``@group`` to the test's node id, which pytest 9 no longer takes (the id is a structured
    `NodeId`; pytest-dev/pytest-xdist#1386), so every group was silently split over the workers and each
    expensive shared fixture built once per worker. The workers write the groups to files instead
    (`pytest_collection_finish`); the controller reads them once every worker has collected.
    """
    from xdist.scheduler import LoadScopeScheduling

    class _GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist ships no types
        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:  # first called once every worker has collected (`schedule`)
                self._groups = _read_groups(Path(config.stash[_GROUPS_DIR]), self.registered_collections)
            return self._groups.get(nodeid, nodeid)

    return _GroupScheduling(config, log)


_GROUPS_DIR = pytest.StashKey[str]()


def _read_groups(folder: Path, workers: Any) -> dict[str, str]:
    """The groups every worker wrote, by node id.

    Raises:
        RuntimeError: a worker that sent its collection left no groups file: scheduling without its groups
            would split them over the workers silently (each shared fixture built once per worker).
    """
    ids = sorted(str(worker.gateway.id) for worker in workers)
    missing = [worker for worker in ids if not (folder / f"{worker}.json").is_file()]
    if missing:
        raise RuntimeError(f"xdist groups: no groups file from {', '.join(missing)} in {folder}")
    groups: dict[str, str] = {}
    for worker in ids:
        groups.update(json.loads((folder / f"{worker}.json").read_text(encoding="utf-8")))
    return groups


def pytest_configure(config: pytest.Config) -> None:
    """The controller makes the folder where the workers leave their groups."""
    if not hasattr(config, "workerinput"):
        config.stash[_GROUPS_DIR] = tempfile.mkdtemp(prefix="medstrat-xdist-groups-")


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controller removes the workers' group files."""
    folder = config.stash.get(_GROUPS_DIR, None)
    if folder is not None and not hasattr(config, "workerinput"):
        import shutil

        shutil.rmtree(folder, ignore_errors=True)

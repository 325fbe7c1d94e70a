"""Shared test fixtures: where the shared MDS-Bench materials live, and fresh temp folders."""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path | None:
    """The ``shared/`` folder beside the checkout (or ``$MEDSTRAT_SHARED``), if present."""
    env = os.environ.get("MEDSTRAT_SHARED")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared")
    for c in candidates:
        if (c / "mdsbench").is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def mdsbench_dir() -> Path:
    """``shared/mdsbench`` (SPEC, constants, conformance vectors); skips the test when it is absent."""
    root = shared_dir()
    if root is None:
        pytest.skip("shared/mdsbench is not beside this checkout (set MEDSTRAT_SHARED to point at shared/)")
    return root / "mdsbench"


@pytest.fixture(scope="session")
def conformance_dir(mdsbench_dir: Path) -> Path:
    """``shared/mdsbench/conformance``; skips when absent."""
    path = mdsbench_dir / "conformance"
    if not path.is_dir():
        pytest.skip(f"conformance vectors not found at {path}")
    return path


@pytest.fixture(autouse=True)
def _no_shared_request_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """``agent.cache=auto`` off: tests must not answer each other's model calls from a user-wide cache
    (a test of the default sets ``MEDSTRAT_REQUEST_CACHE`` itself)."""
    monkeypatch.setenv("MEDSTRAT_REQUEST_CACHE", "off")


# Session fixtures of a conftest that cost seconds and are used by several modules: under pytest-xdist, the
# tests that use one form one group, run by one worker, so the fixture is built once.
SHARED_GROUPS = ("rules_s3_run", "rules_s3_run_small", "roles_runs")


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


def pytest_collection_finish(session: pytest.Session) -> None:
    """An xdist worker writes the groups of the tests it will be asked to run (their final node ids)."""
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
                self._groups = {}
                for written in sorted(Path(config.stash[_GROUPS_DIR]).glob("gw*.json")):
                    self._groups.update(json.loads(written.read_text(encoding="utf-8")))
            return self._groups.get(nodeid, nodeid)

    return _GroupScheduling(config, log)


_GROUPS_DIR = pytest.StashKey[str]()


_PACKAGES = ("core", "medio", "benchmark", "validator", "agents", "strategies", "experiments", "perf")


def pytest_configure(config: pytest.Config) -> None:
    """Every subprocess a test starts must run this interpreter (`interpreter_guard`; every xdist worker).

    Once per run (the controller, before any worker starts), the checkout's modules are compiled to
    bytecode: where the environment sets ``PYTHONDONTWRITEBYTECODE`` (CI images, sandboxes) no interpreter
    writes its ``__pycache__``, so each of the few hundred fresh interpreters the tests start would compile
    the modules it imports again (~0.4 CPU s each). Python still checks each file's bytecode against its
    source, so a stale one is never used.
    """
    from interpreter_guard import install

    install()
    if hasattr(config, "workerinput"):
        # The fork server of this worker (one per process, started by the first pool or `run.processes` run
        # of any test) preloads what the LiteLLM runs' workers need, whichever test starts it: a server
        # started without them makes every later worker import litellm itself (~7 CPU s each).
        from experiments.run.processes import name_worker_preloads

        name_worker_preloads(litellm=True)
    else:
        import compileall
        import tempfile

        config.stash[_GROUPS_DIR] = tempfile.mkdtemp(prefix="medstrat-xdist-groups-")

        root = Path(__file__).resolve().parent.parent
        for package in (*_PACKAGES, "tests"):
            compileall.compile_dir(root / package, quiet=2, workers=0)


def _cpu_seconds() -> float:
    """User + system CPU of this process and of the children it waited for (subprocesses, forks)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """With ``MEDSTRAT_TEST_CPU=FILE``: append each test's CPU and wall seconds (setup, call, teardown).

    One JSON line per test, with the xdist worker that ran it.

    CPU moves far less than wall time with the machine's load (docs/performance.md, "The test suite"):
    ``MEDSTRAT_TEST_CPU=/tmp/cpu.jsonl python -m pytest -q``, then sum or sort the lines.
    """
    target = os.environ.get("MEDSTRAT_TEST_CPU")
    start, began = (_cpu_seconds() if target else 0.0), time.monotonic()
    try:
        return (yield)
    finally:
        if target:
            spent = {"cpu_s": round(_cpu_seconds() - start, 3), "wall_s": round(time.monotonic() - began, 3)}
            line = json.dumps({"test": item.nodeid, **spent, "worker": os.environ.get("PYTEST_XDIST_WORKER")})
            with open(target, "a", encoding="utf-8") as out:  # one short append per line: workers interleave
                out.write(line + "\n")


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controller removes the workers' group files."""
    folder = config.stash.get(_GROUPS_DIR, None)
    if folder is not None and not hasattr(config, "workerinput"):
        import shutil

        shutil.rmtree(folder, ignore_errors=True)

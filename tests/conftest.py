"""Shared test fixtures: where the shared MDS-Bench materials live, and fresh temp folders."""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Iterator
from pathlib import Path

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

    Tests using a fixture of `SHARED_GROUPS` join that fixture's group; tests using a module- or
    session-scoped fixture defined in their own module join their module's group.
    """
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    module = item.nodeid.split("::", 1)[0]
    for name in info.names_closure:
        if name in SHARED_GROUPS:
            return name
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name, ())
        if defs and defs[-1].scope in ("module", "session") and defs[-1].baseid == module:
            return Path(module).stem  # short in reports; a name shared by two modules only merges groups
    return None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist: group the tests sharing an expensive fixture; start the ``heavy`` ones first.

    Workers take one unit at a time (a test, or a whole group; ``--dist loadgroup`` in pyproject.toml). A long
    test taken last keeps one worker busy while the other has nothing left, so the units holding a test marked
    ``heavy`` go first (a stable sort: the rest keep their order). A run in one process is left as collected.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in items:
        group = _xdist_group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


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
    if not hasattr(config, "workerinput"):
        import compileall

        root = Path(__file__).resolve().parent.parent
        for package in (*_PACKAGES, "tests"):
            compileall.compile_dir(root / package, quiet=2, workers=0)


def _cpu_seconds() -> float:
    """User + system CPU of this process and of the children it waited for (subprocesses, forks)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """With ``MEDSTRAT_TEST_CPU=FILE``: append each test's CPU seconds (setup, call, teardown) to FILE.

    CPU moves far less than wall time with the machine's load (docs/performance.md, "The test suite"):
    ``MEDSTRAT_TEST_CPU=/tmp/cpu.jsonl python -m pytest -q``, then sum or sort the lines.
    """
    target = os.environ.get("MEDSTRAT_TEST_CPU")
    start = _cpu_seconds() if target else 0.0
    try:
        return (yield)
    finally:
        if target:
            line = json.dumps({"test": item.nodeid, "cpu_s": round(_cpu_seconds() - start, 3)})
            with open(target, "a", encoding="utf-8") as out:  # one short append per line: workers interleave
                out.write(line + "\n")

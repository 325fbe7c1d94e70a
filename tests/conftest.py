"""Shared test fixtures: where the shared MDS-Bench materials live, and fresh temp folders."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# The suite's xdist scheduling (shared expensive fixtures built once, heavy tests first).
pytest_plugins = ("xdist_scheduling",)


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


# Every package of the checkout that a fresh interpreter may import (compiled once per run, below).
_PACKAGES = (
    "core",
    "medio",
    "benchmark",
    "validator",
    "agents",
    "testbed",
    "strategies",
    "experiments",
    "perf",
)


def pytest_configure(config: pytest.Config) -> None:
    """Every subprocess a test starts must run this interpreter (`interpreter_guard`; every xdist worker).

    Once per run (the controller, before any worker starts), the checkout's modules are compiled to
    bytecode: where the environment sets ``PYTHONDONTWRITEBYTECODE`` (CI images, sandboxes) no interpreter
    writes its ``__pycache__``, so each of the few hundred fresh interpreters the tests start would compile
    the modules it imports again (~0.4 CPU s each). Python still checks each file's bytecode against its
    source, so a stale one is never used.

    The process that runs the tests collects garbage with the thresholds of the reselect CLI: its heap is
    nearly all long-lived (the libraries every test imports, the session fixtures), and with Python's
    defaults each of its ~30 full collections walked all of it again (~0.3 CPU s each; 18 CPU s in the two
    workers of a run, 4.4 s with these thresholds: docs/performance.md).
    """
    import gc

    from interpreter_guard import install

    from experiments.selection.reselect import GC_THRESHOLDS

    install()
    gc.set_threshold(*GC_THRESHOLDS)
    # pytest keeps its assertion-rewritten test modules in __pycache__ only where bytecode may be written:
    # under PYTHONDONTWRITEBYTECODE each worker rewrote all ~270 test modules on every run (~2.5 CPU s, most
    # of its collection). Written here as the checkout's modules are below; it stays checked against the
    # source, so a stale one is never used.
    sys.dont_write_bytecode = False
    if hasattr(config, "workerinput"):
        # The fork server of this worker (one per process, started by the first pool or `run.processes` run
        # of any test) preloads what the LiteLLM runs' workers need, whichever test starts it: a server
        # started without them makes every later worker import litellm itself (~7 CPU s each).
        from experiments.run.processes import name_worker_preloads

        name_worker_preloads(litellm=True)
    else:
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
    """With ``MEDSTRAT_TEST_CPU=FILE``: append each test's CPU and wall seconds (setup, call, teardown).

    One JSON line per test, with the xdist worker that ran it and when it started (``start``, epoch
    seconds: lined up with a machine-wide CPU log, it shows which tests leave a core idle).

    CPU moves far less than wall time with the machine's load (docs/performance.md, "The test suite"):
    ``MEDSTRAT_TEST_CPU=/tmp/cpu.jsonl python -m pytest -q``, then sum or sort the lines.
    """
    target = os.environ.get("MEDSTRAT_TEST_CPU")
    start, began, started = (_cpu_seconds() if target else 0.0), time.monotonic(), time.time()
    try:
        return (yield)
    finally:
        if target:
            spent = {
                "cpu_s": round(_cpu_seconds() - start, 3),
                "wall_s": round(time.monotonic() - began, 3),
                "start": round(started, 3),
            }
            line = json.dumps({"test": item.nodeid, **spent, "worker": os.environ.get("PYTEST_XDIST_WORKER")})
            with open(target, "a", encoding="utf-8") as out:  # one short append per line: workers interleave
                out.write(line + "\n")

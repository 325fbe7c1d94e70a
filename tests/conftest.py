"""Shared test fixtures: where the shared MDS-Bench materials live, and fresh temp folders."""

from __future__ import annotations

import os
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, start the tests marked ``heavy`` first (a stable sort: the rest keep their order).

    The workers take tests one unit at a time; a long test taken last keeps one worker busy while the other
    has nothing left, so the long ones go first and the short ones fill in around them. A run in one process
    keeps the collection order.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)

"""Sample tests for `tests/test_xdist_groups.py` (not collected by the default run: the name lacks ``test_``).

The tests using ``built_once`` (module-scoped) must all run on one xdist worker; the others are interleaved
with them so that a scheduler that ignores the group hands them to both workers.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def built_once() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "none")


@pytest.mark.parametrize("i", range(8))
def test_shares_the_fixture(built_once: str, i: int) -> None:
    assert built_once == os.environ.get("PYTEST_XDIST_WORKER", "none")


@pytest.mark.parametrize("i", range(8))
def test_stands_alone(i: int) -> None:
    assert i >= 0

"""The project's import graph, read once per session for the layout tests of both modules."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from imports import Edge, edges


@pytest.fixture(scope="session")
def project_edges() -> tuple[Edge, ...]:
    """Every import of a project module by a project module (`imports.edges`), parsed once: ~1.4 CPU s.

    A tuple of frozen edges, so no test can change what the next one reads.
    """
    return tuple(edges())

"""Test modules have unique basenames: the test folders are not packages, so two `test_x.py` in different
folders make pytest refuse to collect the second one and the whole run stops before a single test."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_test_module_basename_is_unique() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []

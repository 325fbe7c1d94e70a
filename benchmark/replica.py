"""Moved: ``python -m benchmark.replica`` is ``python -m testbed.replica`` (test material lives apart)."""

from core.command_names import moved

moved(__name__, "benchmark.replica", "testbed.replica")

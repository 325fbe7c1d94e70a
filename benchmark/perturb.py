"""Moved: ``python -m benchmark.perturb`` is ``python -m testbed.perturb`` (test material lives apart)."""

from core.command_names import moved

moved(__name__, "benchmark.perturb", "testbed.perturb")

"""Moved: ``python -m benchmark.synth`` is ``python -m testbed.synth`` (test material lives apart)."""

from core.command_names import moved

moved(__name__, "benchmark.synth", "testbed.synth")

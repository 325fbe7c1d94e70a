"""Moved: ``python -m agents.fakeserver`` is ``python -m testbed.fakeserver`` (test material lives apart)."""

from core.command_names import moved

moved(__name__, "agents.fakeserver", "testbed.fakeserver")

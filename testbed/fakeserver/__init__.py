"""An offline, scripted OpenAI-compatible server: the test double of every LiteLLM-backed agent.

Run ``medstrat fakeserver --script FILE`` for a demo server, or use `FakeServer` in tests.
"""

from testbed.fakeserver.dispatch import ByDataset, OneDataset, dataset_of, unscripted
from testbed.fakeserver.script import (
    Delay,
    Fault,
    Garbage,
    Reply,
    Script,
    Step,
    TurnScript,
    assistant_turn,
    script_from_json,
    tool_call,
    with_faults,
)
from testbed.fakeserver.server import FakeServer, RecordedRequest

__all__ = [
    "ByDataset",
    "Delay",
    "FakeServer",
    "Fault",
    "Garbage",
    "OneDataset",
    "RecordedRequest",
    "Reply",
    "Script",
    "Step",
    "TurnScript",
    "assistant_turn",
    "dataset_of",
    "script_from_json",
    "tool_call",
    "unscripted",
    "with_faults",
]

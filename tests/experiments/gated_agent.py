"""A test agent for a run held mid-flight in another process (``agent._target_=gated_agent.GatedAgent``, with
``tests/experiments`` on the subprocess's PYTHONPATH): its calls wait at a gate that the test opens."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from strategy_fakes import NoisyOracleAgent

from agents.base import Candidate, Task

ARRIVED = "arrived"
OPEN = "open"


class GatedAgent(NoisyOracleAgent):
    """A noisy oracle whose every call first touches ``gate/arrived``, then waits until ``gate/open`` exists
    (at most ``wait_s``: a test that died never leaves the run waiting for ever).

    Args:
        gate: The folder of the two files.
        wait_s: The longest wait of one call.
    """

    def __init__(self, gate: str, wait_s: float = 300.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate, self.wait_s = Path(gate), wait_s

    async def generate(self, task: Task) -> Candidate:
        (self.gate / ARRIVED).touch()
        deadline = time.monotonic() + self.wait_s
        while not (self.gate / OPEN).exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return await super().generate(task)

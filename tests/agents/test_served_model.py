"""The client asks the server what it serves and stops the run when that changes mid-run (issue 52)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_scripts import make_agent, make_task, standard_script

from agents.base import FatalAgentError
from testbed.fakeserver import FakeServer
from testbed.fakeserver.script import Step


def test_a_server_that_swaps_its_model_mid_run_stops_the_run_in_one_line(
    seg_dataset: Path, tmp_path: Path, fake_server: Callable[..., FakeServer]
) -> None:
    script = standard_script()
    servers: list[FakeServer] = []

    def swapping(request: dict[str, Any], serial: int) -> Step:
        if serial == 2:  # the weights behind the port change between the second and the third call
            servers[0].served_model = "model-b.gguf"
        return script(request, serial)

    servers.append(fake_server(swapping))
    servers[0].served_model = "model-a.gguf"
    agent = make_agent(servers[0])
    with pytest.raises(FatalAgentError) as stopped:
        asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))
    message = str(stopped.value)
    assert "\n" not in message
    assert "changed model mid-run" in message and "'model-a.gguf'" in message and "'model-b.gguf'" in message
    assert agent.client.served == "ids=model-a.gguf"


def test_a_hosted_model_asks_no_server_what_it_serves() -> None:
    from agents.model.client import ModelClient
    from agents.model.config import ModelConfig

    client = ModelClient(ModelConfig("openai/gpt-4o-mini", api_key="sk-fake-test-key-0123456789"))
    assert asyncio.run(client.served_identity()) is None

"""The model-call path's cheap settings keep cost semantics: our price for models LiteLLM cannot price,
LiteLLM's price (and no custom pricing) for models it knows; bulk writes without fsync are still atomic."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_scripts import FAKE_KEY, PRICE

from agents.model.client import ModelClient
from agents.model.config import ModelConfig
from core.atomic import atomic_write_json
from testbed.fakeserver import FakeServer, Reply, TurnScript


@pytest.mark.heavy
def test_an_unknown_model_is_priced_from_our_table_through_custom_pricing(
    fake_server: Callable[..., FakeServer],
) -> None:
    server = fake_server(TurnScript([], after_end=Reply(content="ok", usage=(1000, 200))))
    client = ModelClient(ModelConfig("openai/fake-model", api_base=server.url, api_key=FAKE_KEY, price=PRICE))
    assert client.pricing_params == {"input_cost_per_token": 1e-3, "output_cost_per_token": 2e-3}
    reply = asyncio.run(client.complete([{"role": "user", "content": "hi"}], [], {}, 0))
    assert reply.cost_usd == PRICE.cost(1000, 200)
    # The pricing arguments configure LiteLLM's cost calculator; they never reach the provider.
    sent = server.chat_requests[0]
    assert "input_cost_per_token" not in sent and "output_cost_per_token" not in sent


def test_a_model_litellm_prices_keeps_litellms_cost(fake_server: Callable[..., FakeServer]) -> None:
    server = fake_server(TurnScript([], after_end=Reply(content="ok", usage=(1000, 200))))
    config = ModelConfig("openai/gpt-4o-mini", api_base=server.url, api_key=FAKE_KEY, price=PRICE)
    client = ModelClient(config)
    assert client.pricing_params == {}
    reply = asyncio.run(client.complete([{"role": "user", "content": "hi"}], [], {}, 0))
    assert 0 < reply.cost_usd < PRICE.cost(1000, 200)  # gpt-4o-mini costs cents per million tokens


@pytest.mark.parametrize("durable", [True, False])
def test_atomic_write_replaces_the_file_whole_with_or_without_fsync(tmp_path: Path, durable: bool) -> None:
    target = tmp_path / "sub" / "a.json"
    atomic_write_json(target, {"v": 1}, durable=durable)
    atomic_write_json(target, {"v": 2}, durable=durable)
    assert json.loads(target.read_text(encoding="utf-8")) == {"v": 2}
    assert [p.name for p in target.parent.iterdir()] == ["a.json"]  # no temporary file left behind


def test_the_client_keeps_litellms_fast_defaults(fake_server: Callable[..., FakeServer]) -> None:
    """Settings measured slower per call (docs/performance.md) stay off."""
    server = fake_server(TurnScript([], after_end=Reply(content="ok", usage=(10, 2))))
    client = ModelClient(ModelConfig("openai/fake-model", api_base=server.url, api_key=FAKE_KEY, price=PRICE))
    asyncio.run(client.complete([{"role": "user", "content": "hi"}], [], {}, 0))
    litellm = client._litellm
    assert litellm.disable_aiohttp_transport is False  # httpx instead of aiohttp: +CPU per call in flight
    assert litellm.turn_off_message_logging is False  # redacting every logged message costs CPU per call

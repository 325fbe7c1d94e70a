"""Which provider failures stop the run, which fail one candidate, and which are retried (fake server, real
LiteLLM path); a missing key is found before litellm is even imported."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agent_scripts import make_agent, make_task

from agents.base import FatalAgentError
from agents.llm.agent import LiteLLMAgent
from agents.model.config import ModelConfig
from agents.model.credentials import MissingApiKeyError, missing_key_message
from agents.model.retry import RetryPolicy
from testbed.fakeserver import Fault, TurnScript

ROOT = Path(__file__).resolve().parents[2]
QUICK = RetryPolicy(max_attempts=3, initial_s=0.001, max_wait_s=0.002, jitter_s=0.001)


@pytest.mark.parametrize(
    ("status", "message", "says"),
    [
        (401, "Incorrect API key provided", "rejected the credentials"),
        (403, "Your key has no access to this model", "rejected the credentials"),
        (404, "The model `gpt-9` does not exist", "does not know the model"),
    ],
)
def test_rejected_keys_and_unknown_models_stop_the_run_after_one_request(
    seg_dataset: Path, tmp_path: Path, fake_server, status: int, message: str, says: str
) -> None:
    server = fake_server(TurnScript([Fault(status, message)]))
    task = make_task(seg_dataset, tmp_path / "c0")
    with pytest.raises(FatalAgentError) as caught:
        asyncio.run(make_agent(server, retry=QUICK).generate(task))
    assert says in caught.value.reason and message in caught.value.reason
    assert len(server.chat_requests) == 1  # never retried
    events = [
        json.loads(line) for line in (tmp_path / "c0" / "trace_generate.jsonl").read_text().splitlines()
    ]
    assert events[-1]["event"] == "end" and events[-1]["status"] == "failed"
    assert any(e["event"] == "provider_error" and e.get("fatal") for e in events)


def test_a_context_window_error_that_trimming_cannot_cure_fails_only_its_candidate(
    seg_dataset: Path, tmp_path: Path, fake_server
) -> None:
    # Issue 21: the window is shrunk and the request retried (3 times); then (issue 42) the guided mode's
    # plan, smaller each time (4 requests), and the candidate fails, not the run.
    server = fake_server(TurnScript([Fault(400, "This model's maximum context length is 8192 tokens")]))
    agent = make_agent(server, retry=QUICK)
    candidate = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))
    assert candidate.status == "failed" and "ContextWindowExceededError" in candidate.reason
    assert candidate.reason.startswith("guided mode (tools mode, dataset: the first request did not fit")
    assert len(server.chat_requests) == 8
    sizes = [len(r["messages"][-1]["content"]) for r in server.chat_requests[4:]]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] < sizes[0] / 4
    assert agent.client.context_window == 8192  # as the server named it


def test_a_rate_limit_is_retried_and_never_stops_the_run(
    seg_dataset: Path, tmp_path: Path, fake_server
) -> None:
    server = fake_server(TurnScript([Fault(429, "slow down")]))
    candidate = asyncio.run(make_agent(server, retry=QUICK).generate(make_task(seg_dataset, tmp_path / "c0")))
    assert candidate.status == "failed" and "RateLimitError" in candidate.reason
    assert len(server.chat_requests) == 3  # the whole retry budget


def test_a_missing_key_is_named_before_litellm_is_imported(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from agents.llm.agent import LiteLLMAgent\n"
        "from agents.model.config import ModelConfig\n"
        "from agents.model.credentials import MissingApiKeyError\n"
        "try:\n"
        "    LiteLLMAgent(ModelConfig('gemini/gemini-2.5-flash'))\n"
        "except MissingApiKeyError as exc:\n"
        "    print(exc)\n"
        "print('litellm' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "no API key for gemini/gemini-2.5-flash: set GEMINI_API_KEY or GOOGLE_API_KEY in the environment",
        "False",
    ]


def test_which_keys_count() -> None:
    assert missing_key_message("openai/gpt-4o-mini", env={}) is not None
    assert missing_key_message("openai/gpt-4o-mini", env={"OPENAI_API_KEY": "sk"}) is None
    assert missing_key_message("gemini/gemini-2.5-flash", env={"GOOGLE_API_KEY": "k"}) is None
    assert missing_key_message("claude-3-5-sonnet-20240620", env={}) == (
        "no API key for claude-3-5-sonnet-20240620: set ANTHROPIC_API_KEY in the environment"
    )
    assert missing_key_message("openai/x", api_key="sk-explicit", env={}) is None
    # Local servers and cloud-profile providers are not judged from one variable.
    assert missing_key_message("hosted_vllm/my-model", env={}) is None
    assert missing_key_message("bedrock/anthropic.claude-3", env={}) is None


def test_an_unroutable_model_string_is_a_config_error(fake_server) -> None:
    with pytest.raises(ValueError, match="unknown model 'no-such-provider/x'") as caught:
        LiteLLMAgent(ModelConfig("no-such-provider/x", api_key="sk-x"))
    assert not isinstance(caught.value, MissingApiKeyError)

"""The protocol types, the import discipline, secret hygiene, and the fake server's command line."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agent_scripts import FAKE_KEY, make_agent, make_task, standard_script

from agents.base import Agent, Candidate, ManifestEntry, Task, Usage

REPO = Path(__file__).resolve().parents[2]


def test_usage_adds_field_by_field():
    a = Usage(
        prompt_tokens=10, completion_tokens=2, cost_usd=0.5, wall_s=1.0, calls=1, retries=2, cache_hits=0
    )
    b = Usage(
        prompt_tokens=5, completion_tokens=1, cost_usd=0.25, wall_s=2.0, calls=2, retries=0, cache_hits=2
    )
    total = a + b
    assert total == Usage(15, 3, 0.75, 3.0, 3, 2, 2) and total.total_tokens == 18
    assert sum([a, b], Usage()) == total
    assert total.to_dict()["total_tokens"] == 18


def test_task_for_candidate_and_from_dataset(tmp_path: Path):
    class FakeDataset:
        root, name = tmp_path, "ds"

        def entries(self):
            return [ManifestEntry(0, "data/a.png"), ManifestEntry(3, "data/b c.png")]

    task = Task.from_dataset(FakeDataset(), tmp_path / "out", seed=7)
    assert task.indices == (0, 3) and task.output_dir == tmp_path / "out" / "agent1_data_organization"
    other = task.for_candidate(2, tmp_path / "c2")
    assert (other.candidate_index, other.seed, other.out_dir) == (2, 9, tmp_path / "c2")
    assert task.candidate_index == 0  # the original is unchanged (frozen)


def test_litellm_agent_satisfies_the_protocol(fake_server):
    agent = make_agent(fake_server(standard_script()))
    assert isinstance(agent, Agent) and agent.name == "litellm"
    assert FAKE_KEY not in repr(agent) and FAKE_KEY not in repr(agent.client)


def test_importing_agents_and_its_subpackages_does_not_import_litellm():
    code = (
        "import sys, agents, agents.base, agents.trace, agents.llm, agents.model, agents.tools\n"
        "import testbed.fakeserver\n"
        "print('litellm' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_api_keys_never_reach_traces_caches_or_outputs(
    seg_dataset: Path, tmp_path: Path, fake_server, monkeypatch
):
    env_secret = "sk-env-secret-abcdefghij0123"
    monkeypatch.setenv("OPENAI_API_KEY", env_secret)
    monkeypatch.setenv("MEDSTRAT_TEST_API_KEY", env_secret + "X")
    server = fake_server(standard_script())
    cache = tmp_path / "cache" / "requests.sqlite"
    candidate = asyncio.run(make_agent(server, cache=cache).generate(make_task(seg_dataset, tmp_path / "c0")))
    report = tmp_path / "candidate.json"
    report.write_text(json.dumps(candidate.to_dict()), encoding="utf-8")

    assert candidate.status == "ok"
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert cache in written and candidate.trace_path in written
    for path in written:
        data = path.read_bytes()
        for secret in (FAKE_KEY, env_secret):
            assert secret.encode() not in data, path
    assert all("authorization" not in r.headers for r in server.requests)


def test_candidate_to_dict_is_json_able(tmp_path: Path):
    c = Candidate(output_dir=tmp_path, status="failed", reason="x", agent="litellm")
    assert json.loads(json.dumps(c.to_dict()))["status"] == "failed"


def test_fakeserver_command_line_prints_its_url_and_serves_the_script(tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "hello", "tool_calls": [{"name": "finish", "arguments": {}}]}]))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "testbed.fakeserver", "--script", str(script)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        import urllib.request

        body = json.dumps({"model": "x", "messages": [{"role": "user", "content": "hi"}]}).encode()
        request = urllib.request.Request(
            url + "/chat/completions", body, {"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            reply = json.load(response)
        message = reply["choices"][0]["message"]
        assert message["content"] == "hello" and message["tool_calls"][0]["function"]["name"] == "finish"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)  # generous: a loaded machine (CI on 2 cores) delays the shutdown
        except subprocess.TimeoutExpired:
            proc.kill()
            raise


def test_litellms_event_loop_change_warning_is_dropped_and_its_other_warnings_are_kept(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # Its logging worker is re-homed when a second run in one process starts a new event loop; that warning
    # was a second stderr line beside a run's one-line error (tests/experiments/test_server_died.py).
    from agents.model.client import import_litellm

    import_litellm()
    import_litellm()  # a second import adds no second filter
    logger = logging.getLogger("LiteLLM")
    capfd.readouterr()

    logger.warning(
        "LoggingWorker: event loop changed; carried %d pending and revived %d dequeued logging task(s) "
        "onto the new loop",
        0,
        1,
    )
    logger.warning("LiteLLM: some other warning %d", 7)

    err = capfd.readouterr().err
    assert "event loop changed" not in err
    assert "some other warning 7" in err
    assert sum(type(f).__name__ == "_LoopChangeFilter" for f in logger.filters) == 1

"""A local server that answered and then died mid-run (a native kernel's fault, an OOM kill) is named as such
in the run's one line: the endpoint, how many calls it answered, that its process exited and where its log is;
never only "did not answer" nor a table of failed candidates."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process

ANSWERS = 3


def _start(dataset: Path, log: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """The replay server, its stdout and stderr redirected to ``log`` (as ``> server.log 2>&1 &``)."""
    args = [sys.executable, "-m", "testbed.fakeserver", "--replay", str(dataset), "--die-after", str(ANSWERS)]
    with log.open("w") as out:
        server = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = log.read_text()
        urls = [line for line in text.splitlines(keepends=True) if line.startswith("http://127.0.0.1:")]
        if urls and urls[0].endswith("\n"):
            return server, urls[0].strip()
        assert server.poll() is None, text
        time.sleep(0.1)
    server.kill()
    pytest.fail("the fake server did not print its URL")


def test_a_server_that_answered_then_died_is_named_with_its_calls_and_its_log(
    suite: Path,
    cli_env: dict[str, str],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    name = sorted(p.name for p in suite.iterdir() if (p / "VLM" / "random.txt").is_file())[0]
    log = tmp_path / "server.log"
    server, url = _start(suite / name, log, cli_env)
    try:
        done = run_cli_in_process(
            [
                "strategy=s0",
                "benchmark=dir",
                f"benchmark.root={suite}",
                f"benchmark.datasets=[{name}]",
                "agent=litellm",
                "agent.model=openai/fake-model",
                "agent.vision=false",
                f"agent.api_base={url}",
                "agent.retry.max_attempts=3",
                "agent.retry.initial_s=0.05",
                "agent.retry.max_wait_s=0.1",
                "run.progress=false",
                "run.report=false",
                "run.processes=1",
                # One call at a time (one candidate, one conversation): the server dies between two calls,
                # after exactly ANSWERS answers.
                "run.concurrency=1",
                "agent.concurrency=1",
                f"hydra.run.dir={tmp_path / 'run'}",
            ],
            {**cli_env, "OPENAI_API_KEY": "sk-fake"},
            tmp_path,
            capfd,
        )
    finally:
        server.kill()
        server.wait(timeout=30)
    assert done.returncode == 4, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    (line,) = lines
    assert (
        f"the server at {url} answered {ANSWERS} calls of openai/fake-model, then stopped answering" in line
    )
    assert "3 attempts failed" in line and f"its process {server.pid} has exited" in line, line
    assert f"its log: {log}" in line, line

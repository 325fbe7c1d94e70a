"""The fake server's replay (issue 23 item 4): a run over a root holding more than the replayed dataset stops
with one line naming the dataset it has no script for (never a garbage score), and the server's scratch
folder is removed however it is stopped (SIGTERM, also with SIGINT ignored; SIGINT)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process
from cli_process import start_as_background_job, start_as_terminal_command

from testbed.fakeserver import FakeServer, OneDataset, Reply, TurnScript, unscripted
from testbed.fakeserver.dispatch import ByDataset


def _request(dataset: str) -> dict[str, object]:
    return {
        "messages": [
            {"role": "system", "content": "x"},
            {"role": "user", "content": f"Dataset name: {dataset}"},
        ]
    }


def test_a_request_about_another_dataset_is_refused_with_a_404_naming_it() -> None:
    script = OneDataset("a", TurnScript([Reply(content="ok")]))
    refused = script(_request("b"), 0)
    assert refused == unscripted("b", ["a"]) and refused.status == 404
    assert "no script for dataset 'b' (it serves: a)" in refused.message
    answered = script(_request("a"), 1)
    assert isinstance(answered, Reply) and answered.content == "ok"
    by = ByDataset({"a": TurnScript([Reply(content="ok")])})
    assert by(_request("c"), 0) == unscripted("c", ["a"])


def _serve(
    dataset: Path, env: dict[str, str], *, background: bool = False
) -> tuple[subprocess.Popen[str], str]:
    """The replay server; ``background``: started as ``... &`` in a script starts it (SIGINT ignored)."""
    args = ["-m", "testbed.fakeserver", "--replay", str(dataset)]
    if background:
        server = start_as_background_job(args, env, Path.cwd())
    else:
        server = start_as_terminal_command(args, env, Path.cwd())
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), server.communicate(timeout=60)
    return server, url


def test_a_run_over_a_dataset_the_replay_has_no_script_for_stops_with_one_line(
    suite: Path,
    cli_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    names = sorted(p.name for p in suite.iterdir() if (p / "VLM" / "random.txt").is_file())
    env = {**cli_env, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    server, url = _serve(suite / names[0], env)
    run = tmp_path / "run"
    # The run's message and exit code, in this process (the server is the fresh process under test here).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    monkeypatch.setenv("MEDSTRAT_CACHE", str(tmp_path / "cache"))
    try:
        done = run_cli_in_process(
            [
                "strategy=s0",
                "benchmark=dir",
                f"benchmark.root={suite}",
                "agent=litellm",
                "agent.model=openai/fake-model",
                f"agent.api_base={url}",
                "run.progress=false",
                "run.processes=1",
                f"hydra.run.dir={run}",
            ],
            os.environ,
            tmp_path,
            capfd,
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)
    assert done.returncode == 4, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("python -m experiments: error: the run stopped:"), lines
    assert f"no script for dataset {names[1]!r} (it serves: {names[0]})" in lines[0]
    assert not (run / "metrics.json").exists()  # no table that looks valid
    assert server.returncode == 0
    assert list((tmp_path / "tmp").iterdir()) == []  # the rules-replay-* scratch folder went with the server


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_replay_scratch_folder_is_removed_when_the_server_is_stopped(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, sig: signal.Signals
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    name = sorted(p.name for p in suite.iterdir() if (p / "VLM" / "random.txt").is_file())[0]
    # SIGTERM as `kill %1` in a script sends it: to a server started with `&` (SIGINT ignored).
    server, _ = _serve(suite / name, {**cli_env, "TMPDIR": str(scratch)}, background=sig == signal.SIGTERM)
    made = [p.name for p in scratch.iterdir()]
    os.kill(server.pid, sig)
    _, err = server.communicate(timeout=60)
    assert len(made) == 1 and made[0].startswith("rules-replay-"), made  # it existed while serving
    assert server.returncode == 0, err
    assert list(scratch.iterdir()) == []


def test_the_in_process_server_answers_an_unscripted_dataset_with_the_404() -> None:
    import json
    import urllib.error
    import urllib.request

    with FakeServer(OneDataset("a", TurnScript([Reply(content="ok")]))) as server:
        body = json.dumps({"model": "m", **_request("b")}).encode()
        request = urllib.request.Request(
            f"{server.url}/chat/completions", body, {"content-type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30)
    assert caught.value.code == 404
    assert "no script for dataset 'b'" in json.loads(caught.value.read())["error"]["message"]

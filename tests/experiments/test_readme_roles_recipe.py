"""The README's offline model-roles recipe, run line by line as printed (only the port is swapped for a free
one): a pool of two models and the rules baseline, judged by a scripted judge through the fake server, then
re-ranked by the leaderboard from the request cache."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- roles-recipe:"


def _lines() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index(MARKER) :].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in re.sub(r"\\\n\s*", "", block).splitlines() if line.strip()]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.heavy
def test_the_readme_roles_recipe_runs_a_judged_pool_offline(tmp_path: Path) -> None:
    synth, serve, run, board, stop = _lines()
    assert serve.rstrip().endswith("&") and stop.startswith("kill %1")
    port = str(_free_port())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["MEDSTRAT_CACHE"] = str(tmp_path / "cache")
    env.pop("OPENAI_API_KEY", None)
    env.pop(
        "MEDSTRAT_REQUEST_CACHE", None
    )  # the default request cache, as a user has it: under MEDSTRAT_CACHE
    # The recipe says `python`: the interpreter running the tests, found in its own folder (a link to it
    # elsewhere would start the base interpreter, outside the venv: tests/interpreter_guard.py).
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])

    def bash(line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", line.replace("8766", port)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    assert bash(synth).returncode == 0
    command = serve.rstrip().removesuffix("&").replace("8766", port).split()
    # `python` is the tests' interpreter; a console script (`medstrat`) is the one in its own folder.
    program = sys.executable if command[0] == "python" else str(Path(sys.executable).parent / command[0])
    server = subprocess.Popen(
        [program, *command[1:]],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().decode().strip() == f"http://127.0.0.1:{port}/v1"
        done = bash(run)
        ranked = bash(board)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    assert "win rate" in done.stdout and "litellm:openai/fake-b" in done.stdout
    roles = json.loads(next(tmp_path.glob("outputs/*/*/roles.json")).read_text(encoding="utf-8"))
    assert roles["judge"]["chosen"] == roles["judge"]["calls"] > 0 and roles["judge"]["invalid"] == 0
    assert '<table id="roles">' in next(tmp_path.glob("outputs/*/*/report.html")).read_text(encoding="utf-8")
    assert ranked.returncode == 0, ranked.stderr
    assert "## Cost per selector" in ranked.stdout and "win:litellm:openai/fake-b" in ranked.stdout
    rows = pd.read_csv(next(tmp_path.glob("outputs/*/*/selectors/selectors.csv"))).set_index("selector")
    # Re-ranked with the run's judge: every verdict from the request cache, at the run's judge cost.
    judged = rows.loc["llm_judge"]
    assert judged["judge_cache_hits"] == judged["judge_calls"] == roles["judge"]["calls"]
    assert judged["judge_tokens"] == roles["judge"]["tokens"]

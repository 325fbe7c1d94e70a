"""The README's offline real-model recipe, run line by line as printed (only the port is swapped for a free
one), so that it cannot rot: generate one dataset, serve the fake provider, run S0 with the LiteLLM agent."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- offline-recipe:"


def recipe_lines() -> list[str]:
    """The commands of the README block after the offline-recipe marker (continuations joined)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index(MARKER) :].split("```bash\n", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s*", "", block)
    return [line for line in joined.splitlines() if line.strip()]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.heavy
def test_the_offline_recipe_of_the_readme_runs_and_scores(tmp_path: Path) -> None:
    synth, serve, run, stop = recipe_lines()
    assert serve.split("#")[0].rstrip().endswith("&") and stop.startswith("kill %1")
    port = str(_free_port())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["MEDSTRAT_CACHE"] = str(tmp_path / "cache")
    env.pop("OPENAI_API_KEY", None)  # the recipe passes its own
    # The recipe says `python` and `medstrat`: the interpreter running the tests and its console script, found
    # in its own folder (a link elsewhere would start the base interpreter, outside the venv:
    # tests/interpreter_guard.py).
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])

    def bash(line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", line.replace("8765", port)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    made = bash(synth)
    assert made.returncode == 0, made.stderr
    command = serve.split("#")[0].rstrip().removesuffix("&").replace("8765", port)
    assert command.startswith("medstrat fakeserver")
    server = subprocess.Popen(
        [sys.executable, "-m", "experiments.cli", *command.split()[1:]],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        assert url == f"http://127.0.0.1:{port}/v1", url  # what the recipe's comment promises
        done = bash(run)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    assert "E2E" in done.stdout
    (metrics,) = (tmp_path / "outputs").rglob("metrics.json")
    macro = json.loads(metrics.read_text())["macro"]
    # The replayed rules baseline standardizes this dataset perfectly through the LiteLLM path.
    assert macro["E2E"] == 1.0, macro
    (usage,) = (tmp_path / "outputs").rglob("usage.json")
    assert json.loads(usage.read_text())["total"]["calls"] > 0


def test_the_offline_recipe_has_a_root_no_other_readme_command_writes() -> None:
    """Followed in order, the README must not leave other datasets in the recipe's root: the replay serves one
    dataset's decisions, and the run would score every dataset under the root against them."""
    synth, _, run, _ = recipe_lines()
    root = synth.split()[2]
    assert f"benchmark.root={root}" in run
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [
        line
        for line in re.sub(r"\\\n\s*", "", text).splitlines()
        if "python -m " in line or line.startswith("medstrat ")
    ]
    others = [
        line
        for line in commands
        if line not in recipe_lines() and re.search(rf"(^|\s|=){root}/?(\s|$)", line)
    ]
    assert others == [], others

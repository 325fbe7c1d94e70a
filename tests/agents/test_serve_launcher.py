"""``python -m agents.serve``: llama-cpp-python's server with the model's extra buffer types off, so the
weights never go to ggml's AMX (or repack) buffers, whose kernels fault on some Intel VMs that list AMX. The
launcher must not load llama_cpp before it runs (the agents package never needs it)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_importing_the_launcher_and_the_agents_does_not_load_llama_cpp() -> None:
    done = _python("import sys, agents, agents.serve; print('llama_cpp' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_every_model_llama_cpp_loads_afterwards_has_its_extra_buffer_types_off() -> None:
    # The default parameters Llama() and the server load each model with (llama_cpp.llama_cpp's function,
    # read at load time): use_extra_bufts is llama.cpp's switch for the AMX and repack weight buffers.
    code = (
        "import llama_cpp.llama_cpp as native, llama_cpp._internals as internals\n"
        "assert native.llama_model_default_params().use_extra_bufts\n"
        "from agents.serve import without_extra_buffer_types\n"
        "without_extra_buffer_types(native); without_extra_buffer_types(native)\n"
        "print(native.llama_model_default_params().use_extra_bufts,"
        " internals.LlamaModel.default_params().use_extra_bufts)\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]

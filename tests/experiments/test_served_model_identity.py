"""A result names the model that produced it, and the cache never answers for another model (issue 52).

``agent=local`` sends ``openai/local`` whatever the server serves. A fake server on loopback reports model A
on ``/v1/models``; a run buys its calls. The same endpoint then reports model B: the same command buys every
call again (0 from the cache) and ``run.json`` names the config's model and B. Real LiteLLM path throughout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_roles import make_suite

from agents.model.cache import request_key
from experiments import compose_config
from experiments.report.collect import load_run
from experiments.run.experiment import run_experiment
from experiments.stored.sweep import load_runs
from testbed.fakeserver import FakeServer


def _cfg(suite: Path, url: str, cache: Path) -> Any:
    return compose_config(
        [
            "strategy=s0",
            "benchmark=dir",
            f"benchmark.root={suite}",
            "agent=litellm",
            "agent.model=openai/local",
            f"agent.api_base={url}",
            "+agent.api_key=sk-fake",
            "agent.batch_size=50",
            "agent.vision=false",
            f"agent.cache={cache}",
            "run.progress=false",
            "run.report=false",
            "run.processes=1",
        ]
    )


def _calls(run: Path) -> tuple[int, int]:
    usage = json.loads((run / "usage.json").read_text(encoding="utf-8"))
    total = usage.get("total") or usage
    return int(total["calls"]), int(total["cache_hits"])


@pytest.mark.heavy
def test_another_model_behind_the_same_endpoint_buys_its_calls_and_is_named_in_run_json(
    tmp_path: Path,
) -> None:
    suite, script = make_suite(tmp_path / "data")
    cache = tmp_path / "requests.sqlite"
    with FakeServer(script) as server:
        server.served_model = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
        first = run_experiment(_cfg(suite, server.url, cache), tmp_path / "a")
        bought_a = len(server.chat_requests)
        again = run_experiment(_cfg(suite, server.url, cache), tmp_path / "a_again")
        assert len(server.chat_requests) == bought_a  # the same model: every call from the cache
        server.served_model = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
        server.model_path = "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
        second = run_experiment(_cfg(suite, server.url, cache), tmp_path / "b")
        bought_b = len(server.chat_requests) - bought_a

    assert bought_a > 0 and _calls(tmp_path / "a") == (bought_a, 0)
    assert _calls(tmp_path / "a_again") == (bought_a, bought_a)
    assert bought_b == bought_a and _calls(tmp_path / "b") == (bought_b, 0)
    models = json.loads((tmp_path / "b" / "run.json").read_text(encoding="utf-8"))["models"]
    assert models == [
        {
            "role": "agent",
            "model": "openai/local",
            "api_base": server.url,
            "served": "ids=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf "
            "path=/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        }
    ]
    # The ablation's rows: one per served model (the same command and overrides otherwise).
    labels = {r.run_dir.name: r.label for r in load_runs(tmp_path)}
    assert labels["a"] == labels["a_again"] == "s0 served=ids=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert labels["b"].startswith("s0 served=ids=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf path=")
    # The report's notes name it too.
    notes = load_run(tmp_path / "b").notes
    assert any(n.startswith("MODEL: agent openai/local served ids=qwen2.5-coder-0.5b") for n in notes), notes
    # The summary line names what served each run.
    assert "served ids=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" in first.table.splitlines()[0]
    assert "served ids=qwen2.5-coder-1.5b" in again.table.splitlines()[0]
    assert "path=/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" in second.table.splitlines()[0]


def test_the_key_of_a_request_with_no_server_identity_is_the_key_it_always_was() -> None:
    # Pinned: the caches of hosted runs (no api_base, so no identity) written before identities still answer.
    key = request_key(
        "openai/gpt-4o-mini",
        [{"role": "user", "content": "hi"}],
        None,
        {"temperature": 0.0, "seed": 7},
        0,
        endpoint="openai ",
    )
    assert key == "fad1a1ee844d0b921e5654d5e5ce77c4ca47db3b8bdf3f816559c4a20a5dfa8f"
    assert (
        request_key(
            "openai/gpt-4o-mini",
            [{"role": "user", "content": "hi"}],
            None,
            {"temperature": 0.0, "seed": 7},
            0,
            endpoint="openai ",
            served="ids=a",
        )
        != key
    )


def test_the_leaderboard_names_the_models_runs_were_served(tmp_path: Path) -> None:
    from experiments.selection.leaderboard import served_models

    def run(name: str, models: list[dict[str, Any]]) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "run.json").write_text(json.dumps({"models": models}), encoding="utf-8")
        return folder

    local = {"role": "agent", "model": "openai/local", "api_base": "http://127.0.0.1:8765/v1"}
    runs = [
        run("coder15", [{**local, "served": "ids=coder-1.5b.gguf"}]),
        run("hosted", [{"role": "agent", "model": "openai/gpt-4o-mini", "api_base": None, "served": None}]),
        run("named", [{**local, "model": "openai/coder-0.5b.gguf", "served": "ids=coder-0.5b.gguf"}]),
        tmp_path / "not_a_run",
    ]
    assert served_models(runs) == {"coder15": "served ids=coder-1.5b.gguf"}

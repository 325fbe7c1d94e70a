"""Seeds that sample (issue 33 item 1), offline through the real LiteLLM path: at ``agent.temperature=0.7``
``run.seed=0,1,2`` are three samples (three different candidates, a non-zero sd in the ablation) and a rerun
of ``run.seed=1`` is answered by the request cache (0 calls bought). Fails if the seed is dropped from the
request (the fake provider samples from it) or from the cache key (the rerun would be answered alike, but the
seeds would share answers)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fake_roles import make_suite

from experiments import compose_config
from experiments.analysis.ablation import summary_frame
from experiments.run.experiment import run_experiment
from experiments.stored.sweep import load_runs
from testbed.fakeserver import FakeServer


def _cfg(suite: Path, url: str, cache: Path, seed: int):  # type: ignore[no-untyped-def]
    return compose_config(
        [
            "strategy=s0",
            "benchmark=dir",
            f"benchmark.root={suite}",
            "agent=litellm",
            "agent.model=openai/fake-model",
            f"agent.api_base={url}",
            "+agent.api_key=sk-fake",
            "agent.temperature=0.7",
            "agent.batch_size=50",  # one conversation per candidate: no plan phase
            "agent.vision=false",
            f"agent.cache={cache}",
            f"run.seed={seed}",
            "run.progress=false",
            "run.report=false",
            "run.processes=1",
        ]
    )


def _candidate_digest(run: Path) -> str:
    folder = next((run / "candidates").glob("*/0/agent1_data_organization/standardized_annotations"))
    blob = b"".join(p.read_bytes() for p in sorted(folder.glob("*.json")))
    return hashlib.sha256(blob).hexdigest()


def _calls(run: Path) -> tuple[int, int]:
    usage = json.loads((run / "usage.json").read_text(encoding="utf-8"))
    total = usage.get("total") or usage
    return int(total["calls"]), int(total["cache_hits"])


@pytest.mark.heavy
def test_three_seeds_are_three_samples_and_a_rerun_of_one_seed_buys_nothing(tmp_path: Path) -> None:
    suite, script = make_suite(tmp_path / "data")
    cache = tmp_path / "requests.sqlite"
    with FakeServer(script) as server:
        bought = []
        for seed in (0, 1, 2):
            before = len(server.chat_requests)
            run_experiment(_cfg(suite, server.url, cache, seed), tmp_path / "sweep" / str(seed))
            bought.append(len(server.chat_requests) - before)
        before = len(server.chat_requests)
        run_experiment(_cfg(suite, server.url, cache, 1), tmp_path / "again")
        rerun = len(server.chat_requests) - before

    runs = [tmp_path / "sweep" / str(s) for s in (0, 1, 2)]
    assert len({_candidate_digest(r) for r in runs}) == 3  # three different candidates
    assert all(n > 0 for n in bought) and [_calls(r) for r in runs] == [(n, 0) for n in bought]
    assert rerun == 0 and _calls(tmp_path / "again") == (bought[1], bought[1])
    assert _candidate_digest(tmp_path / "again") == _candidate_digest(runs[1])
    row = summary_frame(load_runs(tmp_path / "sweep")).iloc[0]
    assert row["seeds"] == 3 and row["E2E_sd"] > 0

"""Issue 21: a candidate a limit stopped short marks the run incomplete everywhere a user looks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import compose_config
from experiments.run.experiment import run_experiment
from testbed.fakeserver import ByDataset, FakeServer
from testbed.fakeserver.replay import replay_script


def test_a_turn_limit_makes_the_candidate_incomplete_in_the_marker_samples_and_table(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "synth-fundus-npy"
    script = replay_script(suite / name, work_dir=tmp_path / "rules", check=False)
    server = FakeServer(ByDataset({name: script})).start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    cfg = compose_config(
        [
            "strategy=s0",
            "benchmark=dir",
            f"benchmark.root={suite}",
            f"benchmark.datasets=[{name}]",
            "agent=litellm",
            "agent.model=openai/fake-model",
            f"agent.api_base={server.url}",
            "agent.limits.max_turns=10",  # a batch of 8 samples needs 33 turns in the replay
            "run.progress=false",
            "run.report=false",
        ]
    )
    try:
        outcome = run_experiment(cfg, tmp_path / "run")
    finally:
        server.stop()
    assert outcome.incomplete and "INCOMPLETE" in outcome.table
    markers = [json.loads(p.read_text()) for p in (tmp_path / "run" / "candidates").rglob("candidate.json")]
    assert markers and all(m["status"] == "incomplete" and m["missing"] for m in markers)
    assert all("max_turns (10) reached" in m["reason"] for m in markers)
    rows = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    missing = {
        (m["output_dir"].split("/candidates/")[1].split("/")[0], i) for m in markers for i in m["missing"]
    }
    marked = {(r["dataset"], r["index"]) for r in rows if r.get("missing_in_candidates") == [0]}
    assert marked == missing and len(marked) < len(rows)

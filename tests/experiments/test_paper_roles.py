"""The paper's S3/S4 (``s3_paper``, ``s4_paper``) with model roles: a candidate pool works (through the real
LiteLLM path, fake provider) and records each candidate's agent; a selector, which their reference procedure
would ignore, is refused in one line (exit 2) instead."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fake_roles import DATASET, Dispatch, model, read_record

from agents.fakeserver import ByDataset, FakeServer
from experiments import compose_config
from experiments.run.experiment import run_experiment

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("strategy", ["s3_paper", "s4_paper"])
def test_a_paper_strategy_takes_a_pool_and_records_each_candidates_agent(
    strategy: str,
    roles_suite: tuple[Path, ByDataset],
    roles_server: tuple[FakeServer, Dispatch],
    tmp_path: Path,
) -> None:
    suite, _ = roles_suite
    fake, _ = roles_server
    pool = (
        f"+strategy.pool=[{{agent: {model(fake.url, 'openai/fake-a')}, n: 1}}, "
        "{agent: {name: rules, temperature: 0.9}, n: 2, label: rules-hot}]"
    )
    overrides = [f"strategy={strategy}", "benchmark=dir", f"benchmark.root={suite}", pool]
    overrides += ["run.progress=false", "run.report=false", "run.processes=1"]
    run_experiment(compose_config(overrides), tmp_path / "run")

    record = read_record(tmp_path / "run")
    assert [c["agent"] for c in record["candidates"]] == ["litellm:openai/fake-a", "rules-hot", "rules-hot"]
    assert {r.body.get("model") for r in fake.requests if isinstance(r.body, dict)} == {"fake-a"}
    roles = json.loads((tmp_path / "run" / "roles.json").read_text(encoding="utf-8"))
    assert {a: v["candidates"] for a, v in roles["agents"].items()} == {
        "litellm:openai/fake-a": 1,
        "rules-hot": 2,
    }
    assert sum(v["selected"] for v in roles["agents"].values()) == roles["samples"] > 0
    assert json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))["strategy"] == strategy


@pytest.mark.parametrize(
    ("strategy", "selector"), [("s3_paper", "llm_judge"), ("s4_paper", "hybrid"), ("s3_paper", "majority")]
)
def test_a_selector_for_a_paper_strategy_is_refused_in_one_line(
    strategy: str, selector: str, roles_suite: tuple[Path, ByDataset], tmp_path: Path
) -> None:
    suite, _ = roles_suite
    run = tmp_path / "run"
    args = [f"strategy={strategy}", f"selector={selector}", "benchmark=dir", f"benchmark.root={suite}"]
    args += ["judge=litellm", "judge.model=openai/fake-judge", f"hydra.run.dir={run}", "run.progress=false"]
    proc = subprocess.run(
        [sys.executable, "-m", "experiments", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"python -m experiments: error: strategy {strategy} takes no selector")
    assert f"selector={selector} would be ignored" in line
    assert not (run / "candidates" / DATASET).exists() and not (run / "metrics.json").exists()

"""The forecast of a guided run (``agent=local``, the guided mode): its calls and tokens come from the
guided mode's own prior (a plan, a few fresh requests per sample, data_meta), within half of what the run
makes, and its wall time from the server's measured speed. The LLM path is the real one, on the fake server
answering every constrained request with its schema's first object (`testbed.fakeserver.schema_answers`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process

from experiments.run.forecast import Cost, fit_speed
from testbed.fakeserver import FakeServer
from testbed.fakeserver.schema_answers import SchemaAnswers


def _local(suite: Path, url: str, run: Path, *extra: str) -> list[str]:
    return [
        "strategy=s0",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "benchmark.samples=3",  # not the prior's 10 samples per dataset: the forecast extrapolates
        "agent=local",
        "agent.model=openai/fake-model",
        f"agent.api_base={url}",
        "agent.cache=false",
        "run.processes=1",
        "run.progress=false",
        "run.report=false",
        f"hydra.run.dir={run}",
        *extra,
    ]


def test_the_forecast_of_a_guided_run_is_within_half_of_its_calls_and_tokens(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    env = {**cli_env, "OPENAI_API_KEY": "sk-fake"}
    with FakeServer(SchemaAnswers("tool_choice")) as server:
        dry = run_cli_in_process(
            [*_local(suite, server.url, tmp_path / "dry"), "run.dry_run=true"], env, tmp_path, capfd
        )
        assert dry.returncode == 0, dry.stderr
        assert server.chat_requests == []
        done = run_cli_in_process(_local(suite, server.url, tmp_path / "run"), env, tmp_path, capfd)
    assert done.returncode == 0, done.stderr
    forecast = json.loads((tmp_path / "dry" / "forecast.json").read_text())
    assert forecast["source"]["kind"] == "prior" and forecast["source"]["mode"] == "guided"
    assert forecast["total"]["samples"] == 6
    actual = json.loads((tmp_path / "run" / "usage.json").read_text())["total"]
    for key in ("calls", "prompt_tokens", "completion_tokens"):
        expected = forecast["total"][key]["expected"]
        assert 0.5 <= actual[key] / expected <= 1.5, (key, actual[key], forecast["total"][key])
        assert forecast["total"][key]["low"] <= actual[key] <= forecast["total"][key]["high"], key
    # The prior knows no server: the forecast says how to measure one instead of guessing a time.
    assert forecast["wall"] is None and "wall time unknown" in dry.stdout


def test_a_stored_run_gives_the_wall_time_from_the_servers_measured_speed(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    env = {**cli_env, "OPENAI_API_KEY": "sk-fake"}
    with FakeServer(SchemaAnswers("tool_choice"), latency_s=1.0) as server:
        done = run_cli_in_process(_local(suite, server.url, tmp_path / "run"), env, tmp_path, capfd)
        assert done.returncode == 0, done.stderr
        dry = run_cli_in_process(
            [
                *_local(suite, server.url, tmp_path / "dry"),
                "run.dry_run=true",
                f"forecast.from_run={tmp_path / 'run'}",
            ],
            env,
            tmp_path,
            capfd,
        )
    assert dry.returncode == 0, dry.stderr
    forecast = json.loads((tmp_path / "dry" / "forecast.json").read_text())
    wall = forecast["wall"]
    assert wall is not None and wall["in_flight"] == 1  # agent=local: one request at a time
    # The server's time of the stored run: 1 s per call, one call at a time (agent.server.slots=1); a call's
    # latency also holds its wait for the slot, which is not the server's time.
    calls = json.loads((tmp_path / "run" / "usage.json").read_text())["total"]["calls"]
    served = calls * 1.0
    assert 0.5 <= wall["seconds"]["expected"] / served <= 1.5, (wall, served)
    assert "wall time:" in dry.stdout and "tok/s" in dry.stdout


def test_the_speed_fit_recovers_a_servers_prompt_and_completion_rates() -> None:
    # 400 prompt tokens/s and 20 completion tokens/s, as a CPU server of a small model answers.
    calls = [(p, c, p / 400 + c / 20) for p, c in ((900, 60), (1500, 30), (700, 120), (2000, 80))]
    speed = fit_speed(calls)
    assert speed is not None
    prompt, completion = speed.rates()
    assert prompt == pytest.approx(400, rel=1e-6) and completion == pytest.approx(20, rel=1e-6)
    assert speed.seconds(Cost(0, 4000, 100)) == pytest.approx(4000 / 400 + 100 / 20)


def test_plan_selection_forecasts_a_request_per_plan_sampled_and_the_recheck(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    env = {**cli_env, "OPENAI_API_KEY": "sk-fake"}
    calls = {}
    with FakeServer(SchemaAnswers("tool_choice")) as server:
        for label, extra in (
            ("s0", []),
            ("plans", ["strategy=plans", "strategy.n=3"]),
            ("agent", ["agent.plans=3"]),
        ):
            dry = run_cli_in_process(
                [*_local(suite, server.url, tmp_path / label), "run.dry_run=true", *extra],
                env,
                tmp_path,
                capfd,
            )
            assert dry.returncode == 0, dry.stderr
            calls[label] = json.loads((tmp_path / label / "forecast.json").read_text())["total"]["calls"]
        assert server.chat_requests == []
    datasets = 2
    # Two more plans sampled, and the re-ask of a contradicted plan, per dataset.
    assert calls["plans"]["expected"] == pytest.approx(calls["s0"]["expected"] + 3 * datasets)
    assert calls["agent"]["expected"] == pytest.approx(calls["plans"]["expected"])

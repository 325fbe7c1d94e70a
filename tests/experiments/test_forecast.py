"""The forecast before paying (issue 43 item 1): ``run.dry_run=true`` prints calls, tokens and USD per dataset
and job without a model call; ``run.forecast=true`` prints it before a real run and compares it afterwards;
``forecast.pilot=K`` measures the agent on K samples first. The LLM path is the real one, on the fake server
replaying the rules baseline (`testbed.fakeserver.replay`), which reports tokens estimated per request."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process
from cli_process import nonblank_lines

from testbed.fakeserver import ByDataset, FakeServer
from testbed.fakeserver.replay import replay_script

PROG = "python -m experiments: error: "


@pytest.fixture
def cli(capfd: pytest.CaptureFixture[str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``python -m experiments ARGS`` with ``env`` in ``cwd``, run in this process."""

    def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
        return run_cli_in_process(args, env, cwd, capfd)

    return run


@pytest.fixture(scope="module")
def replay(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> ByDataset:
    """The rules baseline replayed as tool calls on each dataset of the suite."""
    work = tmp_path_factory.mktemp("replay")
    names = sorted(p.name for p in suite.iterdir() if (p / "VLM" / "random.txt").is_file())
    return ByDataset({n: replay_script(suite / n, work_dir=work / n, check=False) for n in names})


def _llm(suite: Path, url: str, *extra: str) -> list[str]:
    return [
        "benchmark=dir",
        f"benchmark.root={suite}",
        "agent=litellm",
        "agent.model=openai/fake-model",
        f"agent.api_base={url}",
        "agent.temperature=0",
        "agent.cache=false",
        "run.processes=1",
        "run.progress=false",
        "run.report=false",
        *extra,
    ]


@pytest.mark.heavy
def test_a_pilot_on_three_samples_forecasts_the_run_tokens_within_a_quarter(
    suite: Path, replay: ByDataset, cli_env: dict[str, str], cli, tmp_path: Path
) -> None:
    # Batches of 2: the pilot's 3 samples are a plan, a batch of 2, a batch of 1 and data_meta; the run's 10
    # samples per dataset are a plan, five batches and data_meta, twice (S3 with n=2): an extrapolation.
    run = tmp_path / "run"
    env = {**cli_env, "OPENAI_API_KEY": "sk-fake"}
    with FakeServer(replay) as server:
        args = _llm(suite, server.url, "strategy=s3", "strategy.n=2", "agent.batch_size=2")
        done = cli([*args, "run.forecast=true", "forecast.pilot=3", f"hydra.run.dir={run}"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    forecast = json.loads((run / "forecast.json").read_text(encoding="utf-8"))
    assert forecast["source"]["kind"] == "pilot" and forecast["source"]["calls"] > 0
    assert forecast["total"]["candidates"] == {"low": 4, "high": 4}
    versus = json.loads((run / "forecast_vs_actual.json").read_text(encoding="utf-8"))
    actual = json.loads((run / "usage.json").read_text(encoding="utf-8"))["total"]
    assert versus["tokens"]["actual"] == actual["total_tokens"]  # the run's own spend, not the pilot's
    assert 0.75 <= versus["tokens"]["actual_over_expected"] <= 1.25, versus["tokens"]
    assert versus["tokens"]["within_range"]
    assert 0.75 <= versus["calls"]["actual_over_expected"] <= 1.25, versus["calls"]
    assert "forecast vs actual:" in done.stdout
    assert "forecast · s3" in done.stderr  # printed before the run, beside the warnings, not in the table


def test_a_dry_run_calls_no_model_and_needs_no_key(
    suite: Path, replay: ByDataset, cli_env: dict[str, str], cli, tmp_path: Path
) -> None:
    env = {k: v for k, v in cli_env.items() if k != "OPENAI_API_KEY"}
    run = tmp_path / "dry"
    with FakeServer(replay) as server:
        done = cli(
            [*_llm(suite, server.url, "strategy=s3", "run.dry_run=true"), f"hydra.run.dir={run}"],
            env,
            tmp_path,
        )
        assert server.chat_requests == []
    assert done.returncode == 0, done.stderr
    doc = json.loads((run / "forecast.json").read_text(encoding="utf-8"))
    assert doc["source"]["kind"] == "prior"
    assert doc["total"]["datasets"] == 2 and doc["total"]["candidates"] == {"low": 10, "high": 10}
    assert doc["total"]["tokens"]["low"] < doc["total"]["tokens"]["expected"] < doc["total"]["tokens"]["high"]
    assert doc["total"]["usd"] is None  # LiteLLM has no price for the fake model
    lines = nonblank_lines(done.stdout)
    assert lines[0].startswith("forecast · s3 · seed 0 · agent litellm openai/fake-model (tools)")
    assert "USD unknown: LiteLLM has no price for openai/fake-model" in lines[0]
    assert any(line.startswith("total (2 datasets)") and line.endswith("unknown") for line in lines)
    assert not (run / "candidates").exists() and not (run / "usage.json").exists()


def test_a_known_model_is_priced_from_litellms_map_and_an_unknown_one_from_agent_price(
    suite: Path, cli_env: dict[str, str], cli, tmp_path: Path
) -> None:
    common = ["strategy=s0", "benchmark=dir", f"benchmark.root={suite}", "agent=litellm", "run.dry_run=true"]
    known = cli(
        [*common, "agent.model=openai/gpt-4o-mini", f"hydra.run.dir={tmp_path / 'a'}"], cli_env, tmp_path
    )
    priced = [
        *common,
        "agent.model=hosted_vllm/my-model",
        "agent.price.input_per_mtok=1",
        "agent.price.output_per_mtok=2",
        f"hydra.run.dir={tmp_path / 'b'}",
    ]
    given = cli(priced, cli_env, tmp_path)
    assert known.returncode == given.returncode == 0, known.stderr + given.stderr
    a = json.loads((tmp_path / "a" / "forecast.json").read_text(encoding="utf-8"))
    b = json.loads((tmp_path / "b" / "forecast.json").read_text(encoding="utf-8"))
    assert a["price"]["source"] == "litellm (gpt-4o-mini)" and a["price"]["prompt_usd_per_mtok"] > 0
    assert b["price"]["source"] == "agent.price"
    tokens = b["total"]["prompt_tokens"]["expected"], b["total"]["completion_tokens"]["expected"]
    assert b["total"]["usd"]["expected"] == pytest.approx((tokens[0] * 1 + tokens[1] * 2) / 1e6)


def test_a_budget_below_the_forecast_is_one_loud_line_before_anything_starts(
    suite: Path, cli_env: dict[str, str], cli, tmp_path: Path
) -> None:
    args = ["strategy=s0", "benchmark=dir", f"benchmark.root={suite}", "agent=litellm", "run.dry_run=true"]
    done = cli([*args, "run.budget_tokens=1000", f"hydra.run.dir={tmp_path / 'run'}"], cli_env, tmp_path)
    assert done.returncode == 0, done.stderr
    over = [line for line in done.stdout.splitlines() if "OVER BUDGET" in line]
    assert len(over) == 1
    assert over[0].startswith("OVER BUDGET: run.budget_tokens=1000 but the forecast is ")
    assert "it would stop at about 0% of the expected work" in over[0]


def test_the_rules_agent_is_forecast_as_no_call_and_no_dollar(
    suite: Path, cli_env: dict[str, str], cli, tmp_path: Path
) -> None:
    args = ["strategy=s1", "benchmark=dir", f"benchmark.root={suite}", "run.dry_run=true"]
    done = cli([*args, f"hydra.run.dir={tmp_path / 'run'}"], cli_env, tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "run" / "forecast.json").read_text(encoding="utf-8"))
    assert doc["total"]["calls"] == {"low": 0.0, "expected": 0.0, "high": 0.0}
    assert doc["total"]["usd"] == {"low": 0.0, "expected": 0.0, "high": 0.0}
    assert "agent rules makes no model call: zero calls, zero tokens, $0" in doc["notes"]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("forecast.from_run={missing}", "forecast.from_run={missing}: no such run folder"),
        ("forecast.pilot=0", "forecast.pilot=0: expected at least 1 sample per dataset"),
    ],
)
def test_a_bad_forecast_option_is_one_line_and_exit_2(
    option: str, message: str, suite: Path, cli_env: dict[str, str], cli, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-run"
    args = ["strategy=s0", "benchmark=dir", f"benchmark.root={suite}", "agent=litellm", "run.dry_run=true"]
    done = cli(
        [*args, option.format(missing=missing), f"hydra.run.dir={tmp_path / 'run'}"], cli_env, tmp_path
    )
    assert done.returncode == 2
    assert nonblank_lines(done.stderr) == [PROG + message.format(missing=missing)]


def test_a_stored_run_without_model_calls_is_refused_as_a_source(
    rules_s3_run_small: tuple[Path, Path], cli_env: dict[str, str], cli, tmp_path: Path
) -> None:
    suite, stored = rules_s3_run_small
    args = ["strategy=s0", "benchmark=dir", f"benchmark.root={suite}", "agent=litellm", "run.dry_run=true"]
    done = cli([*args, f"forecast.from_run={stored}", f"hydra.run.dir={tmp_path / 'run'}"], cli_env, tmp_path)
    assert done.returncode == 2
    assert nonblank_lines(done.stderr) == [
        f"{PROG}forecast.from_run={stored}: no model call in its traces (candidates/**/trace_*.jsonl); "
        "give a run of a model-calling agent"
    ]


def test_a_dry_run_sweep_prints_one_row_per_job_and_their_total(
    suite: Path, cli_env: dict[str, str], cli, tmp_path: Path
) -> None:
    sweep = tmp_path / "sweep"
    args = [
        "-m",
        "strategy=s0,s3",
        "run.seed=0,1",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "agent=litellm",
    ]
    done = cli([*args, "run.dry_run=true", f"hydra.sweep.dir={sweep}"], cli_env, tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads((sweep / "forecast.json").read_text(encoding="utf-8"))
    assert list(doc["jobs"]) == ["0_s0", "1_s0", "2_s3", "3_s3"]
    jobs = [json.loads((sweep / j / "forecast.json").read_text(encoding="utf-8")) for j in doc["jobs"]]
    for key in ("calls", "tokens"):
        assert doc["total"][key]["expected"] == pytest.approx(sum(j["total"][key]["expected"] for j in jobs))
    assert doc["total"]["candidates"] == {"low": 2 * 2 + 2 * 10, "high": 2 * 2 + 2 * 10}
    rows = [line for line in done.stdout.splitlines() if line.startswith(("0_s0", "3_s3", "total"))]
    assert [r.split()[0] for r in rows] == ["0_s0", "3_s3", "total"]
    assert "ablation" not in done.stdout  # nothing ran: no ablation table is attempted
    assert not (sweep / "ablation.md").exists()


def test_a_forecast_and_its_comparison_are_what_tracking_logs(tmp_path: Path) -> None:
    from experiments.tracking.record import artifact_files, run_metrics

    span = {"low": 80.0, "expected": 100.0, "high": 125.0}
    total = {"calls": span, "tokens": span, "usd": None}
    (tmp_path / "forecast.json").write_text(json.dumps({"total": total}), encoding="utf-8")
    versus = {
        "tokens": {"forecast": span, "actual": 110.0, "actual_over_expected": 1.1, "within_range": True}
    }
    (tmp_path / "forecast_vs_actual.json").write_text(json.dumps(versus), encoding="utf-8")
    metrics = run_metrics(tmp_path)
    assert metrics["forecast/tokens_expected"] == 100.0 and metrics["forecast/calls_high"] == 125.0
    assert metrics["forecast/actual_over_expected_tokens"] == 1.1
    assert not any(k.startswith("forecast/usd") for k in metrics)  # an unpriced model has no dollar metric
    assert {p.name for p in artifact_files(tmp_path)} == {"forecast.json", "forecast_vs_actual.json"}

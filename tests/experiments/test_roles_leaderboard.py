"""The selector leaderboard ranks judge selectors too (through the real LiteLLM path, fake provider): with
the run's judge and request cache (a re-ranking re-asks nothing), the judge's cost in the row's cost,
per-agent win rates for a pool, and one line when no judge can be had."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from fake_roles import JUDGE_USAGE, Dispatch, judge, overrides, read_record

from agents.fakeserver import ByDataset, FakeServer
from experiments import compose_config
from experiments.run.experiment import run_experiment
from experiments.selection.leaderboard import leaderboard, write_leaderboard
from experiments.selection.leaderboard_roles import judge_notes
from experiments.selection.reselect import ReselectError

REPO = Path(__file__).resolve().parents[2]


def test_a_judged_pool_run_is_reranked_from_the_cache_with_the_judges_cost_and_per_agent_wins(
    roles_suite: tuple[Path, ByDataset], roles_server: tuple[FakeServer, Dispatch], tmp_path: Path
) -> None:
    suite, _ = roles_suite
    fake, dispatch = roles_server
    cache = f"judge.cache={tmp_path / 'requests.sqlite'}"
    run_experiment(compose_config(overrides(suite, fake.url, *judge(fake.url), cache)), tmp_path / "run")
    record = read_record(tmp_path / "run")
    roles = json.loads((tmp_path / "run" / "roles.json").read_text(encoding="utf-8"))
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text(encoding="utf-8"))
    asked, sent = dispatch.judged, len(fake.requests)
    assert asked > 0

    frame, stats = leaderboard([tmp_path / "run"], ["validator_max", "llm_judge"], ["evidence"], workers=1)
    rows = frame.set_index("selector")

    assert dispatch.judged == asked and len(fake.requests) == sent  # nothing asked again: all from the cache
    judged = rows.loc["llm_judge"]
    assert judged["judge_calls"] == judged["judge_cache_hits"] == asked
    # The same verdicts as the run: the same choices, the same E2E, the same per-agent win rates.
    assert judged["E2E"] == pytest.approx(metrics["macro"]["E2E"], abs=1e-9)
    for label, a in roles["agents"].items():
        assert judged[f"win:{label}"] == pytest.approx(a["win_rate"], abs=1e-3)
    assert sum(judged[c] for c in frame.columns if c.startswith("win:")) == pytest.approx(1.0, abs=1e-3)
    # Cost: the candidates' for both rows, plus the judge's (at the original price) for the judge row.
    candidates_tokens = sum(c["usage"]["total_tokens"] for c in record["candidates"])
    assert rows.loc["validator_max", "tokens"] == candidates_tokens
    assert rows.loc["validator_max", "judge_tokens"] == 0
    assert judged["judge_tokens"] == asked * sum(JUDGE_USAGE)
    assert judged["tokens"] == candidates_tokens + asked * sum(JUDGE_USAGE) == record["usage"]["total_tokens"]
    assert judged["judge_USD"] == pytest.approx(asked * (500 * 1.0 + 7 * 2.0) / 1e6)
    assert judged["USD"] == pytest.approx(rows.loc["validator_max", "USD"] + judged["judge_USD"])
    text = (write_leaderboard(frame, stats, tmp_path / "out")[1]).read_text(encoding="utf-8")
    assert "## Cost per selector" in text and "win:rules-hot" in text
    assert judge_notes(frame, stats["skipped"]) == []  # nothing new was spent: no line

    # Under another validator profile the judge sees other messages: new calls, said in one line.
    other, _ = leaderboard([tmp_path / "run"], ["llm_judge"], ["mdsbench"], workers=1)
    new = dispatch.judged - asked
    assert new > 0 and int(other["judge_calls"].iloc[0] - other["judge_cache_hits"].iloc[0]) == new
    assert judge_notes(other, {}) == [
        f"mdsbench/llm_judge: {new} judge calls not in the request cache "
        f"(${float(other['judge_USD'].iloc[0]):.4f} for all its verdicts)"
    ]


def test_a_run_without_a_judge_skips_judge_selectors_in_one_line_and_refuses_one_named(
    roles_suite: tuple[Path, ByDataset], roles_server: tuple[FakeServer, Dispatch], tmp_path: Path
) -> None:
    suite, _ = roles_suite
    fake, dispatch = roles_server
    pool = "+strategy.pool=[{agent: rules, n: 1}, {agent: {name: rules, temperature: 0.9}, n: 2, label: hot}]"
    base = [o for o in overrides(suite, fake.url) if not o.startswith("+strategy.pool")]
    run_experiment(compose_config([*base, pool]), tmp_path / "run")

    frame, stats = leaderboard([tmp_path / "run"], None, ["evidence"], workers=1)
    assert "llm_judge" not in set(frame["selector"]) and "validator_max" in set(frame["selector"])
    assert "has no judge" in stats["skipped"]["llm_judge"]
    assert set(frame.columns) >= {"win:rules", "win:hot"} and not any(c.startswith("judge_") for c in frame)

    cli = [sys.executable, "-m", "experiments.leaderboard", str(tmp_path / "run"), "--workers", "1"]
    default = subprocess.run(
        [*cli, "--validators", "evidence", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert default.returncode == 0, default.stderr
    assert "python -m experiments.leaderboard: llm_judge skipped: " in default.stderr
    named = subprocess.run(
        [*cli, "--selectors", "validator_max,llm_judge", "--out", str(tmp_path / "n")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert named.returncode == 2
    [line] = named.stderr.strip().splitlines()
    assert line.startswith("python -m experiments.leaderboard: error: selector llm_judge: judge unavailable")
    assert not (tmp_path / "n").exists() and dispatch.judged == 0
    assert isinstance(frame, pd.DataFrame)


def test_a_judge_whose_every_call_fails_is_one_line_never_a_row_of_fallbacks(
    roles_suite: tuple[Path, ByDataset], tmp_path: Path
) -> None:
    suite, script = roles_suite
    cache = tmp_path / "requests.sqlite"
    extra = [f"judge.cache={cache}", "+judge.retry={max_attempts: 1}"]
    with FakeServer(Dispatch(script)) as fake:
        run_experiment(compose_config(overrides(suite, fake.url, *judge(fake.url), *extra)), tmp_path / "run")
    cache.unlink()  # the server is gone and nothing is cached: no verdict can be had

    with pytest.raises(ReselectError, match="selector llm_judge: judge unavailable: judge call failed"):
        leaderboard([tmp_path / "run"], ["validator_max", "llm_judge"], ["evidence"], workers=1)
    frame, stats = leaderboard([tmp_path / "run"], None, ["evidence"], workers=1)
    assert "llm_judge" not in set(frame["selector"]) and "validator_max" in set(frame["selector"])
    assert stats["skipped"]["llm_judge"].startswith("judge unavailable: judge call failed")
    # hybrid asks the same judge: the two models' candidates are samples of their own seeds (issue 33), not
    # ties, so its calls fail alike and it is skipped with the same one line, never a row of fallbacks.
    assert "hybrid" not in set(frame["selector"])
    assert stats["skipped"]["hybrid"].startswith("judge unavailable: judge call failed")

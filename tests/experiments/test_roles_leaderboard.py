"""The selector leaderboard ranks judge selectors too (through the real LiteLLM path, fake provider): with
the run's judge and request cache (a re-ranking re-asks nothing), the judge's cost in the row's cost,
per-agent win rates for a pool, and one line when no judge can be had."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest
from fake_roles import CACHE_ENV, JUDGE_USAGE, Dispatch, RolesRuns, judge, overrides, read_record

from experiments import compose_config
from experiments.run.experiment import run_experiment
from experiments.selection.leaderboard import judge_notes, leaderboard, write_leaderboard
from experiments.selection.leaderboard import main as leaderboard_cli
from experiments.selection.reselect import ReselectError
from testbed.fakeserver import FakeServer


def _copy(run: Path, to: Path) -> Path:
    """A shared run folder copied to ``to`` (a re-ranking may write beside the run)."""
    shutil.copytree(run, to)
    return to


def test_a_judged_pool_run_is_reranked_from_the_cache_with_the_judges_cost_and_per_agent_wins(
    roles_runs: RolesRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, dispatch = roles_runs.fake, roles_runs.dispatch
    run = _copy(roles_runs.judged, tmp_path / "run")
    # The run's judge.cache=auto is this variable's file: a copy of the run's, which this test adds to
    # (SQLite's backup: a consistent copy even while the run's own connection may still checkpoint its WAL).
    cache = tmp_path / "requests.sqlite"
    with closing(sqlite3.connect(roles_runs.cache)) as src, closing(sqlite3.connect(cache)) as dst:
        src.backup(dst)
    monkeypatch.setenv(CACHE_ENV, str(cache))
    record = read_record(run)
    roles = json.loads((run / "roles.json").read_text(encoding="utf-8"))
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    asked = roles_runs.judged_asked
    assert asked > 0
    judged_before, sent = dispatch.judged, len(fake.requests)

    frame, stats = leaderboard([run], ["validator_max", "llm_judge"], ["evidence"], workers=1)
    rows = frame.set_index("selector")

    # Nothing asked again: all from the cache.
    assert dispatch.judged == judged_before and len(fake.requests) == sent
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
    other, _ = leaderboard([run], ["llm_judge"], ["mdsbench"], workers=1)
    new = dispatch.judged - judged_before
    assert new > 0 and int(other["judge_calls"].iloc[0] - other["judge_cache_hits"].iloc[0]) == new
    assert judge_notes(other, {}) == [
        f"mdsbench/llm_judge: {new} judge calls not in the request cache "
        f"(${float(other['judge_USD'].iloc[0]):.4f} for all its verdicts)"
    ]


def test_a_run_without_a_judge_skips_judge_selectors_in_one_line_and_refuses_one_named(
    roles_runs: RolesRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy(roles_runs.plain, tmp_path / "run")  # the pool selected by validator_max, no judge
    judged_before = roles_runs.dispatch.judged

    frame, stats = leaderboard([run], None, ["evidence"], workers=1)
    assert "llm_judge" not in set(frame["selector"]) and "validator_max" in set(frame["selector"])
    assert "has no judge" in stats["skipped"]["llm_judge"]
    wins = {"win:litellm:openai/fake-a", "win:litellm:openai/fake-b", "win:rules-hot"}
    assert set(frame.columns) >= wins and not any(c.startswith("judge_") for c in frame)

    # The command's message and exit code, in-process (its fresh-process run: test_readme_roles_recipe.py).
    cli = [str(run), "--workers", "1"]
    assert leaderboard_cli([*cli, "--validators", "evidence", "--out", str(tmp_path / "o")]) == 0
    assert "medstrat leaderboard: llm_judge skipped: " in capsys.readouterr().err
    assert (
        leaderboard_cli([*cli, "--selectors", "validator_max,llm_judge", "--out", str(tmp_path / "n")]) == 2
    )
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("medstrat leaderboard: error: selector llm_judge: judge unavailable")
    assert not (tmp_path / "n").exists() and roles_runs.dispatch.judged == judged_before
    assert isinstance(frame, pd.DataFrame)


def test_a_judge_whose_every_call_fails_is_one_line_never_a_row_of_fallbacks(
    roles_runs: RolesRuns, tmp_path: Path
) -> None:
    suite, script = roles_runs.suite, roles_runs.script
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

"""Model roles through the real LiteLLM path (fake provider): a candidate pool over several agents, per-agent
win rates, and an LLM judge as S3's selector (scripted: always candidate 1, or an invalid answer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_roles import JUDGE_USAGE, Dispatch, RolesRuns, judge, overrides, read_record

from agents.judge import CHOOSE_TOOL
from experiments import compose_config
from experiments.analysis.ablation import summary_frame
from experiments.run.experiment import run_experiment
from experiments.selection.leaderboard import _selector_names
from experiments.selection.reselect import ReselectError
from experiments.stored.sweep import load_runs
from testbed.fakeserver import FakeServer, Reply, tool_call


def test_a_pool_records_each_candidates_agent_and_per_agent_win_rates(roles_runs: RolesRuns) -> None:
    record = read_record(roles_runs.plain)

    agents = [c["agent"] for c in record["candidates"]]
    assert agents == ["litellm:openai/fake-a", "litellm:openai/fake-b", "rules-hot", "rules-hot", "rules-hot"]
    sent = roles_runs.fake.requests[: roles_runs.plain_requests]
    models = {r.body.get("model") for r in sent if isinstance(r.body, dict)}
    assert {"fake-a", "fake-b"} <= models  # both models were really called through LiteLLM
    roles = json.loads((roles_runs.plain / "roles.json").read_text(encoding="utf-8"))
    decided = [d for d in record["decisions"].values() if d["candidate"] is not None]
    wins = {a: sum(1 for d in decided if agents[d["candidate"]] == a) for a in set(agents)}
    assert {a: roles["agents"][a]["selected"] for a in wins} == wins
    assert sum(roles["agents"][a]["win_rate"] for a in wins) == pytest.approx(1.0, abs=1e-3)
    assert sum(roles["agents"][a]["oracle_rate"] for a in wins) == pytest.approx(1.0, abs=1e-3)
    assert (
        roles["agents"]["litellm:openai/fake-a"]["tokens"] > 0 and roles["agents"]["rules-hot"]["tokens"] == 0
    )
    assert "win rate" in roles_runs.plain_table and "litellm:openai/fake-b" in roles_runs.plain_table


def test_a_judge_that_always_prefers_candidate_1_decides_every_sample_it_answers(
    roles_runs: RolesRuns,
) -> None:
    run = roles_runs.judged
    record = read_record(run)

    verdicts = [(d, d["details"]["judge"]) for d in record["decisions"].values()]
    answered = [(d, j) for d, j in verdicts if j["status"] == "chosen"]
    assert answered and len(answered) == roles_runs.judged_asked
    # Candidate 1 of what the judge was shown, on every sample it answered.
    assert all(d["candidate"] == j["shown"][0] for d, j in answered)
    assert not any(d["fallback"] for d, _ in answered)
    # The judge's calls and tokens are part of the strategy's cost and of the cost columns.
    candidates_tokens = sum(c["usage"]["total_tokens"] for c in record["candidates"])
    judge_tokens = len(answered) * sum(JUDGE_USAGE)
    assert record["usage"]["total_tokens"] == candidates_tokens + judge_tokens
    usage = json.loads((run / "usage.json").read_text(encoding="utf-8"))
    assert usage["total"]["total_tokens"] == candidates_tokens + judge_tokens
    # ... and of the ablation's cost columns (validator vs judge compared at what each spent).
    frame = summary_frame(load_runs(run), baseline="s3")
    assert float(frame["tokens"].iloc[0]) == candidates_tokens + judge_tokens
    assert float(frame["calls"].iloc[0]) == record["usage"]["calls"]
    roles = json.loads((run / "roles.json").read_text(encoding="utf-8"))
    assert roles["judge"]["calls"] == len(answered) and roles["judge"]["tokens"] == judge_tokens
    assert roles["judge"]["cost_usd"] == pytest.approx(len(answered) * (500 * 1.0 + 7 * 2.0) / 1e6)


def test_an_invalid_judge_answer_falls_back_to_validator_max_and_is_counted(
    roles_runs: RolesRuns, tmp_path: Path
) -> None:
    dispatch = Dispatch(roles_runs.script)
    dispatch.verdict = Reply(tool_calls=(tool_call(CHOOSE_TOOL, {"candidate": 99}),), usage=JUDGE_USAGE)
    with FakeServer(dispatch) as fake:
        run_experiment(
            compose_config(overrides(roles_runs.suite, fake.url, *judge(fake.url))), tmp_path / "run"
        )
    judged = read_record(tmp_path / "run")
    plain = read_record(roles_runs.plain)

    invalid = [d for d in judged["decisions"].values() if d["details"]["judge"]["status"] == "invalid"]
    assert invalid and len(invalid) == dispatch.judged
    assert all(d["fallback"] for d in invalid)
    # The fallback is validator_max's own choice (the same pool's run without a judge).
    assert all(d["candidate"] == plain["decisions"][str(d["index"])]["candidate"] for d in invalid)
    roles = json.loads((tmp_path / "run" / "roles.json").read_text(encoding="utf-8"))
    assert roles["judge"]["invalid"] == len(invalid) and roles["judge"]["chosen"] == 0


def test_a_separate_reviser_makes_the_s1_revision_of_the_agents_candidate(
    roles_runs: RolesRuns, tmp_path: Path
) -> None:
    suite = roles_runs.suite
    finish = Reply(
        tool_calls=(tool_call("finish", {"summary": "checked; nothing to change"}),), usage=(200, 9)
    )
    with FakeServer(lambda request, serial: finish) as fake:
        overrides = [
            "strategy=s1",
            "benchmark=dir",
            f"benchmark.root={suite}",
            "reviser=litellm",
            "reviser.model=openai/fake-reviser",
            f"+reviser.api_base={fake.url}",
            "+reviser.api_key=sk-fake",
            "run.progress=false",
            "run.report=false",
        ]
        run_experiment(compose_config(overrides), tmp_path / "run")
        models = {r.body.get("model") for r in fake.requests if isinstance(r.body, dict)}
    record = read_record(tmp_path / "run")
    assert [c["agent"] for c in record["candidates"]] == ["rules", "litellm:openai/fake-reviser"]
    assert models == {
        "fake-reviser"
    }  # the candidate came from rules (no call); only the revision asked a model
    assert record["usage"]["total_tokens"] == record["candidates"][1]["usage"]["total_tokens"] > 0


def test_callers_that_make_no_model_call_skip_judge_selectors_and_refuse_one_named() -> None:
    # pass@k and the other re-selections without a judge role; the leaderboard ranks judges
    # (tests/experiments/test_roles_leaderboard.py).
    assert "llm_judge" not in _selector_names(None) and "hybrid" not in _selector_names(None)
    assert {"llm_judge", "hybrid"} <= set(_selector_names(None, judges=True))
    with pytest.raises(ReselectError, match="calls a judge model"):
        _selector_names(["validator_max", "llm_judge"])

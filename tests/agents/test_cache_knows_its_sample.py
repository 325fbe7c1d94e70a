"""What the request cache answers for (issue 33 items 1 and 2): a seed is a sample of its own, the same model
name on another endpoint is another model, ``refresh`` buys again; and each seed reaches the provider."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_scripts import FAKE_KEY, make_agent, make_task, standard_script

from agents.judge import JudgeRequest
from agents.model.cache import RequestCache, sampling_seed
from agents.model.client import ModelClient
from agents.model.config import ModelConfig
from agents.model.judge import LiteLLMJudge


def _generate(server, cache, task):  # type: ignore[no-untyped-def]
    return asyncio.run(make_agent(server, cache=cache).generate(task))


def test_each_seed_is_sent_to_the_provider_and_buys_its_own_answers_while_a_rerun_is_free(
    seg_dataset: Path, tmp_path: Path, fake_server
) -> None:
    server = fake_server(standard_script())
    cache = tmp_path / "cache.sqlite"
    for seed in (0, 1):
        _generate(server, cache, make_task(seg_dataset, tmp_path / f"s{seed}", seed=seed, temperature=0.7))
    bought = [r["seed"] for r in server.chat_requests]
    again = _generate(server, cache, make_task(seg_dataset, tmp_path / "again", seed=1, temperature=0.7))

    assert bought == [sampling_seed(0, 0)] * 8 + [sampling_seed(1, 0)] * 8
    assert len(server.chat_requests) == 16 and again.usage.cache_hits == again.usage.calls == 8


def test_the_seed_mixes_run_seed_and_candidate_so_no_two_candidates_of_a_sweep_share_one() -> None:
    # Candidate k of run.seed s has task seed s + k: (1, 0) and (0, 1) both have task seed 1.
    pairs = {(s + k, k) for s in range(3) for k in range(4)}
    assert len({sampling_seed(seed, k) for seed, k in pairs}) == len(pairs)
    assert all(0 <= sampling_seed(seed, k) < 2**31 for seed, k in pairs)


def test_the_same_model_name_on_another_endpoint_buys_its_own_answers(
    seg_dataset: Path, tmp_path: Path, fake_server
) -> None:
    first, second = fake_server(standard_script()), fake_server(standard_script())
    cache = tmp_path / "cache.sqlite"
    _generate(first, cache, make_task(seg_dataset, tmp_path / "a"))
    other = _generate(second, cache, make_task(seg_dataset, tmp_path / "b"))
    same = _generate(first, cache, make_task(seg_dataset, tmp_path / "c"))

    assert len(first.chat_requests) == 8 and len(second.chat_requests) == 8
    assert other.usage.cache_hits == 0 and same.usage.cache_hits == 8


def test_refresh_buys_every_answer_again_and_stores_it_over_the_old_one(
    seg_dataset: Path, tmp_path: Path, fake_server
) -> None:
    server = fake_server(standard_script())
    path = tmp_path / "cache.sqlite"
    _generate(server, path, make_task(seg_dataset, tmp_path / "a"))
    refreshed = _generate(server, RequestCache(path, refresh=True), make_task(seg_dataset, tmp_path / "b"))
    replayed = _generate(server, path, make_task(seg_dataset, tmp_path / "c"))

    assert len(server.chat_requests) == 16 and refreshed.usage.cache_hits == 0
    assert replayed.usage.cache_hits == 8 and len(RequestCache(path)) == 8


def test_a_seed_the_provider_does_not_take_is_not_sent(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    # LiteLLM's parameter map: Anthropic's API has no seed, OpenAI's has one.
    assert "seed" in ModelClient(ModelConfig("anthropic/claude-3-5-sonnet-20241022")).unsent_params
    assert "seed" not in ModelClient(ModelConfig("openai/gpt-4o-mini")).unsent_params


def test_the_judge_asks_each_run_seed_for_its_own_verdict(tmp_path: Path, fake_server) -> None:
    from testbed.fakeserver.judge import with_judge
    from testbed.fakeserver.script import Reply, TurnScript

    server = fake_server(with_judge(TurnScript([], after_end=Reply(content="?")), 1))
    cache = RequestCache(tmp_path / "c.sqlite")
    judge = LiteLLMJudge(ModelConfig("openai/fake-judge", api_base=server.url, api_key=FAKE_KEY, cache=cache))
    asks = [JudgeRequest("d", 0, 2, "which?", None, "k", seed=s) for s in (0, 1, 0)]
    answers = [judge.judge(r) for r in asks]

    assert [a.choice for a in answers] == [1, 1, 1]
    assert [r["seed"] for r in server.chat_requests] == [sampling_seed(0, 0), sampling_seed(1, 0)]
    assert answers[2].usage.cache_hits == 1


def test_a_second_revision_round_of_a_changed_output_is_a_sample_of_its_own(
    seg_dataset: Path, tmp_path: Path, fake_server
) -> None:
    from agents.base import Feedback
    from testbed.fakeserver import Reply, TurnScript, assistant_turn, tool_call

    server = fake_server(standard_script())
    agent = make_agent(server, cache=tmp_path / "cache.sqlite")
    first = asyncio.run(agent.generate(make_task(seg_dataset, tmp_path / "c0")))
    server.script = TurnScript([assistant_turn(tool_call("finish", {}))], after_end=Reply(content="?"))
    review = Feedback("Check everything.")  # S1's feedback: the same text every round

    def revise(candidate, out: str):  # type: ignore[no-untyped-def]
        server.reset()
        task = make_task(seg_dataset, tmp_path / out)
        revised = asyncio.run(agent.revise(task, candidate, review, ["*"]))
        return revised, [r["seed"] for r in server.chat_requests]

    round1, seeds1 = revise(first, "r1")
    changed = round1.output_dir / "standardized_annotations" / "1.json"
    changed.write_text(changed.read_text().replace("tiny_seg", "tiny_seg_v2"))
    _round2, seeds2 = revise(round1, "r2")
    again, seeds_again = revise(first, "r1b")

    assert len(seeds1) == len(seeds2) == 1 and seeds1 != seeds2  # same prompt, another output: bought
    assert seeds_again == [] and again.usage.cache_hits == 1  # the same revision again: the cache


def test_an_endpoint_set_in_the_environment_is_part_of_the_key(monkeypatch) -> None:
    # hosted_vllm/... without api_base goes where HOSTED_VLLM_API_BASE points: that server is the model.
    monkeypatch.setenv("HOSTED_VLLM_API_BASE", "http://gpu1:8000/v1")
    first = ModelClient(ModelConfig("hosted_vllm/local")).endpoint
    monkeypatch.setenv("HOSTED_VLLM_API_BASE", "http://gpu2:8000/v1/")
    second = ModelClient(ModelConfig("hosted_vllm/local")).endpoint
    assert (first, second) == ("hosted_vllm http://gpu1:8000/v1", "hosted_vllm http://gpu2:8000/v1")

"""Resume with a candidate pool (through the real LiteLLM path, fake provider): a two-model pool run that was
interrupted (stopped by a token budget, or one agent's candidate folders deleted) and resumed with
``run.resume=true`` reuses every finished candidate of both agents, sends no request twice, and ends with the
per-agent table of an uninterrupted run."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fake_roles import DATASET, Dispatch, judge, make_suite, overrides, read_record

from experiments import compose_config
from experiments.run.experiment import run_experiment
from experiments.run.loop import RESULT_MARKER
from experiments.run.resume import ResumeMismatch
from testbed.fakeserver import ByDataset, FakeServer


@pytest.fixture(scope="module")
def suite_and_script(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ByDataset]:
    return make_suite(tmp_path_factory.mktemp("pool-resume"))


def _pool(url: str, cache: Path) -> list[str]:
    # Each model with its own request cache file: a candidate cut short by the budget is redone on resume,
    # and its calls already answered must come from the cache, not the server. At temperature 0 the replay
    # is exact: a sampled mistake (a detection with no box list) would leave a sample unwritten, and the
    # replay cannot answer the finish check that names it, so the candidate would fail instead of finishing.
    def entry(model: str, n: int) -> str:
        return (
            f"{{agent: {{name: litellm, model: '{model}', api_base: '{url}', api_key: sk-fake, vision: true, "
            "temperature: 0, "
            f"cache: '{cache}/{model.split('/')[-1]}.sqlite'}}, n: {n}}}"
        )

    return [f"+strategy.pool=[{entry('openai/fake-a', 1)}, {entry('openai/fake-b', 2)}]"]


def _cfg(suite: Path, url: str, cache: Path, *extra: str) -> Any:
    return compose_config(
        [
            "strategy=s3",
            "benchmark=dir",
            f"benchmark.root={suite}",
            *_pool(url, cache),
            "run.progress=false",
            "run.report=false",
            "run.processes=1",
            "run.concurrency=1",
            *extra,
        ]
    )


def _sent(fake: FakeServer) -> Counter[str]:
    """Every chat request the server received, as (model, messages, tools), counted."""
    return Counter(
        json.dumps([r.get("model"), r.get("messages"), r.get("tools")], sort_keys=True)
        for r in fake.chat_requests
    )


def _marker(run: Path, key: str) -> Path:
    return run / "candidates" / DATASET / key / "candidate.json"


def _statuses(run: Path) -> dict[str, str]:
    folder = run / "candidates" / DATASET
    return {
        p.name: json.loads((p / "candidate.json").read_text(encoding="utf-8"))["status"]
        for p in sorted(folder.iterdir())
        if (p / "candidate.json").is_file()
    }


def _roles(run: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((run / "roles.json").read_text(encoding="utf-8"))
    return doc


@pytest.fixture(scope="module")
def uninterrupted(
    suite_and_script: tuple[Path, ByDataset], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Counter[str], dict[str, Any], dict[str, Any]]:
    suite, script = suite_and_script
    base = tmp_path_factory.mktemp("whole")
    with FakeServer(Dispatch(script)) as fake:
        run_experiment(_cfg(suite, fake.url, base / "cache"), base / "run")
        return _sent(fake), _roles(base / "run"), read_record(base / "run")


@pytest.mark.parametrize("interruption", ["budget", "deleted"])
def test_a_pool_run_resumes_reusing_both_agents_finished_candidates(
    interruption: str,
    suite_and_script: tuple[Path, ByDataset],
    uninterrupted: tuple[Counter[str], dict[str, Any], dict[str, Any]],
    tmp_path: Path,
) -> None:
    suite, script = suite_and_script
    whole_sent, whole_roles, whole_record = uninterrupted
    half = sum(c["usage"]["total_tokens"] for c in whole_record["candidates"]) // 2
    run, cache = tmp_path / "run", tmp_path / "cache"
    with FakeServer(Dispatch(script)) as fake:
        if interruption == "budget":
            # Stopped part-way by a token budget of half the whole run's tokens: the first model's candidate
            # finishes, the second model's first candidate is cut short, its second never starts.
            first = run_experiment(_cfg(suite, fake.url, cache, f"run.budget_tokens={half}"), run)
            assert first.incomplete
            assert _statuses(run) == {"0": "ok", "1": "incomplete"}
        else:
            run_experiment(_cfg(suite, fake.url, cache), run)
            # Killed before the dataset finished (no dataset done-marker), with the second model's candidates
            # (1 and 2) and its cached answers gone.
            (run / "selected" / DATASET / RESULT_MARKER).unlink()
            for k in (1, 2):
                shutil.rmtree(run / "candidates" / DATASET / str(k))
            (cache / "fake-b.sqlite").unlink()
        before = _sent(fake)
        finished = {k: _marker(run, k).stat().st_mtime_ns for k, v in _statuses(run).items() if v == "ok"}
        assert "0" in finished  # the first model's candidate, at least, was finished before the resume
        resumed = run_experiment(_cfg(suite, fake.url, cache, "run.resume=true"), run)
        after = _sent(fake)

    assert not resumed.incomplete
    # Every finished candidate was reused as it was (its marker not rewritten), whichever agent made it.
    assert {k: _marker(run, k).stat().st_mtime_ns for k in finished} == finished
    if interruption == "budget":
        # Both starts together sent exactly what the uninterrupted run sent: nothing twice, nothing missing.
        assert after == whole_sent
    else:
        again = after - before
        models = Counter(json.loads(k)[0] for k in again.elements())
        assert set(models) == {"fake-b"}  # the first model's finished candidate was reused, not asked again
        assert again == Counter({k: v for k, v in whole_sent.items() if json.loads(k)[0] == "fake-b"})
    record = read_record(run)
    assert [c["agent"] for c in record["candidates"]] == [c["agent"] for c in whole_record["candidates"]]
    assert _roles(run)["agents"] == whole_roles["agents"]
    assert {i: d["candidate"] for i, d in record["decisions"].items()} == {
        i: d["candidate"] for i, d in whole_record["decisions"].items()
    }


def test_a_resume_under_another_judge_is_refused_naming_it(
    suite_and_script: tuple[Path, ByDataset], tmp_path: Path
) -> None:
    suite, script = suite_and_script
    with FakeServer(Dispatch(script)) as fake:
        first = overrides(suite, fake.url, *judge(fake.url))
        run_experiment(compose_config(first), tmp_path / "run")
        other = [*first, "judge.model=openai/other-judge", "run.resume=true"]
        changed = re.escape("judge.model: 'openai/fake-judge' → 'openai/other-judge'")
        with pytest.raises(ResumeMismatch, match=changed):
            run_experiment(compose_config(other), tmp_path / "run")

"""Shared pieces of the model-roles tests (a plain module: test files import it by a unique name): one fake
server plays two pool models (each a replay of the rules agent) and a scripted judge."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest import MonkeyPatch

from agents.judge import CHOOSE_TOOL
from testbed.fakeserver import ByDataset, FakeServer, Reply, Step, tool_call
from testbed.fakeserver.replay import replay_script

DATASET = "synth-chest-xray-dicom"
JUDGE_USAGE = (500, 7)
CACHE_ENV = (
    "MEDSTRAT_REQUEST_CACHE"  # experiments.run.request_cache.CACHE_ENV (not imported: it imports LiteLLM)
)


class Dispatch:
    """Judge requests (they offer ``choose_candidate``) get ``verdict``; agent requests replay the rules."""

    def __init__(self, agents: ByDataset) -> None:
        self.agents = agents
        self.verdict: Step = Reply(tool_calls=(tool_call(CHOOSE_TOOL, {"candidate": 1}),), usage=JUDGE_USAGE)
        self.judged = 0

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        names = {t.get("function", {}).get("name") for t in request.get("tools") or []}
        if CHOOSE_TOOL in names:
            self.judged += 1
            return self.verdict
        return self.agents(request, serial)


def make_suite(base: Path) -> tuple[Path, ByDataset]:
    """The one-dataset suite under ``base/suite`` and the replay script of the rules agent on it."""
    from testbed.synth.suite import generate_suite

    generate_suite(base / "suite", size="small", only=[DATASET])
    script = replay_script(base / "suite" / DATASET, work_dir=base / "rules", usage=(300, 40), check=False)
    return base / "suite", ByDataset({DATASET: script})


def model(url: str, name: str) -> str:
    """A pool entry's agent: the LiteLLM agent on the fake server."""
    return f"{{name: litellm, model: '{name}', api_base: '{url}', api_key: sk-fake, vision: true}}"


def overrides(suite: Path, url: str, *extra: str) -> list[str]:
    """S3 over a pool of two fake models and the rules baseline sampling at temperature 0.9.

    The rules candidates differ from the models' on some samples, so the judge has something to decide.
    """
    pool = (
        f"+strategy.pool=[{{agent: {model(url, 'openai/fake-a')}, n: 1}}, "
        f"{{agent: {model(url, 'openai/fake-b')}, n: 1}}, "
        "{agent: {name: rules, temperature: 0.9}, n: 3, label: rules-hot}]"
    )
    return [
        "strategy=s3",
        "benchmark=dir",
        f"benchmark.root={suite}",
        pool,
        "run.progress=false",
        "run.report=false",
        "run.processes=1",
        *extra,
    ]


def judge(url: str) -> list[str]:
    """``selector=llm_judge`` with the judge on the fake server, priced."""
    return [
        "selector=llm_judge",
        "judge=litellm",
        "judge.model=openai/fake-judge",
        f"judge.api_base={url}",
        "+judge.api_key=sk-fake",
        "judge.price={input_per_mtok: 1.0, output_per_mtok: 2.0}",
    ]


def read_record(run: Path) -> dict[str, Any]:
    """The dataset's ``result.json`` of a run folder."""
    doc: dict[str, Any] = json.loads((run / "selected" / DATASET / "result.json").read_text(encoding="utf-8"))
    return doc


@dataclass(frozen=True)
class RolesRuns:
    """Two finished runs of `overrides` on one suite, shared by the model-roles tests (never modify them:
    copy a run folder, and the request cache, to ``tmp_path`` before anything writes into it).

    Attributes:
        suite: The one-dataset suite.
        script: The rules agent's replay on it (a new `Dispatch` for a server of a test's own).
        fake: The server both runs called; it stays up for the session (a re-ranking may ask the judge).
        dispatch: Its dispatch (the tests compare its counts before and after what they do).
        plain: The pool run selected by validator_max (no judge).
        plain_table: That run's results table (`RunOutcome.table`).
        plain_requests: The requests the server had received when the plain run ended (it was the first).
        judged: The same pool judged by the scripted judge (candidate 1), with ``run.report=true``.
        judged_asked: The judge calls of the judged run.
        cache: The judged run's request cache (``judge.cache=auto`` read ``$MEDSTRAT_REQUEST_CACHE``: a test
            points that variable at its own copy).
    """

    suite: Path
    script: ByDataset
    fake: FakeServer
    dispatch: Dispatch
    plain: Path
    plain_table: str
    plain_requests: int
    judged: Path
    judged_asked: int
    cache: Path


@contextmanager
def roles_runs(base: Path) -> Iterator[RolesRuns]:
    """Make `RolesRuns` under ``base``; the server is stopped on exit."""
    from experiments import compose_config
    from experiments.run.experiment import run_experiment

    suite, script = make_suite(base)
    dispatch = Dispatch(script)
    cache = base / "requests.sqlite"
    with FakeServer(dispatch) as fake, MonkeyPatch.context() as env:
        # Session fixtures are set up before the function-scoped `_no_shared_request_cache`: off here too.
        env.setenv(CACHE_ENV, "off")
        plain = run_experiment(compose_config(overrides(suite, fake.url)), base / "plain")
        sent = len(fake.requests)
        # The judge's cache is ``auto``: a test re-ranking from it gives `CACHE_ENV` a copy of `cache`.
        env.setenv(CACHE_ENV, str(cache))
        judged = [*judge(fake.url), "judge.cache=auto", "run.report=true"]
        run_experiment(compose_config(overrides(suite, fake.url, *judged)), base / "judged")
        asked = dispatch.judged
        yield RolesRuns(
            suite, script, fake, dispatch, base / "plain", plain.table, sent, base / "judged", asked, cache
        )

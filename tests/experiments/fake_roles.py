"""Shared pieces of the model-roles tests (a plain module: test files import it by a unique name): one fake
server plays two pool models (each a replay of the rules agent) and a scripted judge."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.fakeserver import ByDataset, Reply, Step, tool_call
from agents.fakeserver.replay import replay_script
from agents.judge import CHOOSE_TOOL

DATASET = "synth-chest-xray-dicom"
JUDGE_USAGE = (500, 7)


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
    from benchmark.synth.suite import generate_suite

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

"""One run budget (`agents.budget.Budget`): handed by the plan to every role that takes one, never to a role
by patching it afterwards; each spend charged once (per model call by whoever holds it, per candidate for
the others); the judge asks nothing once it is spent, and asks a dataset's verdicts concurrently; every
priced role is checked before a dollar budget is accepted."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import multiprocessing
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_roles import JUDGE_USAGE, Dispatch, judge

from agents.base import Candidate, Task, Usage
from agents.budget import Budget, BudgetExceeded
from experiments import compose_config
from experiments.run.experiment import run_experiment
from experiments.run.options import check_budget
from experiments.run.plan import build_components
from experiments.run.processes import SharedLedger
from strategies.context import RunContext, call_agent, use
from testbed.fakeserver import ByDataset, FakeServer, Step
from testbed.fakeserver.judge import is_judge_request

REPO = Path(__file__).resolve().parents[2]


# -- the plan hands the one budget to every role ----------------------------------------------------------


def _model(model: str, url: str = "http://127.0.0.1:9/v1", price: bool = True) -> str:
    priced = ", price: {input_per_mtok: 1.0, output_per_mtok: 2.0}" if price else ""
    return f"{{name: litellm, model: '{model}', api_base: '{url}', api_key: sk-fake{priced}}}"


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")  # the roles are built, never called


def test_every_role_that_calls_a_model_holds_the_plans_one_budget(key: None) -> None:
    cfg = compose_config(
        [
            "strategy=s3",
            f"+strategy.pool=[{{agent: {_model('openai/a')}, n: 2}}, {{agent: {_model('openai/b')}, n: 1}}, "
            "{agent: rules, n: 1}]",
            "reviser=litellm",
            "reviser.model=openai/r",
            "selector=llm_judge",
            "judge=litellm",
            "judge.model=openai/j",
            "run.budget_tokens=1000",
        ]
    )
    plan = build_components(cfg)
    holders = [a for a in plan.agent.agents() if hasattr(a, "budget")]  # type: ignore[attr-defined]
    assert len(holders) == 3  # two pool models and the reviser; the rules agent takes no budget
    assert all(a.budget is plan.budget for a in holders)
    assert plan.judge is not None and plan.judge.budget is plan.budget  # type: ignore[attr-defined]
    assert plan.budget.max_tokens == 1000 and plan.budget.max_usd is None


def test_no_code_sets_a_budget_on_an_object_it_did_not_build() -> None:
    # The old way: the runner assigned `agent.budget = ...` after the agent was built.
    offenders = []
    for package in ("agents", "strategies", "experiments", "validator", "benchmark", "core"):
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Assign):
                    continue
                for t in node.targets:
                    if (
                        isinstance(t, ast.Attribute)
                        and t.attr == "budget"
                        and not (isinstance(t.value, ast.Name) and t.value.id == "self")
                    ):
                        offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_a_dollar_budget_is_refused_when_any_pool_member_or_the_judge_is_unpriced(key: None) -> None:
    unpriced = _model("openai/zz-unpriced-9", price=False)
    pool = f"+strategy.pool=[{{agent: {_model('openai/a')}, n: 2}}, {{agent: {unpriced}, n: 1}}]"
    cfg = compose_config(["strategy=s3", pool, "run.budget_usd=1.0"])
    plan = build_components(cfg)
    with pytest.raises(ValueError, match=r"LiteLLM has no price for openai/zz-unpriced-9"):
        check_budget(cfg.run, plan.agent, plan.judge)
    judged = compose_config(
        [
            "strategy=s3",
            "selector=llm_judge",
            "judge=litellm",
            "judge.model=openai/zz-unpriced-judge",
            "run.budget_usd=1.0",
        ]
    )
    plan = build_components(judged)
    with pytest.raises(ValueError, match=r"no price for openai/zz-unpriced-judge.*judge\.price"):
        check_budget(judged.run, plan.agent, plan.judge)


# -- each spend is charged once -------------------------------------------------------------------------


class _Spender:
    """Makes a candidate that cost ``tokens``; with a budget it charges them per call (half in a task it
    starts, half in a worker thread), as a model agent does."""

    name = "spender"

    def __init__(self, tokens: int, budget: Budget | None = None) -> None:
        self.tokens = tokens
        self.budget = budget

    async def generate(self, task: Task) -> Candidate:
        if self.budget is not None:
            budget = self.budget

            async def call() -> None:
                budget.check()
                budget.charge(self.tokens // 2, 0.0)

            await asyncio.gather(call())
            await asyncio.to_thread(budget.charge, self.tokens - self.tokens // 2, 0.0)
        (task.output_dir / "standardized_annotations").mkdir(parents=True)
        (task.output_dir / "standardized_annotations" / "0.json").write_text("{}")
        return Candidate(output_dir=task.output_dir, usage=Usage(prompt_tokens=self.tokens, calls=1))

    async def revise(self, task: Task, candidate: Candidate, feedback: Any, fields: Any) -> Candidate:
        raise NotImplementedError


def _task(tmp_path: Path) -> Task:
    return Task(root=tmp_path, name="d", entries=(), out_dir=tmp_path / "selected")


def test_a_candidate_is_charged_once_whether_its_agent_holds_the_budget_or_not(tmp_path: Path) -> None:
    budget = Budget(max_tokens=10_000)
    holder, plain = _Spender(300, budget), _Spender(50)

    async def main() -> None:
        use(RunContext(candidates_root=tmp_path / "c", budget=budget))
        await asyncio.gather(
            call_agent(_task(tmp_path), "0", holder.generate, 0),
            call_agent(_task(tmp_path), "1", plain.generate, 1),
            call_agent(_task(tmp_path), "2", holder.generate, 2),
        )

    asyncio.run(main())
    assert budget.spent.tokens == 300 + 50 + 300  # not 2 x 300 for the holder's candidates
    assert not budget.hit


def test_once_spent_no_agent_call_starts_and_the_budget_is_marked_hit(tmp_path: Path) -> None:
    budget = Budget(max_tokens=100)
    plain = _Spender(60)

    async def main() -> list[Candidate | None]:
        use(RunContext(candidates_root=tmp_path / "c", budget=budget))
        return [await call_agent(_task(tmp_path), str(k), plain.generate, k) for k in range(4)]

    made = asyncio.run(main())
    assert [m is not None for m in made] == [True, True, False, False]
    assert budget.hit and budget.spent.tokens == 120


def _add_in_child(ledger: SharedLedger) -> None:
    budget = Budget(max_tokens=100, ledger=ledger)
    budget.charge(70, 0.5)
    with contextlib.suppress(BudgetExceeded):
        budget.check()


def test_worker_processes_share_one_budget_through_the_shared_ledger() -> None:
    ctx = multiprocessing.get_context("fork")
    ledger = SharedLedger(ctx)
    budget = Budget(max_tokens=100, ledger=ledger)
    budget.charge(40, 0.25)
    child = ctx.Process(target=_add_in_child, args=(ledger,))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert budget.spent.tokens == 110 and budget.spent.usd == pytest.approx(0.75)
    assert budget.hit and budget.exhausted  # the child's refused check is the run's


# -- the judge under the budget, through the real LiteLLM path --------------------------------------------


class _Counting(Dispatch):
    """`fake_roles.Dispatch` (the judge chooses candidate 1) answering each verdict after ``hold_s``, counting
    how many are answered at once."""

    def __init__(self, agents: ByDataset) -> None:
        super().__init__(agents)
        self.hold_s = 0.0
        self.in_flight = self.most_in_flight = 0
        self._lock = threading.Lock()

    def __call__(self, request: Mapping[str, Any], serial: int) -> Step:
        if not is_judge_request(request):
            return self.agents(request, serial)
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(self.hold_s)  # the server answers each request in its own thread
        with self._lock:
            self.in_flight -= 1
            return super().__call__(request, serial)


@pytest.fixture(scope="module")
def server(roles_suite: tuple[Path, ByDataset]) -> Iterator[tuple[FakeServer, _Counting]]:
    """One fake server for the module; each test resets the counters it reads (`_reset`)."""
    dispatch = _Counting(roles_suite[1])
    with FakeServer(dispatch) as fake:
        yield fake, dispatch


def _reset(dispatch: _Counting, hold_s: float = 0.0) -> None:
    dispatch.judged = dispatch.most_in_flight = 0
    dispatch.hold_s = hold_s


@dataclass(frozen=True)
class _Serial:
    """The judged run without a budget, its verdicts asked one by one: what both judge tests compare with."""

    run: Path
    verdicts: int
    spent_tokens: int
    most_in_flight: int


@pytest.fixture(scope="module")
def serial(
    roles_suite: tuple[Path, ByDataset],
    server: tuple[FakeServer, _Counting],
    tmp_path_factory: pytest.TempPathFactory,
) -> _Serial:
    """The unbudgeted run once for the module (never modified by a test). Each verdict is held 0.3 s, long
    enough that verdicts asked together would overlap at the server; one by one, they never do."""
    suite, _ = roles_suite
    fake, dispatch = server
    _reset(dispatch, hold_s=0.3)
    run = tmp_path_factory.mktemp("judged") / "serial"
    free = run_experiment(compose_config(_judged_run(suite, fake.url, "judge.concurrency=1")), run)
    assert not free.incomplete
    spent = json.loads((run / "usage.json").read_text(encoding="utf-8"))["budget"]
    made = _Serial(run, dispatch.judged, spent["spent_tokens"], dispatch.most_in_flight)
    _reset(dispatch)
    return made


def _judged_run(suite: Path, url: str, *extra: str) -> list[str]:
    return [
        "strategy=s3",
        "benchmark=dir",
        f"benchmark.root={suite}",
        f"+strategy.pool=[{{agent: {_model('openai/fake-a', url)}, n: 2}}, "
        "{agent: {name: rules, temperature: 0.9}, n: 3, label: rules-hot}]",
        *judge(url),
        "run.progress=false",
        "run.report=false",
        "run.processes=1",
        *extra,
    ]


def _decisions(run: Path) -> list[dict[str, Any]]:
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_the_judge_is_charged_per_verdict_and_asks_nothing_once_the_budget_is_spent(
    roles_suite: tuple[Path, ByDataset], server: tuple[FakeServer, _Counting], serial: _Serial, tmp_path: Path
) -> None:
    suite, _ = roles_suite
    fake, dispatch = server
    verdicts = serial.verdicts
    assert verdicts >= 3, "the scripted candidates must leave the judge at least three samples to decide"
    judge_tokens = verdicts * sum(JUDGE_USAGE)
    candidates = serial.spent_tokens - judge_tokens  # the judge's verdicts are charged to the run's budget

    # Room for the candidates and one and a half verdicts, verdicts asked one by one: the second verdict
    # starts (the budget is not spent yet), the third does not.
    _reset(dispatch)
    limit = candidates + sum(JUDGE_USAGE) * 3 // 2
    capped = run_experiment(
        compose_config(_judged_run(suite, fake.url, f"run.budget_tokens={limit}", "judge.concurrency=1")),
        tmp_path / "capped",
    )
    assert dispatch.judged == 2
    assert capped.incomplete
    usage = json.loads((tmp_path / "capped" / "usage.json").read_text(encoding="utf-8"))["budget"]
    assert usage["hit"] and usage["spent_tokens"] == candidates + 2 * sum(JUDGE_USAGE)
    statuses = [d["decision"]["details"]["judge"]["status"] for d in _decisions(tmp_path / "capped")]
    assert statuses.count("chosen") == 2 and statuses.count("budget") == verdicts - 2
    roles = json.loads((tmp_path / "capped" / "roles.json").read_text(encoding="utf-8"))
    assert roles["judge"]["calls"] == 2  # the refused verdicts cost nothing and are not counted as calls
    assert roles["judge"]["budget"] == verdicts - 2
    assert f"{verdicts - 2} not asked (run budget spent)" in (tmp_path / "capped" / "roles.md").read_text()


def test_a_datasets_verdicts_are_asked_concurrently_and_decide_as_one_by_one(
    roles_suite: tuple[Path, ByDataset], server: tuple[FakeServer, _Counting], serial: _Serial, tmp_path: Path
) -> None:
    suite, _ = roles_suite
    fake, dispatch = server
    assert serial.most_in_flight == 1
    verdicts = serial.verdicts
    _reset(dispatch, hold_s=0.3)  # as for the serial run: verdicts asked together overlap at the server
    run_experiment(compose_config(_judged_run(suite, fake.url, "judge.concurrency=4")), tmp_path / "together")
    assert dispatch.judged == verdicts >= 3
    assert 2 <= dispatch.most_in_flight <= 4
    one_by_one, together = _decisions(serial.run), _decisions(tmp_path / "together")
    assert [d["decision"]["candidate"] for d in together] == [d["decision"]["candidate"] for d in one_by_one]
    assert [d["decision"]["reason"] for d in together] == [d["decision"]["reason"] for d in one_by_one]

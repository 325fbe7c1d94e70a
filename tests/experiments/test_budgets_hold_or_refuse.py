"""Budgets that hold or refuse (issue 23 item 1), through the command line and the real LiteLLM path: a dollar
budget over a model LiteLLM cannot price is refused before any call; with ``agent.price`` it is charged and
stops the run; the request cache is on by default and its hits are in the summary line.

The command runs in this process (`cli_in_process`: its exit code, output and run folder are what a fresh
interpreter gives, without litellm's import each time); `test_fail_loud` runs it in a fresh one."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process
from cli_process import nonblank_lines as _lines
from replay_turns import USAGE, suite_script

from testbed.fakeserver import FakeServer

PROG = "python -m experiments: error: "
UNPRICED = "openai/gpt-4o-mnii"  # the typo: not in LiteLLM's price map


@pytest.fixture(scope="module")
def script(suite: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return suite_script(suite, tmp_path_factory.mktemp("reference"))


def _llm(suite: Path, server: FakeServer, run: Path, *extra: str, model: str = UNPRICED) -> list[str]:
    return [
        "strategy=s0",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "agent=litellm",
        f"agent.model={model}",
        f"agent.api_base={server.url}",
        "agent.temperature=0",
        "agent.batch_size=10",  # the scripts are one conversation per dataset (10 samples): no plan phase
        "run.processes=1",
        "run.progress=false",
        "run.report=false",
        f"hydra.run.dir={run}",
        *extra,
    ]


@pytest.fixture
def cli(capfd: pytest.CaptureFixture[str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``python -m experiments ARGS`` with ``env`` in ``cwd``, run in this process."""

    def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
        return run_cli_in_process(args, env, cwd, capfd)

    return run


@pytest.fixture
def env(cli_env: dict[str, str]) -> dict[str, str]:
    return {**cli_env, "OPENAI_API_KEY": "sk-fake"}


def test_a_usd_budget_over_a_model_litellm_cannot_price_is_refused_before_any_call(
    suite: Path, script, env: dict[str, str], cli, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    with FakeServer(script) as server:
        done = cli(_llm(suite, server, run, "run.budget_usd=0.001"), env, tmp_path)
        assert server.chat_requests == []
    assert done.returncode == 2, done.stderr
    assert _lines(done.stderr) == [
        f"{PROG}run.budget_usd=0.001 cannot be enforced: LiteLLM has no price for {UNPRICED}, so its calls "
        "would count $0; give the price (agent.price.input_per_mtok=... agent.price.output_per_mtok=..., "
        "dollars per million tokens) or cap tokens instead (run.budget_tokens=...)"
    ]
    assert not run.exists()


def test_with_a_price_the_usd_budget_is_charged_and_stops_the_run(
    suite: Path, script, env: dict[str, str], cli, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    price = ("agent.price.input_per_mtok=1", "agent.price.output_per_mtok=10")
    per_call = (USAGE[0] * 1 + USAGE[1] * 10) / 1e6  # $0.002
    with FakeServer(script) as server:
        done = cli(_llm(suite, server, run, "run.budget_usd=0.003", *price), env, tmp_path)
        calls = len(server.chat_requests)
    assert done.returncode == 3, done.stderr  # INCOMPLETE: the budget held
    budget = json.loads((run / "usage.json").read_text())["budget"]
    assert budget["hit"] is True
    assert budget["spent_usd"] == pytest.approx(calls * per_call)
    assert calls < 6  # two datasets × three calls would be the whole run


@pytest.mark.parametrize(
    ("option", "why"),
    [
        ("run.budget_usd=0", "a budget must be positive"),
        ("run.budget_usd=-1", "a budget must be positive"),
        ("run.budget_tokens=-5", "a budget cannot be negative"),
    ],
)
def test_a_budget_that_cannot_be_spent_is_refused_with_no_folder(
    suite: Path, script, env: dict[str, str], cli, tmp_path: Path, option: str, why: str
) -> None:
    run = tmp_path / "run"
    with FakeServer(script) as server:
        done = cli(_llm(suite, server, run, option, model="openai/gpt-4o-mini"), env, tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = _lines(done.stderr)
    assert line.startswith(f"{PROG}{option}: {why} (null for no limit)")
    assert not run.exists()


def test_the_request_cache_is_on_by_default_and_its_hits_are_in_the_summary(
    suite: Path, script, env: dict[str, str], cli, tmp_path: Path
) -> None:
    env = {k: v for k, v in env.items() if k != "MEDSTRAT_REQUEST_CACHE"}  # the default, as a user has it
    with FakeServer(script) as server:
        first = cli(_llm(suite, server, tmp_path / "a", model="openai/gpt-4o-mini"), env, tmp_path)
        bought = len(server.chat_requests)
        again = cli(_llm(suite, server, tmp_path / "b", model="openai/gpt-4o-mini"), env, tmp_path)
        replayed = len(server.chat_requests) - bought
        off = cli(
            _llm(suite, server, tmp_path / "c", "agent.cache=false", model="openai/gpt-4o-mini"),
            env,
            tmp_path,
        )
        uncached = len(server.chat_requests) - bought - replayed
    assert first.returncode == again.returncode == off.returncode == 0, again.stderr
    assert bought > 0 and replayed == 0 and uncached == bought
    assert (Path(env["MEDSTRAT_CACHE"]) / "requests.sqlite").is_file()  # the user's cache folder
    assert f" · seed 0: {bought} calls bought, 0 from the cache · " in first.stdout.splitlines()[0]
    assert f" · seed 0: 0 calls bought, {bought} from the cache · " in again.stdout.splitlines()[0]
    assert f" · seed 0: {bought} calls bought, 0 from the cache · " in off.stdout.splitlines()[0]

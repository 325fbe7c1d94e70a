"""The LiteLLM agent from its typed objects and from the flat ``agent.*`` keys users write.

`LiteLLMAgent` takes a `ModelConfig` and an `AgentOptions`; the config still says ``agent.model``,
``agent.batch_size``, ``agent.server.slots``, and a misspelt key or a bad value is refused in one line that
lists every valid option (`core.registry.call_with_options` over both objects' fields).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from cli_in_process import run_cli_in_process

from agents.llm.agent import LiteLLMAgent
from agents.llm.options import AgentOptions
from agents.model.config import ModelConfig, TokenPrice
from agents.model.retry import RetryPolicy
from agents.model.server import ServerOptions
from agents.tools.code_tool import CodeLimits
from core.registry import OptionError
from experiments import compose_config
from experiments.run.plan import build_agent

KEY = "sk-fake"
VALID = ", ".join(
    [f.name for f in dataclasses.fields(ModelConfig)]
    + [f.name for f in dataclasses.fields(AgentOptions)]
    + ["budget"]
)


def test_the_agent_is_built_from_its_two_typed_objects() -> None:
    model = ModelConfig("openai/fake-model", api_base="http://127.0.0.1:9/v1", api_key=KEY, timeout_s=5.0)
    agent = LiteLLMAgent(model, AgentOptions(batch_size=4, vision=False, tools=frozenset({"code"})))
    assert (agent.model, agent.batch_size, agent.vision, agent.code) == ("openai/fake-model", 4, False, True)
    assert agent.client.timeout_s == 5.0 and agent.client.retry == RetryPolicy()
    assert KEY not in repr(model)  # the key is never shown


def test_each_object_turns_the_configs_forms_into_its_types_once() -> None:
    model = ModelConfig(
        "openai/x",
        retry={"max_attempts": 2},  # type: ignore[arg-type]
        price={"input_per_mtok": 1, "output_per_mtok": None},  # type: ignore[arg-type]
        server={"slots": 1, "context_window": "auto"},  # type: ignore[arg-type]
    )
    assert model.retry == RetryPolicy(max_attempts=2) and model.price == TokenPrice(1.0, 0.0)
    assert model.server == ServerOptions(None, 1, 0.0)
    options = AgentOptions(tools="code", code_limits={"cpu_s": 3}, vision="true")  # type: ignore[arg-type]
    assert options.tools == frozenset({"code"}) and options.code_limits == CodeLimits(cpu_s=3)
    assert options.vision is True and AgentOptions(vision="auto").vision is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_size": 0}, "agent.batch_size must be 1 or more, got 0"),
        ({"tool_processes": -1}, "agent.tool_processes must be 0 or more, got -1"),
        ({"mode": "scripts"}, "unknown agent.mode 'scripts'; valid: ['tools', 'script', 'guided']"),
        ({"tools": ["web"]}, "unknown agent.tools ['web']; valid: ['code']"),
        ({"vision": "maybe"}, "agent.vision must be auto, true or false, got 'maybe'"),
    ],
)
def test_agent_options_refuse_a_bad_value_by_name(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        AgentOptions(**options)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_the_flat_keys_of_the_config_reach_both_objects() -> None:
    cfg = compose_config(
        [
            "agent=litellm",
            "agent.model=openai/fake-model",
            "agent.api_base=http://127.0.0.1:9/v1",
            "+agent.api_key=sk-fake",
            "agent.cache=false",
            "agent.vision=false",
            "agent.batch_size=4",
            "agent.retry.max_attempts=2",
            "agent.script.max_runs=3",
        ]
    )
    agent = build_agent(cfg.agent)
    assert isinstance(agent, LiteLLMAgent)
    assert (agent.batch_size, agent.temperature, agent.script.max_runs) == (4, 0.7, 3)
    assert agent.client.retry.max_attempts == 2 and agent.client.cache is None


def test_a_target_naming_the_agent_class_takes_the_same_flat_keys() -> None:
    flat = {"_target_": "agents.llm.agent.LiteLLMAgent", "model": "openai/fake-model", "api_key": KEY}
    agent = build_agent({**flat, "batch_size": "4", "vision": "false"})
    assert isinstance(agent, LiteLLMAgent) and (agent.batch_size, agent.vision) == (4, False)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"xyz": 1}, f"agent.xyz: unknown option of LiteLLMAgent; valid options: {VALID}"),
        (
            {"batch_size": "abc"},
            "agent.batch_size='abc': input should be a valid integer, unable to parse string as an integer; "
            f"valid options: {VALID}",
        ),
        (
            {"batch_size": 0},
            "agent: LiteLLMAgent refused its options (agent.batch_size must be 1 or more, got 0); "
            f"valid options: {VALID}",
        ),
        (
            {"server": {"slots": 0}},
            "agent: LiteLLMAgent refused its options (agent.server.slots=0: must be 1 or more); "
            f"valid options: {VALID}",
        ),
    ],
)
def test_an_unknown_key_or_a_bad_value_is_one_line_naming_every_valid_option(
    given: dict[str, object], message: str
) -> None:
    with pytest.raises(OptionError) as caught:
        build_agent({"name": "litellm", "model": "openai/fake-model", "api_key": KEY, **given})
    assert str(caught.value) == message


def test_the_command_refuses_an_unknown_agent_key_in_one_line_before_any_work(
    suite: Path, cli_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    args = [
        "strategy=s0",
        "benchmark=dir",
        f"benchmark.root={suite}",
        "agent=litellm",
        "agent.model=openai/fake-model",
        "+agent.xyz=1",
        f"hydra.run.dir={tmp_path / 'run'}",
        "run.progress=false",
        "run.report=false",
    ]
    done = run_cli_in_process(args, {**cli_env, "OPENAI_API_KEY": KEY}, tmp_path, capfd)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [
        f"python -m experiments: error: agent.xyz: unknown option of LiteLLMAgent; valid options: {VALID}"
    ]
    assert not (tmp_path / "run" / "candidates").exists()


def test_the_judge_takes_the_model_keys_it_shares_with_the_agent_and_its_own_defaults() -> None:
    from agents.model.judge import LiteLLMJudge
    from experiments.run.roles import build_judge

    agent_cfg = {"name": "litellm", "model": "openai/fake-model", "api_key": KEY, "batch_size": 2}
    judge = build_judge(None, {**agent_cfg, "temperature": 0.7, "extra_params": {"top_p": 0.5}})
    assert isinstance(judge, LiteLLMJudge) and judge.model == "openai/fake-model"
    assert (judge.temperature, judge.max_tokens_per_call, judge.vision) == (0.7, 256, True)
    assert judge.client.extra_params == {}  # a verdict's request is the judge's own
    with pytest.raises(
        OptionError, match=r"^judge\.xyz: unknown option of LiteLLMJudge; valid options: model, "
    ):
        build_judge({"name": "litellm", "model": "openai/fake-judge", "api_key": KEY, "xyz": 1}, agent_cfg)

"""`compose_config` composes a set of overrides once per process while the config files and ``sys.path`` stay
as they were, and hands out copies: a caller that edits its config never changes another caller's."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from experiments import compose_config
from experiments._config_path import _COMPOSED, _compose_key, config_dir


def test_a_repeated_composition_is_equal_and_independent_of_the_first() -> None:
    first = compose_config(["strategy=s3", "run.seed=7"])
    assert _compose_key(config_dir(), ["strategy=s3", "run.seed=7"]) in _COMPOSED  # composed once, kept
    second = compose_config(["strategy=s3", "run.seed=7"])
    assert OmegaConf.to_container(first) == OmegaConf.to_container(second)
    assert first is not second
    second.strategy.n = 99
    assert compose_config(["strategy=s3", "run.seed=7"]).strategy.n == first.strategy.n != 99
    with pytest.raises(Exception, match="not in struct"):  # the struct flag survives the copy
        second.no_such_key = 1


def test_other_overrides_compose_another_config() -> None:
    assert compose_config(["strategy=s0"]).strategy.name == "s0"
    assert compose_config(["strategy=s4"]).strategy.name == "s4"


def test_an_edited_added_or_removed_config_file_changes_the_key(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(config_dir(), conf)
    before = _compose_key(conf, ["strategy=s3"])
    assert before == _compose_key(conf, ["strategy=s3"])
    assert before != _compose_key(conf, ["strategy=s0"])
    strategy = conf / "strategy" / "s3.yaml"
    strategy.write_text(strategy.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    edited = _compose_key(conf, ["strategy=s3"])
    assert edited != before
    (conf / "strategy" / "mine.yaml").write_text("name: mine\n", encoding="utf-8")
    added = _compose_key(conf, ["strategy=s3"])
    assert added != edited
    (conf / "strategy" / "mine.yaml").unlink()
    assert _compose_key(conf, ["strategy=s3"]) == edited


def test_a_changed_sys_path_changes_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _compose_key(config_dir(), ["strategy=s3"])
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])  # where Hydra looks for its plugins
    assert _compose_key(config_dir(), ["strategy=s3"]) != before


def test_a_search_path_override_is_composed_every_time(tmp_path: Path) -> None:
    """The files of an added search path are not watched: such a composition is never reused."""
    assert _compose_key(config_dir(), [f"hydra.searchpath=[file://{tmp_path}]"]) is None
    validator = tmp_path / "validator"
    validator.mkdir()
    profile = validator / "mine.yaml"
    profile.write_text("defaults:\n  - evidence\n  - _self_\nname: mine\n", encoding="utf-8")
    assert compose_config([f"validator={profile}"]).validator.name == "mine"
    profile.write_text("defaults:\n  - evidence\n  - _self_\nname: mine_edited\n", encoding="utf-8")
    assert compose_config([f"validator={profile}"]).validator.name == "mine_edited"


# Override lists as tests and perf drivers write them: group choices, plain values of every kind (paths,
# numbers, booleans, null, lists, quoted strings, interpolations), values under a chosen group, and the
# overrides Hydra applies in order (`+`, `++`, `~`) next to plain values of the same keys.
VARIED = [
    ["benchmark=dir", "benchmark.root=/tmp/a", "strategy=s3", "strategy.n=4", "run.seed=3"],
    ["benchmark.root=/tmp/b", "benchmark=dir", "run.progress=false", "run.budget_usd=0.5"],
    [
        "agent=litellm",
        "agent.model=openai/gpt-4o-mini",
        "agent.api_base=http://127.0.0.1:8/v1",
        "agent.temperature=0",
    ],
    ["agent=litellm", "benchmark.datasets=[synth-a,synth-b]", "run.resume=true", "agent.cache=null"],
    ["agent=litellm", "agent.model='a b=c'", "run.seed=${run.concurrency}", "strategy=s4"],
    ["agent=litellm", "+agent.extra_flag=1", "agent.model=x", "agent.retry.max_attempts=2"],
    ["agent=litellm", "agent.retry.max_attempts=2", "++agent.retry.max_attempts=5"],
    ["agent=litellm", "agent.model=first", "~agent.model"],
    ["agent=litellm", "++agent.retry={max_attempts: 7}", "agent.retry.initial_s=0.5"],
    ["strategy=s3", "+strategy.pool=[{agent: {name: rules}, n: 2}]", "strategy.n=2", "hydra.run.dir=/tmp/r"],
]


@pytest.mark.parametrize("overrides", VARIED, ids=[str(i) for i in range(len(VARIED))])
def test_plain_values_set_on_a_kept_composition_equal_hydras_own_composition(overrides: list[str]) -> None:
    from hydra import compose, initialize_config_dir

    _COMPOSED.clear()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        hydras = compose("config", overrides=overrides)
    ours = compose_config(overrides)
    assert OmegaConf.to_yaml(ours) == OmegaConf.to_yaml(hydras)
    assert OmegaConf.to_container(ours, resolve=True) == OmegaConf.to_container(hydras, resolve=True)
    assert OmegaConf.is_struct(ours) and OmegaConf.is_struct(hydras)


def test_calls_differing_in_a_plain_value_compose_the_rest_once() -> None:
    _COMPOSED.clear()
    first = compose_config(["benchmark=dir", "benchmark.root=/tmp/one", "strategy=s3"])
    second = compose_config(["benchmark=dir", "benchmark.root=/tmp/two", "strategy=s3"])
    assert (first.benchmark.root, second.benchmark.root) == ("/tmp/one", "/tmp/two")
    # The two calls and the one composition of their common overrides: three entries, not two compositions.
    assert _compose_key(config_dir(), ["benchmark=dir", "strategy=s3"]) in _COMPOSED
    assert len(_COMPOSED) == 3


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["benchmark.no_such_key=1"], "Could not override 'benchmark.no_such_key'"),
        (["strategy=s3", "strategy.n=[1,"], "no viable alternative"),
    ],
)
def test_a_value_hydra_refuses_fails_with_hydras_error(overrides: list[str], message: str) -> None:
    from hydra.errors import HydraException

    _COMPOSED.clear()
    with pytest.raises(HydraException, match=message):
        compose_config(overrides)

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

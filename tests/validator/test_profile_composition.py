"""Validator profiles compose: ``evidence_conventions`` is ``evidence`` plus three changes, read the same way
by the validator's loader and by Hydra, so a check added to ``evidence.yaml`` reaches both profiles."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from validator.registry import ProfileError, load_profile, profile_dirs

CONF = Path(__file__).resolve().parents[2] / "conf"
CONVENTIONS = {"plane_follows_rule": 0.05, "task_matches_source_name": 0.06}


def test_conventions_are_evidence_plus_three_changes() -> None:
    evidence, conventions = load_profile("evidence"), load_profile("evidence_conventions")
    assert conventions.name == "evidence_conventions"
    assert conventions.weights == {**evidence.weights, **CONVENTIONS}
    assert list(conventions.weights) == [*evidence.weights, *CONVENTIONS]  # inherited order, new ones after
    assert conventions.options == {**evidence.options, "subject_folder_share": 0.3}
    assert [(s.name, w) for s, w in conventions.meta_checks] == [(s.name, w) for s, w in evidence.meta_checks]


def test_the_conventions_file_copies_no_weight_of_evidence() -> None:
    own = yaml.safe_load((CONF / "validator" / "evidence_conventions.yaml").read_text())
    assert own["defaults"] == ["evidence", "_self_"]
    assert own["checks"] == CONVENTIONS and "meta_checks" not in own


def test_a_check_added_to_the_base_reaches_the_profile_extending_it(tmp_path: Path) -> None:
    # A copy of the two files, the base edited as a later change to evidence.yaml would edit it.
    shutil.copy(CONF / "validator" / "evidence_conventions.yaml", tmp_path)
    base = yaml.safe_load((CONF / "validator" / "evidence.yaml").read_text())
    base["checks"]["valid_json_object"] = 0.5  # a weight changed
    base["checks"]["annotation_type_consistency"] = 0.07  # a (registered) check added
    (tmp_path / "evidence.yaml").write_text(yaml.safe_dump(base, sort_keys=False))
    composed = load_profile(tmp_path / "evidence_conventions.yaml").weights
    assert composed["valid_json_object"] == 0.5
    assert composed["annotation_type_consistency"] == 0.07
    assert {k: composed[k] for k in CONVENTIONS} == CONVENTIONS


def test_hydra_composes_the_same_profile_as_the_loader() -> None:
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose(config_name="config", overrides=["validator=evidence_conventions"])
    node = OmegaConf.to_container(cfg.validator)
    assert isinstance(node, dict) and "defaults" not in node
    loaded = load_profile("evidence_conventions")
    assert node["checks"] == loaded.weights
    assert node["options"] == loaded.options
    assert node["profile"] == "evidence_conventions"


def test_self_goes_last_when_left_out(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text("defaults: [evidence]\nprofile: mine\nchecks:\n  record: 0.9\n")
    profile = load_profile(tmp_path / "mine.yaml")
    assert profile.name == "mine" and profile.weights["record"] == 0.9
    assert set(profile.weights) == set(load_profile("evidence").weights)


def test_a_circle_of_profiles_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("defaults: [b, _self_]\nprofile: a\n")
    (tmp_path / "b.yaml").write_text("defaults: [a, _self_]\nprofile: b\n")
    with pytest.raises(ProfileError, match=r"in a circle \(a -> b -> a\)"):
        load_profile(tmp_path / "a.yaml")


def test_an_unknown_base_names_the_available_profiles(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("defaults: [evidense]\nprofile: a\n")
    with pytest.raises(ProfileError, match=r"unknown validator profile 'evidense'; available: .*evidence"):
        load_profile(tmp_path / "a.yaml")
    (tmp_path / "b.yaml").write_text("defaults: evidence\nprofile: b\n")
    with pytest.raises(ProfileError, match="'defaults' is a list of profile names"):
        load_profile(tmp_path / "b.yaml")
    assert profile_dirs()  # the built-in profiles were searched

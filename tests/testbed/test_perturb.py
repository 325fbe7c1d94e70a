"""The perturbation simulator: each mistake changes the output as it says, draws are seeded, labels hold."""

from __future__ import annotations

import filecmp
import json
import random
from pathlib import Path

import pytest

from testbed.perturb import (
    CATEGORIES,
    MISTAKES,
    MixConfig,
    correct_annotations,
    miss_rates,
    perturb_folder,
    read_mistakes,
    replay_sample,
)
from testbed.perturb.apply import _fresh_state
from testbed.synth.suite import generate_suite

# One dataset per shape the catalogue needs: 3D segmentation, 2D detection, 2D classification, video.
DATASETS = ("synth-brain-mr-nifti", "synth-thyroid-us-bmp", "synth-pneumonia-parquet", "synth-echo-avi")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("perturb-suite")
    generate_suite(root, size="small", seed=0, oracle="oracle", only=list(DATASETS))
    return root


def correct(suite: Path, name: str) -> Path:
    return suite / name / "VLM" / "oracle" / "agent1_data_organization"


def sample_files(folder: Path, index: int) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for sub, suffix in (("images", ".png"), ("masks", ".png"), ("standardized_annotations", ".json")):
        path = folder / sub / f"{index}{suffix}"
        out[sub] = path.read_bytes() if path.is_file() else None
    return out


def test_every_mistake_declares_a_known_category_and_fields() -> None:
    assert len(MISTAKES) >= 25
    assert {m.category for m in MISTAKES.values()} == set(CATEGORIES)
    for m in MISTAKES.values():
        assert m.fields and m.description and isinstance(m.raw_evidence, bool)


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_each_mistake_applies_somewhere_and_changes_the_written_sample(
    suite: Path, tmp_path: Path, name: str
) -> None:
    kind = MISTAKES[name]
    for dataset in DATASETS:
        docs = correct_annotations(correct(suite, dataset))
        out = tmp_path / dataset
        state = _fresh_state(correct(suite, dataset), out, suite / dataset, 0, docs)
        state.rng = random.Random(7)
        if not kind.apply(state):
            continue
        state.write()
        assert sample_files(out, 0) != sample_files(correct(suite, dataset), 0), name
        return
    pytest.fail(f"{name} applied to no sample of {DATASETS}")


def test_the_same_seed_writes_byte_identical_candidates_and_labels(suite: Path, tmp_path: Path) -> None:
    name = "synth-brain-mr-nifti"
    args = (correct(suite, name), suite / name)
    first = perturb_folder(args[0], tmp_path / "a", args[1], seed=3, key=name, config=MixConfig(clean=0.2))
    again = perturb_folder(args[0], tmp_path / "b", args[1], seed=3, key=name, config=MixConfig(clean=0.2))
    other = perturb_folder(args[0], tmp_path / "c", args[1], seed=4, key=name, config=MixConfig(clean=0.2))
    assert first == again and first != other
    cmp = filecmp.dircmp(
        tmp_path / "a" / "agent1_data_organization", tmp_path / "b" / "agent1_data_organization"
    )
    assert not cmp.diff_files and not cmp.left_only and not cmp.right_only
    assert (tmp_path / "a" / "mistakes.json").read_bytes() == (tmp_path / "b" / "mistakes.json").read_bytes()


def test_clean_samples_are_the_correct_files_and_dirty_ones_are_labelled(suite: Path, tmp_path: Path) -> None:
    name = "synth-thyroid-us-bmp"
    labels = perturb_folder(
        correct(suite, name), tmp_path, suite / name, seed=0, key=name, config=MixConfig(clean=0.5)
    )
    read = read_mistakes(tmp_path)
    assert set(read) == set(labels) == set(correct_annotations(correct(suite, name)))
    out = tmp_path / "agent1_data_organization"
    for index, applied in labels.items():
        assert read[index] == frozenset(a.name for a in applied)
        same = sample_files(out, index) == sample_files(correct(suite, name), index)
        assert same == (not applied), (index, applied)
    meta = json.loads((tmp_path / "mistakes.json").read_text())["meta"]
    assert all({"index", "mistake", "seed", "category", "raw_evidence", "fields"} <= set(m) for m in meta)


def test_the_clean_rate_is_the_expected_fraction_of_clean_samples(suite: Path, tmp_path: Path) -> None:
    clean = total = 0
    for seed in range(8):
        for name in ("synth-pneumonia-parquet", "synth-thyroid-us-bmp"):
            labels = perturb_folder(
                correct(suite, name), tmp_path / f"{seed}{name}", suite / name, seed=seed, key=name
            )
            clean += sum(1 for v in labels.values() if not v)
            total += len(labels)
    assert 0.30 < clean / total < 0.60  # 45 % by default; 160 samples (±3.8 standard deviations)


def test_a_mix_restricted_to_one_category_draws_only_from_it(suite: Path, tmp_path: Path) -> None:
    name = "synth-pneumonia-parquet"
    config = MixConfig(clean=0.0, mix={"format": 1.0}, default_weight=0.0)
    labels = perturb_folder(correct(suite, name), tmp_path, suite / name, seed=1, key=name, config=config)
    kinds = {a.name for v in labels.values() for a in v}
    assert kinds and all(MISTAKES[k].category == "format" for k in kinds)
    with pytest.raises(ValueError, match="unknown mistake"):
        MixConfig(mix={"no_such_mistake": 1.0})


def test_replaying_without_the_mistakes_restores_the_correct_sample(suite: Path, tmp_path: Path) -> None:
    name = "synth-brain-mr-nifti"
    labels = perturb_folder(
        correct(suite, name), tmp_path, suite / name, seed=2, key=name, config=MixConfig(clean=0)
    )
    out = tmp_path / "agent1_data_organization"
    index = next(i for i, v in labels.items() if v)
    before = sample_files(out, index)
    replay_sample(correct(suite, name), out, suite / name, index, [(a.name, a.seed) for a in labels[index]])
    assert sample_files(out, index) == before  # same mistakes, same seeds: the same bytes
    replay_sample(correct(suite, name), out, suite / name, index, [])
    assert sample_files(out, index) == sample_files(correct(suite, name), index)


def test_miss_rates_count_opportunities_only_where_a_candidate_lacks_the_mistake() -> None:
    a = {0: frozenset({"neighbour_image"}), 1: frozenset({"string_ids"}), 2: frozenset()}
    b = {0: frozenset(), 1: frozenset({"string_ids"}), 2: frozenset({"wrong_label"})}
    c = {0: frozenset({"neighbour_image"}), 1: frozenset({"string_ids"}), 2: frozenset()}
    rates = miss_rates({0: 0, 1: 1, 2: 1}, [a, b, c])
    # sample 1: every candidate has string_ids, so no selector could avoid it: no opportunity.
    assert rates == {"neighbour_image": (1, 1), "wrong_label": (1, 1)}
    assert miss_rates({0: 1, 2: 0}, [a, b, c]) == {"neighbour_image": (0, 1), "wrong_label": (0, 1)}


def test_read_mistakes_is_empty_without_labels_and_loud_on_a_broken_file(tmp_path: Path) -> None:
    assert read_mistakes(tmp_path) == {}
    (tmp_path / "mistakes.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"mistakes\.json"):
        read_mistakes(tmp_path)


def test_wrong_label_after_string_ids_keeps_the_string_id(suite: Path, tmp_path: Path) -> None:
    # Both mistakes stay labelled on the sample, so both must stay in the written output: a wrong label
    # drawn after `string_ids` is written as a string id too, not silently turned back into an int.
    dataset = "synth-pneumonia-parquet"
    docs = correct_annotations(correct(suite, dataset))
    state = _fresh_state(correct(suite, dataset), tmp_path / "out", suite / dataset, 0, docs)
    before = docs[0]["tasks"]["classification"]["label"]
    assert MISTAKES["string_ids"].apply(state) and MISTAKES["wrong_label"].apply(state)
    label = state.annotation["tasks"]["classification"]["label"]
    assert isinstance(label, str) and label != str(before)

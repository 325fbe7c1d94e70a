"""Image and trace evidence of issue 25: a written image that is another plane, the source clipped to 8 bits,
a blank placeholder or the neighbour's image scores below the faithful rendering of the declared source, and
an ``extra`` that lost keys its sibling samples fill is caught."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from testbed.perturb import MixConfig, perturb_folder, read_mistakes
from validator._raw import PixelStats
from validator.checks.render_range import clipped_cast
from validator.validate import clear_cache, validate

IMAGE_MISTAKES = ("other_plane", "clipped_to_8bit", "placeholder_image", "neighbour_image")
RENDER_DATASETS = ("synth-brain-mr-nifti", "synth-nuclei-tiff16", "synth-chest-xray-dicom")


@pytest.fixture(scope="module")
def render_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A volume, a 16-bit TIFF and a DICOM dataset with their correct outputs."""
    from testbed.synth.suite import generate_suite

    root = tmp_path_factory.mktemp("render-suite")
    generate_suite(root, size="small", seed=0, oracle="oracle", only=list(RENDER_DATASETS))
    return root


@pytest.mark.parametrize("mistake", IMAGE_MISTAKES)
def test_a_wrong_rendering_scores_below_the_faithful_one(
    render_suite: Path, tmp_path: Path, mistake: str
) -> None:
    applied = 0
    for name in RENDER_DATASETS:
        dataset = render_suite / name
        correct = dataset / "VLM" / "oracle" / "agent1_data_organization"
        out = tmp_path / name
        perturb_folder(
            correct, out, dataset, seed=1, config=MixConfig(clean=0.0, mix={mistake: 1.0}, default_weight=0.0)
        )
        labels = read_mistakes(out)
        clear_cache()
        faithful = validate(correct, dataset, profile="evidence")
        wrong = validate(out / "agent1_data_organization", dataset, profile="evidence")
        for index, kinds in labels.items():
            if mistake not in kinds:
                continue
            applied += 1
            ok = faithful.samples[index].checks["source_renders_like_image"].score
            bad = wrong.samples[index].checks["source_renders_like_image"].score
            assert bad < ok, (
                name,
                index,
                wrong.samples[index].checks["source_renders_like_image"].result.message,
            )
            assert wrong.samples[index].total < faithful.samples[index].total
    assert applied > 0  # the mistake applied somewhere, or this test would assert nothing


def test_clipped_cast_is_told_from_the_histogram() -> None:
    cast = PixelStats(64, 64, 0.70, b"", white=0.30, black=0.40)
    windowed = PixelStats(64, 64, 0.05, b"", white=0.03, black=0.02)
    assert clipped_cast((0.30, 0.40), cast, windowed) is not None
    assert clipped_cast((0.30, 0.40), windowed, windowed) is None  # the faithful rendering itself
    assert clipped_cast((0.01, 0.01), cast, windowed) is None  # the source barely leaves 0..255
    assert clipped_cast((0.60, 0.05), cast, windowed) is None  # white share unlike the raw share above 255
    assert clipped_cast(None, cast, windowed) is None  # an 8-bit source
    # The faithful rendering itself saturated (a CT window): the histogram cannot tell, the cast's pixels can.
    ct_window = PixelStats(64, 64, 0.81, b"faithful", white=0.09, black=0.72)
    ct_cast = PixelStats(64, 64, 0.79, b"cast", white=0.07, black=0.72)
    assert clipped_cast((0.07, 0.72), ct_cast, ct_window) is None
    assert clipped_cast((0.07, 0.72), ct_cast, ct_window, (0.0, b"cast")) is not None  # pixel for pixel
    assert clipped_cast((0.07, 0.72), ct_cast, ct_window, (0.2, b"other")) is not None  # clearly closer
    assert clipped_cast((0.07, 0.72), ct_window, ct_window, (0.0, b"cast")) is None  # the faithful image


def _drop(doc: dict[str, Any], key: str) -> None:
    del doc["context"]["sample"]["extra"][key]


def test_extra_missing_a_key_its_siblings_fill_is_caught(oracle_copy: Any) -> None:
    cand = oracle_copy("synth-kidney-ct-nifti")
    extra = cand.load(0)["context"]["sample"]["extra"]
    keys = [k for k, v in extra.items() if k not in ("source_file", "original_filename") and v]
    assert keys, "the oracle's extra carries more than the file name"
    clean = validate(cand.root, cand.dataset, profile="evidence")
    assert all(s.checks["extra_like_peers"].score == 1.0 for s in clean.samples.values())
    doc = cand.load(3)
    _drop(doc, keys[0])
    cand.save(3, doc)
    clear_cache()
    report = validate(cand.root, cand.dataset, profile="evidence")
    outcome = report.samples[3].checks["extra_like_peers"]
    assert outcome.score < 1.0 and keys[0] in outcome.result.message
    assert all(report.samples[i].checks["extra_like_peers"].score == 1.0 for i in report.samples if i != 3)


def test_extra_check_abstains_without_siblings(oracle_copy: Any, tmp_path: Path) -> None:
    cand = oracle_copy("synth-kidney-ct-nifti")
    dataset = tmp_path / "one"
    shutil.copytree(cand.dataset, dataset, symlinks=True, ignore=shutil.ignore_patterns("oracle"))
    manifest = dataset / "VLM" / "random.txt"
    manifest.write_text(manifest.read_text().splitlines()[0] + "\n")
    report = validate(cand.root, dataset, profile="evidence")
    outcome = report.samples[min(report.samples)].checks["extra_like_peers"]
    assert outcome.score == 1.0 and "skipped" in outcome.result.details
    assert json.loads(json.dumps(outcome.result.details))  # JSON-able, as stored reports need

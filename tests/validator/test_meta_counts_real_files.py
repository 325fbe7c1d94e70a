"""data_volume.total on datasets whose manifest lists files no reader decodes (the realfiles suite)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.realfiles import build_realfiles
from validator.validate import validate

ORACLE = "oracle"
DATASET = "rf-mr-transfer-syntaxes"  # two expected failures: a JPEG-LS file and a truncated file


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("realfiles-meta")
    build_realfiles(root, only=[DATASET], oracle=ORACLE)
    return root / DATASET


def _candidate(dataset: Path) -> Path:
    return dataset / "VLM" / ORACLE / "agent1_data_organization"


def _set_total(candidate: Path, total: int) -> None:
    meta_path = candidate / "data_meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["data_volume"]["total"] = total
    meta_path.write_text(json.dumps(meta), encoding="utf-8")


def _total_check(candidate: Path, dataset: Path) -> float:
    report = validate(candidate, dataset, profile="evidence", use_cache=False)
    return report.data_meta.scores()["meta_total_matches_manifest"]


def test_counting_only_the_decodable_samples_or_the_whole_manifest_both_pass(dataset: Path) -> None:
    candidate = _candidate(dataset)
    manifest = len((dataset / "VLM" / "random.txt").read_text(encoding="utf-8").split("\n")) - 1
    written = len(list((candidate / "standardized_annotations").glob("*.json")))
    assert written == manifest - 2, (written, manifest)  # the oracle honestly skips both undecodable files
    _set_total(candidate, written)
    assert _total_check(candidate, dataset) == 1.0
    _set_total(candidate, manifest)
    assert _total_check(candidate, dataset) == 1.0


def test_a_skipped_decodable_sample_is_still_caught(dataset: Path, tmp_path: Path) -> None:
    import shutil

    candidate = tmp_path / "agent1_data_organization"
    shutil.copytree(_candidate(dataset), candidate)
    annotations = sorted((candidate / "standardized_annotations").glob("*.json"))
    annotations[0].unlink()  # a readable source, skipped: not evidence of an undecodable file
    _set_total(candidate, len(annotations) - 1)
    assert _total_check(candidate, dataset) == 0.0

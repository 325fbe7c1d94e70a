"""Issue 24, item 3: the dataset name, subject and modality against the documentation and the headers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_evidence_support import NAMES, _candidate, _score

from validator import dataset_facts
from validator.validate import clear_cache, validate

pytest.importorskip("skimage")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from testbed.foreign import build_foreign

    out = tmp_path_factory.mktemp("fx-docs")
    build_foreign(out, only=NAMES, oracle="oracle")
    return out


def _set(path: str, value: Any) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        node = doc
        *head, last = path.split(".")
        for key in head:
            node = node[key]
        node[last] = value

    return edit


@pytest.mark.parametrize("value", ["fx-fundus-nnunet", "Dataset042_RetinaVessel"])
def test_folder_id_as_dataset_name_is_flagged_when_documented(
    suite: Path, tmp_path: Path, value: str
) -> None:
    folder = _candidate(suite, "fx-fundus-nnunet", tmp_path, _set("record.dataset_name", value))
    score, message, _ = _score(suite, "fx-fundus-nnunet", folder, "dataset_name_documented")
    assert score == 0.0 and "'Retina Vessel Tiles'" in message and "dataset.json" in message


@pytest.mark.parametrize("value", ["Retina Vessel Tiles", "retina vessel tiles"])
def test_documented_name_in_any_case_is_accepted(suite: Path, tmp_path: Path, value: str) -> None:
    folder = _candidate(suite, "fx-fundus-nnunet", tmp_path, _set("record.dataset_name", value))
    assert _score(suite, "fx-fundus-nnunet", folder, "dataset_name_documented")[0] == 1.0


def test_folder_id_is_accepted_when_no_document_names_the_dataset(suite: Path, tmp_path: Path) -> None:
    folder = _candidate(suite, "fx-tiff-stations", tmp_path)
    assert _score(suite, "fx-tiff-stations", folder, "dataset_name_documented")[0] == 1.0


def test_meta_dataset_name_is_checked_too(suite: Path, tmp_path: Path) -> None:
    folder = _candidate(suite, "fx-fundus-nnunet", tmp_path)
    meta = folder / "data_meta.json"
    doc = json.loads(meta.read_text(encoding="utf-8"))
    clear_cache()
    dataset_facts.clear()
    good = validate(folder, suite / "fx-fundus-nnunet", use_cache=False).data_meta
    assert good.checks["meta_dataset_name_documented"].result.score == 1.0
    doc["dataset_name"] = "fx-fundus-nnunet"
    meta.write_text(json.dumps(doc), encoding="utf-8")
    clear_cache()
    bad = validate(folder, suite / "fx-fundus-nnunet", use_cache=False).data_meta
    assert bad.checks["meta_dataset_name_documented"].result.score == 0.0


def test_subject_contradicting_patient_id_is_flagged(suite: Path, tmp_path: Path) -> None:
    name = "fx-rtimage-sop-labels"
    folder = _candidate(suite, name, tmp_path, _set("context.sample.extra.subject_id", "PAT_A"))
    score, message, _ = _score(suite, name, folder, "subject_matches_header")
    assert score < 1.0 and "'RT-0001'" in message
    for value in ("RT-0001", "rt-0001"):
        ok = _candidate(suite, name, tmp_path / value, _set("context.sample.extra.subject_id", value))
        assert _score(suite, name, ok, "subject_matches_header")[0] == 1.0


def test_subject_contradicting_the_bids_participant_is_flagged(suite: Path, tmp_path: Path) -> None:
    name = "fx-bids-func-4d"
    folder = _candidate(suite, name, tmp_path, _set("context.sample.extra.subject_id", "sub-02"))
    score, message, _ = _score(suite, name, folder, "subject_matches_header")
    assert score < 1.0 and "sub-01" in message
    ok = _candidate(suite, name, tmp_path / "ok", _set("context.sample.extra.subject_id", "01"))
    assert _score(suite, name, ok, "subject_matches_header")[0] == 1.0


def test_modality_contradicting_an_unmapped_header_code_is_flagged(suite: Path, tmp_path: Path) -> None:
    name = "fx-rtimage-sop-labels"
    folder = _candidate(suite, name, tmp_path, _set("context.sample.modality_primary", "CT"))
    score, message, _ = _score(suite, name, folder, "modality_states_header")
    assert score == 0.0 and "RTIMAGE" in message
    for value in ("RTIMAGE", "RT Image"):
        ok = _candidate(
            suite, name, tmp_path / value.replace(" ", ""), _set("context.sample.modality_primary", value)
        )
        assert _score(suite, name, ok, "modality_states_header")[0] == 1.0

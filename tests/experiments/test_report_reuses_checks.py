"""report.html's per-sample checks come from the stored report of the candidate each sample was kept from
(what the selection saw) when the selected sample is that candidate's: no validation is run again, which is
what makes a reselection with its report fast. A selected sample that is not a kept candidate's as it stands
(a merge, an edit) makes the report validate the selected folder, as before."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

import validator.validate
from experiments.report.collect import load_run
from experiments.run.experiment import run_experiment


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []
    real = validator.validate.validate

    def counted(folder: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(Path(folder))
        return real(folder, *args, **kwargs)

    monkeypatch.setattr(validator.validate, "validate", counted)
    return seen


def test_an_s3_runs_report_shows_the_kept_candidates_stored_checks_without_validating(
    make_cfg: Callable[..., DictConfig], tmp_path: Path, validations: list[Path]
) -> None:
    run = tmp_path / "run"
    run_experiment(make_cfg("strategy=s3", "strategy.n=3", "run.report=false"), run)
    validations.clear()
    view = load_run(run)
    assert validations == []
    checked = 0
    for dataset in view.datasets:
        for sample in dataset.samples:
            if sample.decision.get("candidate") is None:
                continue
            # The total the selection compared is the total the report shows.
            assert sample.validator_total == pytest.approx(sample.decision["score"], abs=1e-6)
            assert sample.checks_from == f"candidate {sample.decision['candidate']}"  # the page says whose
            assert sample.checks and all(
                {"name", "score", "weight", "message"} <= set(c) for c in sample.checks
            )
            checked += 1
    assert checked > 0


def test_a_selected_sample_that_is_no_candidates_as_it_stands_is_validated_again(
    make_cfg: Callable[..., DictConfig], tmp_path: Path, validations: list[Path]
) -> None:
    run = tmp_path / "run"
    run_experiment(make_cfg("strategy=s3", "strategy.n=3", "run.report=false"), run)
    dataset = sorted(p.name for p in (run / "selected").iterdir() if p.is_dir())[0]
    annotations = run / "selected" / dataset / "agent1_data_organization" / "standardized_annotations"
    first = sorted(annotations.glob("*.json"))[0]
    doc = json.loads(first.read_text(encoding="utf-8"))
    doc["context"] = {**doc.get("context", {}), "edited_after_selection": True}
    first.write_text(json.dumps(doc), encoding="utf-8")
    validations.clear()
    view = load_run(run)
    assert [p.parent.name for p in validations] == [dataset]  # that dataset only, validated as before
    edited = next(d for d in view.datasets if d.name == dataset)
    assert all(s.checks_from == "" for s in edited.samples)


def test_a_selected_folder_whose_report_a_reselection_stored_by_its_bytes_is_read_not_validated(
    make_cfg: Callable[..., DictConfig], suite: Path, tmp_path: Path, validations: list[Path]
) -> None:
    """S4's merged folder is no candidate's as it stands; a reselection stores its report by the folder's
    bytes beside the candidates (`validator.report_store.validate_by_content`), and the page reads it."""
    from validator.report_store import validate_by_content
    from validator.validate import get_profile

    run = tmp_path / "run"
    run_experiment(make_cfg("strategy=s3", "strategy.n=3", "run.report=false"), run)
    dataset = sorted(p.name for p in (run / "selected").iterdir() if p.is_dir())[0]
    selected = run / "selected" / dataset / "agent1_data_organization"
    first = sorted((selected / "standardized_annotations").glob("*.json"))[0]
    doc = json.loads(first.read_text(encoding="utf-8"))
    doc["context"] = {**doc.get("context", {}), "edited_after_selection": True}
    first.write_text(json.dumps(doc), encoding="utf-8")
    store = run / "candidates" / dataset / "reports"
    validate_by_content(selected, suite / dataset, get_profile("evidence"), store)
    (stored,) = store.glob("*.json")
    doc = json.loads(stored.read_text(encoding="utf-8"))
    for checks in doc["samples"].values():
        for result in checks.values():
            result["m"] = "read from the store"
    stored.write_text(json.dumps(doc), encoding="utf-8")
    validations.clear()
    view = load_run(run)
    assert validations == []
    edited = next(d for d in view.datasets if d.name == dataset)
    assert edited.samples and all(
        c["message"] == "read from the store" for s in edited.samples for c in s.checks
    )

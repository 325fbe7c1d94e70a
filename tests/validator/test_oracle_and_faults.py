"""Evidence profile on the bundled suite: the oracle scores 1.0, and each conformance fault f01-f17 applied to
an
oracle sample lowers that sample's score with a message naming the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from benchmark.discover import Dataset
from validator.validate import validate

if TYPE_CHECKING:
    Candidate = Any  # the conftest helper class (tests do not import each other)

CLS, SEG3D = "synth-histology-png", "synth-kidney-ct-nifti"


def test_oracle_scores_one_on_every_sample_under_evidence(suite: Path, suite_dataset: str) -> None:
    ds = Dataset.from_root(suite / suite_dataset)
    report = validate(ds.prediction_dir("oracle"), ds)
    failures = {
        i: [(o.name, o.result.message) for o in s.failed()]
        for i, s in report.samples.items()
        if s.total < 1.0
    }
    assert failures == {}
    assert len(report.samples) == len(ds.indices)
    assert report.data_meta.total == pytest.approx(1.0)


def _score(c: Candidate, index: int) -> tuple[float, str]:
    report = validate(c.root, c.dataset, use_cache=False)
    sample = report.samples[index]
    return sample.total, " | ".join(o.result.message for o in sample.failed())


def _edit(c: Candidate, index: int, fn: Any) -> None:
    doc = c.load(index)
    fn(doc)
    c.save(index, doc)


def _sample(doc: dict[str, Any]) -> dict[str, Any]:
    s: dict[str, Any] = doc["context"]["sample"]
    return s


FAULTS: dict[str, tuple[str, int, Any, str]] = {}


def fault(name: str, dataset: str, index: int, field: str) -> Any:
    def register(fn: Any) -> Any:
        FAULTS[name] = (dataset, index, fn, field)
        return fn

    return register


@fault("f01_wrong_source", CLS, 1, "source_file")
def _f01(c: Candidate, i: int) -> None:
    prev = _sample(c.load(i - 1))["extra"]
    _edit(
        c,
        i,
        lambda d: _sample(d)["extra"].update(
            {k: v for k, v in prev.items() if k not in {"label_text", "class_name", "map_type"}}
        ),
    )


@fault("f02_demog_null", CLS, 0, "context.sample.sex")
def _f02(c: Candidate, i: int) -> None:
    _edit(c, i, lambda d: _sample(d).update(sex=None, race_ethnicity=None, site_id=None))


@fault("f03_three_D_key", SEG3D, 0, "three_D")
def _f03(c: Candidate, i: int) -> None:
    def edit(d: dict[str, Any]) -> None:
        sp = d["media_geometry"]["spatial"]
        sp["three_D"] = sp.pop("three_d")

    _edit(c, i, edit)


@fault("f04_two_spatial", CLS, 0, "spatial")
def _f04(c: Candidate, i: int) -> None:
    _edit(
        c,
        i,
        lambda d: d["media_geometry"]["spatial"].update(
            three_d={"volume_shape_voxels": [1, 64, 64], "slice_axis": 0, "slice_index": 0}
        ),
    )


@fault("f05_all_tasks", CLS, 0, "task branch")
def _f05(c: Candidate, i: int) -> None:
    _edit(
        c,
        i,
        lambda d: d["tasks"].update(
            segmentation={
                "schema_variant": "2d_coco",
                "classes": {"0": "background", "1": "x"},
                "coco_2d": {"format": "label_map_png", "mask_path": "masks/0.png", "label_values": [0, 1]},
            },
            detection={
                "schema_variant": "2d",
                "class_names": {"1": "x"},
                "boxes2d": [{"bbox": [1, 1, 4, 4], "category_id": 1, "category_name": "x"}],
            },
        ),
    )


@fault("f06_wrong_task_type", CLS, 0, "task_type")
def _f06(c: Candidate, i: int) -> None:
    _edit(c, i, lambda d: d["media_geometry"]["media"].update(task_type="segmentation"))


@fault("f07_wrong_dimension", CLS, 0, "dimension")
def _f07(c: Candidate, i: int) -> None:
    _edit(c, i, lambda d: d["media_geometry"]["media"].update(dimension="3D"))


@fault("f08_wrong_modality", CLS, 0, "modality_primary")
def _f08(c: Candidate, i: int) -> None:
    _edit(c, i, lambda d: _sample(d).update(modality_primary="CT"))


@fault("f09_wrong_label", CLS, 0, "label")
def _f09(c: Candidate, i: int) -> None:
    def edit(d: dict[str, Any]) -> None:
        cls = d["tasks"]["classification"]
        k = (int(cls["label"]) + 1) % len(cls["class_names"])
        name = cls["class_names"][str(k)]
        cls.update(label=k, label_name=name)
        _sample(d)["extra"].update(label_text=name, class_name=name)

    _edit(c, i, edit)


@fault("f10_missing_images", CLS, 1, "image")
def _f10(c: Candidate, i: int) -> None:
    (c.root / "images" / f"{i}.png").unlink()


@fault("f11_corrupt_png", CLS, 2, "image")
def _f11(c: Candidate, i: int) -> None:
    (c.root / "images" / f"{i}.png").write_bytes(bytes(range(256)))


@fault("f12_image_path_mismatch", CLS, 0, "record.image_path")
def _f12(c: Candidate, i: int) -> None:
    _edit(c, i, lambda d: d["record"].update(image_path=f"images/{i}.jpg"))


@fault("f13_extra_emptied", CLS, 0, "original_filename")
def _f13(c: Candidate, i: int) -> None:
    # The source is still stated in provenance.notes ("Source file: X"), which the format allows.
    _edit(c, i, lambda d: _sample(d).update(extra={}))


@fault("f13b_extra_and_notes_emptied", CLS, 0, "source_file")
def _f13b(c: Candidate, i: int) -> None:
    def edit(d: dict[str, Any]) -> None:
        _sample(d).update(extra={})
        d["provenance"]["notes"] = "standardized"

    _edit(c, i, edit)


@fault("f16_desc_keys", CLS, 0, "__desc")
def _f16(c: Candidate, i: int) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["media_geometry"]["media"].update(task_type__desc="the task", dimension__options=["2D", "3D"])
        _sample(d)["sex__desc"] = "sex"

    _edit(c, i, edit)


@fault("f17_shifted_json_names", CLS, 4, "record.image_path")
def _f17(c: Candidate, i: int) -> None:
    # Every <j>.json moves to <j+1>.json; sample i now holds sample i-1's annotation.
    folder = c.root / "standardized_annotations"
    docs = {int(p.stem): p.read_text() for p in folder.glob("*.json")}
    for p in folder.glob("*.json"):
        p.unlink()
    for j, text in docs.items():
        (folder / f"{j + 1}.json").write_text(text)


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_single_fault_lowers_the_sample_score_and_names_the_field(oracle_copy: Any, name: str) -> None:
    dataset, index, apply, field = FAULTS[name]
    c = oracle_copy(dataset)
    before, _ = _score(c, index)
    apply(c, index)
    after, message = _score(c, index)
    assert before == pytest.approx(1.0)
    assert after < before, message
    assert field in message


@pytest.mark.parametrize("name", ["f14_no_meta", "f15_meta_totals_wrong"])
def test_meta_faults_lower_the_data_meta_score_and_name_the_field(oracle_copy: Any, name: str) -> None:
    c = oracle_copy(CLS)
    meta = c.root / "data_meta.json"
    if name == "f14_no_meta":
        meta.unlink()
        field = "data_meta.json"
    else:
        data = json.loads(meta.read_text())
        n = data["data_volume"]["total"]
        data["data_volume"]["total"], data["valid_image_n"]["total"] = n - 1, n + 1
        meta.write_text(json.dumps(data))
        field = "data_volume.total"
    report = validate(c.root, c.dataset, use_cache=False)
    assert report.data_meta.total < 0.8
    assert any(field in o.result.message for o in report.data_meta.failed())


def test_fault_on_one_sample_leaves_the_others_at_one(oracle_copy: Any) -> None:
    c = oracle_copy(CLS)
    doc = copy.deepcopy(c.load(3))
    doc["media_geometry"]["media"]["dimension"] = "video"
    c.save(3, doc)
    report = validate(c.root, c.dataset, use_cache=False)
    assert report.samples[3].total < 1.0
    assert all(s.total == pytest.approx(1.0) for i, s in report.samples.items() if i != 3)

"""Ground-truth loading: typed models that keep unknown keys, the raw view, and located errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmark.errors import GroundTruthError
from benchmark.groundtruth import (
    GroundTruth,
    GTSample,
    ground_truth_path,
    load_dataset_ground_truth,
    load_ground_truth,
    load_ground_truth_dict,
    write_ground_truth,
)


def minimal_gt(**overrides: Any) -> dict[str, Any]:
    gt: dict[str, Any] = {
        "schema_version": "1.1",
        "dataset_name": "Toy",
        "description": "玩具数据集",
        "expected_count": 1,
        "modality_primary": "CT",
        "task_type": "segmentation",
        "dimension": "3d",
        "format": {"top_level_blocks": ["record"]},
        "content": {"expected_dataset_name": "Toy"},
        "data_meta_expected": {"required_keys": ["dataset_name"]},
        "classes": ["background", "organ"],
        "samples": {
            "0": {
                "source_stem": "case_1",
                "class": "organ",
                "map_type": "pixel_mask",
                "expected_record": {"dataset_name": "Toy"},
                "expected_context_sample": {"modality_primary": "CT"},
                "expected_extra": {"source_file": "data/case_1/img.nii.gz", "subject_id": None},
                "expected_extra_keys": ["source_file"],
                "expected_tasks": {"segmentation": {"schema_variant": "3d_mask"}},
            }
        },
    }
    gt.update(overrides)
    return gt


def write(path: Path, obj: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def real_ground_truths(mdsbench_dir: Path) -> list[Path]:
    files = sorted((mdsbench_dir / "examples").glob("*/ground_truth*.json"))
    files += sorted((mdsbench_dir / "conformance" / "cases").glob("*/VLM/ground_truth*.json"))
    return files


def test_every_real_ground_truth_loads_keeps_unknown_keys_and_round_trips(mdsbench_dir: Path) -> None:
    files = real_ground_truths(mdsbench_dir)
    assert len(files) >= 6, f"expected the published ground truths under {mdsbench_dir}"
    for path in files:
        text = path.read_text(encoding="utf-8")
        gt = load_ground_truth(path)
        assert gt.schema_version == "1.1"
        assert gt.indices == list(range(20)), path
        # Keys the model does not declare (metrics, evaluation_protocol, ...) survive.
        assert {"metrics", "evaluation_protocol", "match_annotations_to_gt"} <= set(gt.model_extra or {}), (
            path
        )
        dumped = gt.model_dump(by_alias=True)
        assert dumped == json.loads(text), path
        # Same keys in the same order: re-serialising reproduces the published file byte for byte.
        assert json.dumps(dumped, indent=2, ensure_ascii=False) == text, path
        assert load_ground_truth_dict(path) == json.loads(text)


def test_class_is_read_from_the_json_key_and_dumped_back_under_it() -> None:
    sample = GTSample.model_validate({"class": "Kidney + tumor", "map_type": "pixel_mask"})
    assert sample.class_ == "Kidney + tumor"
    assert sample.model_dump(by_alias=True) == {"class": "Kidney + tumor", "map_type": "pixel_mask"}
    assert GTSample(class_="x").model_dump(by_alias=True) == {"class": "x"}


def test_source_to_truth_is_accepted_as_the_samples_map(tmp_path: Path) -> None:
    data = minimal_gt()
    data["source_to_truth"] = data.pop("samples")
    gt = load_ground_truth(write(tmp_path / "gt.json", data))
    assert gt.sample(0).source_stem == "case_1"
    assert "samples" in gt.model_dump(by_alias=True)


def test_geometry_extension_is_typed_and_other_unknown_sample_keys_are_kept(tmp_path: Path) -> None:
    data = minimal_gt()
    data["samples"]["0"]["geometry"] = {
        "image_size": [64, 48],
        "axis": 0,
        "slice_index": 12,
        "frame_index": None,
        "mask_file": "VLM/gt_geometry/0.png",
        "boxes": [[1, 2, 3, 4]],
        "box_category_ids": [1],
    }
    data["samples"]["0"]["our_note"] = {"why": "kept"}
    gt = load_ground_truth(write(tmp_path / "gt.json", data))
    geometry = gt.sample(0).geometry
    assert geometry is not None
    assert (geometry.image_size, geometry.slice_index, geometry.boxes) == ([64, 48], 12, [[1, 2, 3, 4]])
    assert gt.sample(0).model_extra == {"our_note": {"why": "kept"}}
    assert gt.model_dump(by_alias=True) == data


def test_raw_dict_view_keeps_values_exactly_as_written(tmp_path: Path) -> None:
    data = minimal_gt(expected_count="20")
    data["samples"]["0"]["expected_extra"]["subject_id"] = "NA"
    raw = load_ground_truth_dict(write(tmp_path / "gt.json", data))
    assert raw["expected_count"] == "20"
    assert raw["samples"]["0"]["expected_extra"]["subject_id"] == "NA"


def test_ground_truth_without_samples_names_file_and_line(tmp_path: Path) -> None:
    data = minimal_gt()
    del data["samples"]
    path = write(tmp_path / "gt.json", data)
    with pytest.raises(GroundTruthError) as caught:
        load_ground_truth(path)
    assert caught.value.path == path
    assert caught.value.line == 1
    assert str(caught.value) == f"{path}:1: ground truth has neither 'samples' nor 'source_to_truth'"


def test_malformed_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "gt.json"
    path.write_text('{\n  "schema_version": "1.1",\n  "samples": {,\n}', encoding="utf-8")
    with pytest.raises(GroundTruthError) as caught:
        load_ground_truth(path)
    assert (caught.value.path, caught.value.line, caught.value.column) == (path, 3, 15)
    assert str(caught.value).startswith(f"{path}:3: malformed JSON")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("[1, 2]", "top level must be a JSON object, not an array"),
        ('{"samples": [1]}', "'samples' must be an object"),
    ],
)
def test_wrong_shapes_are_rejected_with_the_reason(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "gt.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(GroundTruthError, match=reason):
        load_ground_truth_dict(path)


def test_wrong_field_type_reports_its_json_path(tmp_path: Path) -> None:
    data = minimal_gt()
    data["samples"]["0"]["expected_extra"] = ["not", "a", "dict"]
    path = write(tmp_path / "gt.json", data)
    with pytest.raises(GroundTruthError, match=r"samples\.0\.expected_extra") as caught:
        load_ground_truth(path)
    assert caught.value.path == path


def test_missing_ground_truth_file_is_a_ground_truth_error(tmp_path: Path) -> None:
    with pytest.raises(GroundTruthError, match="ground truth not found"):
        load_ground_truth(tmp_path / "absent.json")


def test_ground_truth_path_takes_the_first_sorted_match(tmp_path: Path) -> None:
    write(tmp_path / "VLM" / "ground_truth_b.json", minimal_gt())
    write(tmp_path / "VLM" / "ground_truth_a.json", minimal_gt(dataset_name="A"))
    write(tmp_path / "VLM" / "other.json", {})
    assert ground_truth_path(tmp_path) == tmp_path / "VLM" / "ground_truth_a.json"
    assert load_dataset_ground_truth(tmp_path).dataset_name == "A"


def test_no_ground_truth_file_names_the_folder(tmp_path: Path) -> None:
    (tmp_path / "VLM").mkdir()
    with pytest.raises(GroundTruthError, match=r"no ground_truth\*\.json") as caught:
        ground_truth_path(tmp_path)
    assert caught.value.path == tmp_path / "VLM"


def test_written_ground_truth_matches_the_benchmark_style_and_reloads(tmp_path: Path) -> None:
    gt = GroundTruth.model_validate(minimal_gt())
    path = write_ground_truth(tmp_path / "VLM" / "ground_truth_toy.json", gt)
    text = path.read_text(encoding="utf-8")
    assert text == json.dumps(minimal_gt(), indent=2, ensure_ascii=False)
    assert "玩具数据集" in text and not text.endswith("\n")
    assert load_ground_truth(path) == gt


def test_fields_not_given_are_not_invented_on_dump() -> None:
    gt = GroundTruth(samples={"0": GTSample(source_stem="s")}, dataset_name="D")
    assert gt.model_dump(by_alias=True) == {"samples": {"0": {"source_stem": "s"}}, "dataset_name": "D"}


def test_equality_ignores_the_key_order_of_the_source_file() -> None:
    a = GTSample.model_validate({"source_stem": "s", "class": "c"})
    b = GTSample.model_validate({"class": "c", "source_stem": "s"})
    assert a == b
    assert list(a.model_dump(by_alias=True)) == ["source_stem", "class"]
    assert list(b.model_dump(by_alias=True)) == ["class", "source_stem"]
    assert a != GTSample.model_validate({"source_stem": "other", "class": "c"})

"""Each `strict` correction, on a constructed case that shows exactly that difference from `official`."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from score_builders import Builder, write_png

from benchmark.score.dataset import score_prediction
from benchmark.score.evaluate import score_dataset
from benchmark.score.profiles import OFFICIAL, STRICT, Profile


def _score(root: Any, profile: Profile) -> Any:
    gt = json.loads((root / "VLM" / "ground_truth_tiny.json").read_text())
    return score_prediction(root / "VLM" / "m" / "agent1_data_organization", gt, profile=profile)


def test_strict_turns_on_every_documented_correction() -> None:
    assert set(STRICT.corrections) == {
        "missing_samples_zero",
        "image_path_not_evidence",
        "labels_not_evidence",
        "non_object_json_invalid",
        "geometry",
        "image_size_cap",
    }
    assert OFFICIAL.corrections == ()


def test_missing_sample_counts_as_zero_in_gated_means(build_dataset: Builder) -> None:
    root = build_dataset(n=2, edit=lambda i, a: ... if i == 1 else None)
    off = _score(root, OFFICIAL)
    flag = _score(root, OFFICIAL.replace(missing_samples_zero=True))
    assert off.metrics["CF"] == 1.0 and off.metrics["SC"] == 1.0
    assert flag.metrics["CF"] == 0.5 and flag.metrics["SC"] == 0.5
    assert flag.metrics["SV"] == off.metrics["SV"]  # SV already divides by N


def _only_image_path(i: int, ann: dict[str, Any]) -> None:
    ann["context"]["sample"]["extra"] = {}
    ann["context"]["sample"].pop("subject_id")


def test_record_image_path_is_not_source_evidence(build_dataset: Builder) -> None:
    # GT source = the bare output index ("5.bmp" → "5"): image_path "images/0.png" alone passes officially.
    def gt_edit(gt: dict[str, Any]) -> None:
        for i, s in gt["samples"].items():
            s["source_stem"] = i
            s["expected_extra"]["subject_id"] = None

    root = build_dataset(edit=_only_image_path, gt_edit=gt_edit)
    off = _score(root, OFFICIAL)
    flag = _score(root, OFFICIAL.replace(image_path_not_evidence=True))
    assert [s.source_score for s in off.per_sample] == [1.0, 1.0]
    assert [s.source_score for s in flag.per_sample] == [0.0, 0.0]


def test_labels_are_not_source_evidence(build_dataset: Builder) -> None:
    # Class names equal to the file stem (as in 4939348) make label_text a scanned value and trace evidence.
    def labels_only(i: int, ann: dict[str, Any]) -> None:
        _only_image_path(i, ann)
        ann["context"]["sample"]["extra"] = {"label_text": f"case_{i}"}

    root = build_dataset(edit=labels_only)
    off = _score(root, OFFICIAL)
    flag = _score(root, OFFICIAL.replace(labels_not_evidence=True))
    assert [s.source_score for s in off.per_sample] == [1.0, 1.0]
    assert [s.source_score for s in flag.per_sample] == [0.0, 0.0]


def test_non_object_json_is_an_invalid_sample_not_a_crash(build_dataset: Builder) -> None:
    root = build_dataset(n=2, edit=lambda i, a: [a] if i == 1 else None)
    off = _score(root, OFFICIAL)
    assert off.error is not None and "1.json" in off.error and off.metrics == {}
    flag = _score(root, OFFICIAL.replace(non_object_json_invalid=True))
    assert flag.error is None
    assert flag.per_sample[0].source_score == 1.0
    assert flag.per_sample[1].json_present and not flag.per_sample[1].json_valid
    assert flag.metrics["E2E"] == 0.5


def test_image_size_cap_rejects_a_png_header_claiming_gigapixels(build_dataset: Builder) -> None:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        return struct.pack(">I", len(data)) + kind + data + crc

    huge = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00" * 16))
        + chunk(b"IEND", b"")
    )
    root = build_dataset(n=2)
    (root / "VLM" / "m" / "agent1_data_organization" / "images" / "1.png").write_bytes(huge)
    off = _score(root, OFFICIAL)
    flag = _score(root, OFFICIAL.replace(image_size_cap=True))
    assert off.per_sample[1].image_valid
    assert not flag.per_sample[1].image_valid and flag.per_sample[0].image_valid


def test_official_non_object_json_is_recorded_as_a_model_error(build_dataset: Builder) -> None:
    root = build_dataset(n=2, edit=lambda i, a: "text" if i == 0 else None)
    res = score_dataset(root, profile="official")
    assert res["models"]["m"]["error"]


def _with_geometry(gt: dict[str, Any]) -> None:
    for i, s in gt["samples"].items():
        s["geometry"] = {
            "image_size": [8, 8],
            "mask_file": f"VLM/gt_geometry/{i}.png",
            "boxes": [[2, 2, 4, 4]],
            "box_category_ids": [1],
            "slice_index": None,
            "frame_index": None,
        }


def test_geometry_folds_dice_into_content_fidelity(build_dataset: Builder) -> None:
    root = build_dataset(gt_edit=_with_geometry)
    for i in range(2):
        write_png(root / "VLM" / "gt_geometry" / f"{i}.png", np.pad(np.ones((4, 4)), 2))
    # sample 1 predicts an empty mask: Dice 0
    write_png(root / "VLM" / "m" / "agent1_data_organization" / "masks" / "1.png", np.zeros((8, 8)))
    off = _score(root, OFFICIAL)
    flag = _score(root, OFFICIAL.replace(geometry=True))
    assert off.metrics["CF"] == 1.0 and "Dice" not in off.dimensions
    assert [s.geometry.dice for s in flag.per_sample] == [1.0, 0.0]
    assert [s.geometry.box_f1 for s in flag.per_sample] == [0.0, 0.0]  # no boxes predicted on a seg task
    assert flag.dimensions["Dice"] == 0.5
    assert flag.per_sample[0].content_fidelity_score < 1.0  # box block counts
    assert flag.metrics["CF"] < off.metrics["CF"]


def test_geometry_box_f1_and_slice(build_dataset: Builder) -> None:
    def gt_edit(gt: dict[str, Any]) -> None:
        for s in gt["samples"].values():
            s["geometry"] = {"mask_file": None, "boxes": [[0, 0, 4, 4], [4, 4, 4, 4]], "slice_index": 3}

    def edit(i: int, ann: dict[str, Any]) -> None:
        ann["tasks"]["detection"] = {"boxes2d": [{"bbox": [0, 0, 4, 4]}, {"bbox": [4, 4, 4, 4]}]}
        ann["media_geometry"]["spatial"]["three_d"] = {"slice_index": 3 if i == 0 else 2}

    flag = _score(build_dataset(gt_edit=gt_edit, edit=edit), OFFICIAL.replace(geometry=True))
    assert [s.geometry.box_f1 for s in flag.per_sample] == [1.0, 1.0]
    assert [s.geometry.slice_ok for s in flag.per_sample] == [1.0, 0.0]
    assert flag.dimensions["SliceOK"] == 0.5

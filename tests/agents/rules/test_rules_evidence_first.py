"""Issue 24, item 1: the rules baseline reads documentation and headers before folder habits. Each test is a
hand-made layout of a kind communities use (nnU-Net, BIDS, label tables keyed by paths or ids), never one of
our suites' datasets."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from agents.base import ManifestEntry, Task
from agents.rules import RulesAgent
from agents.rules.source import DatasetFiles, mask_candidates


def _task(root: Path, rels: list[str], temperature: float = 0.0, seed: int = 0) -> Task:
    vlm = root / "VLM"
    vlm.mkdir(parents=True, exist_ok=True)
    entries = tuple(ManifestEntry(i, rel) for i, rel in enumerate(rels))
    return Task(
        root=root,
        name=root.name,
        entries=entries,
        out_dir=vlm / f"rules-{seed}",
        temperature=temperature,
        seed=seed,
    )


def _run(task: Task) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    candidate = asyncio.run(RulesAgent().generate(task))
    out = candidate.output_dir
    anns = [
        json.loads((out / "standardized_annotations" / f"{i}.json").read_text())
        for i in range(len(task.entries))
    ]
    return anns, json.loads((out / "data_meta.json").read_text())


def _png(path: Path, value: int, size: tuple[int, int] = (24, 20)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(value)
    Image.fromarray(rng.integers(0, 255, (size[1], size[0]), dtype=np.uint8)).save(path)


def _extra(ann: dict[str, Any]) -> dict[str, Any]:
    return dict(ann["context"]["sample"]["extra"])


def test_label_table_keyed_by_relative_path_beats_station_folders_and_names_the_subject(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ds-017"
    rels, table = [], {}
    for i, (station, label) in enumerate(
        [("north", "fibrosis"), ("south", "normal"), ("north", "normal"), ("south", "fibrosis")]
    ):
        rel = f"data/{station}/img_{i}.png"
        _png(root / rel, i)
        rels.append(rel)
        table[rel[len("data/") :]] = {"Diagnosis ": label, "participant_id": f"P{i}"}
    (root / "data/labels.json").write_text(json.dumps(table), encoding="utf-8")
    (root / "data/README.md").write_text(
        "# Lung Tiles\n\nLabels: labels.json, keyed by path.\n", encoding="utf-8"
    )
    anns, meta = _run(_task(root, rels))
    assert [a["tasks"]["classification"]["label_name"] for a in anns] == [
        "fibrosis",
        "normal",
        "normal",
        "fibrosis",
    ]
    assert [_extra(a)["subject_id"] for a in anns] == ["P0", "P1", "P2", "P3"]
    assert meta["dataset_name"] == anns[0]["record"]["dataset_name"] == "Lung Tiles"


def test_cp1252_semicolon_table_with_bom_free_padded_header_keeps_non_ascii_labels(tmp_path: Path) -> None:
    root = tmp_path / "qa"
    rels, rows = [], [" File Name ;Outcome "]
    for i, label in enumerate(["décalé", "aligned", "décalé"]):
        rel = f"data/img/scan{i}.png"
        _png(root / rel, i)
        rels.append(rel)
        rows.append(f"scan{i}.png;{label}")
    (root / "data/outcomes.csv").write_bytes(("\r\n".join(rows) + "\r\n").encode("cp1252"))
    anns, _ = _run(_task(root, rels))
    assert [a["tasks"]["classification"]["label_name"] for a in anns] == ["décalé", "aligned", "décalé"]


def test_bids_participant_and_session_pick_the_row(tmp_path: Path) -> None:
    root = tmp_path / "bids"
    visits = [("01", "1", "stable"), ("01", "2", "progressed"), ("02", "1", "progressed")]
    rels, rows = [], ["participant_id\tsession_id\tdiagnosis"]
    for sub, ses, label in visits:
        rel = f"data/sub-{sub}/ses-{ses}/anat/sub-{sub}_ses-{ses}_T1w.png"
        _png(root / rel, int(sub) * 10 + int(ses))
        rels.append(rel)
        rows.append(f"sub-{sub}\tses-{ses}\t{label}")
    (root / "data/phenotype").mkdir(parents=True)
    (root / "data/phenotype/diagnosis.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (root / "data/dataset_description.json").write_text(json.dumps({"Name": "Visit Study"}), encoding="utf-8")
    anns, meta = _run(_task(root, rels))
    assert [a["tasks"]["classification"]["label_name"] for a in anns] == [
        "stable",
        "progressed",
        "progressed",
    ]
    assert [_extra(a)["subject_id"] for a in anns] == ["sub-01", "sub-01", "sub-02"]
    assert meta["dataset_name"] == "Visit Study"
    assert anns[0]["context"]["sample"]["modality_primary"] == "MRI"  # the BIDS suffix T1w


def test_nnunet_pairs_channel_images_with_case_labels_and_names_classes(tmp_path: Path) -> None:
    root = tmp_path / "Dataset007_Things"
    rels = []
    for case in ("a_001", "a_010", "a_100"):
        rel = f"data/imagesTr/{case}_0000.png"
        _png(root / rel, len(rels))
        mask = np.zeros((20, 24), dtype=np.uint8)
        mask[2 : 5 + 4 * len(rels), 3:9] = 1
        (root / "data/labelsTr").mkdir(parents=True, exist_ok=True)
        Image.fromarray(mask).save(root / f"data/labelsTr/{case}.png")
        rels.append(rel)
    doc = {"name": "Things", "labels": {"background": 0, "lesión": 1}, "channel_names": {"0": "CT"}}
    (root / "data/dataset.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    anns, meta = _run(_task(root, rels))
    assert [_extra(a)["mask_file"] for a in anns] == [
        f"data/labelsTr/{c}.png" for c in ("a_001", "a_010", "a_100")
    ]
    assert anns[0]["tasks"]["segmentation"]["classes"] == {"0": "background", "1": "lesión"}
    assert meta["dataset_name"] == "Things"


def test_exact_stem_in_a_parallel_tree_beats_a_mask_with_the_same_digits(tmp_path: Path) -> None:
    root = tmp_path / "tiles"
    for name in ("tile_r0_c1", "tile_r1_c0"):
        _png(root / f"data/images/{name}.png", 1)
        _png(root / f"data/masks/{name}.png", 2)
    files = DatasetFiles.scan(root)
    ranked = mask_candidates(files, "data/images/tile_r0_c1.png", exclude={"data/images/tile_r1_c0.png"})
    assert [h.value for h in ranked] == ["data/masks/tile_r0_c1.png"]


def test_bids_derivative_dseg_is_the_mask_and_its_legend_names_the_classes(tmp_path: Path) -> None:
    root = tmp_path / "seg"
    rels = []
    for k in (1, 2):
        rel = f"data/sub-0{k}/anat/sub-0{k}_T1w.png"
        _png(root / rel, k)
        seg = np.zeros((20, 24), dtype=np.uint8)
        seg[3:9, 4:10], seg[10:14, 4:10] = 1, 2
        (root / f"data/derivatives/tissue/sub-0{k}/anat").mkdir(parents=True)
        Image.fromarray(seg).save(root / f"data/derivatives/tissue/sub-0{k}/anat/sub-0{k}_dseg.png")
        rels.append(rel)
    (root / "data/derivatives/tissue/dseg.tsv").write_text(
        "index\tname\n1\tmatière grise\n2\tmatière blanche\n", encoding="utf-8"
    )
    anns, _ = _run(_task(root, rels))
    assert anns[0]["media_geometry"]["media"]["task_type"] == "segmentation"
    assert anns[1]["tasks"]["segmentation"]["classes"] == {
        "0": "background",
        "1": "matière grise",
        "2": "matière blanche",
    }


@pytest.mark.parametrize("seed", range(12))
def test_sampling_never_draws_a_task_nothing_on_disk_supports(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "plain"
    rels = []
    for i, label in enumerate(["cyst", "solid", "cyst"]):
        rel = f"data/{label}/us_{i}.png"
        _png(root / rel, i)
        rels.append(rel)
    anns, _ = _run(_task(root, rels, temperature=0.7, seed=seed))
    assert {a["media_geometry"]["media"]["task_type"] for a in anns} == {"classification"}


def test_header_modality_without_a_benchmark_name_is_kept_and_tiff_is_microscopy(tmp_path: Path) -> None:
    from testbed.synth.write_dicom import write_image

    root = tmp_path / "portal"
    rels = []
    for i in range(2):
        rel = f"data/PAT_{i}/RTIMAGE_{i}/IM0001.dcm"
        (root / rel).parent.mkdir(parents=True)
        write_image(
            root / rel,
            np.full((8, 8), 100 * i, np.uint16),
            patient_id=f"RT-{i}",
            modality="RTIMAGE",
            series_key=f"s{i}",
        )
        rels.append(rel)
    anns, _ = _run(_task(root, rels))
    assert [a["context"]["sample"]["modality_primary"] for a in anns] == ["RTIMAGE", "RTIMAGE"]
    assert [_extra(a)["subject_id"] for a in anns] == ["RT-0", "RT-1"]
    import tifffile

    tif = tmp_path / "cells"
    (tif / "data/a").mkdir(parents=True)
    tifffile.imwrite(tif / "data/a/t1.tif", np.arange(64, dtype=np.uint16).reshape(8, 8))
    anns, _ = _run(_task(tif, ["data/a/t1.tif"]))
    assert anns[0]["context"]["sample"]["modality_primary"] == "Microscopy"


def test_a_dataset_with_nothing_written_says_so_in_one_warning_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "broken"
    (root / "data").mkdir(parents=True)
    (root / "data/a.png").write_bytes(b"not a png")
    (root / "data/b.png").write_bytes(b"not a png either")
    _png(root / "ok/c.png", 1)
    with caplog.at_level(logging.INFO, logger="agents.rules.agent"):
        asyncio.run(RulesAgent().generate(_task(root, ["data/a.png", "data/b.png"])))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "2 of 2 samples not written" in warnings[0]
    assert "data/a.png" in warnings[0]
    # A dataset that loses one sample beside written ones (an undecodable file) is an INFO line.
    caplog.clear()
    _png(root / "data/b.png", 2)
    with caplog.at_level(logging.INFO, logger="agents.rules.agent"):
        asyncio.run(RulesAgent().generate(_task(root, ["data/a.png", "data/b.png"], seed=1)))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("1 of 2 samples not written" in r.getMessage() for r in caplog.records)


def test_an_exactly_paired_label_map_beats_a_joined_case_table(tmp_path: Path) -> None:
    # A segmentation dataset with a per-case table (diagnosis column) is still segmentation.
    root = tmp_path / "cases"
    rels, rows = [], ["case,diagnosis"]
    for i, dx in enumerate(["benign", "malignant", "benign"]):
        rel = f"data/images/case{i}.png"
        _png(root / rel, i)
        mask = np.zeros((20, 24), dtype=np.uint8)
        mask[4:12, 5 + i : 12 + i] = 1
        (root / "data/masks").mkdir(parents=True, exist_ok=True)
        Image.fromarray(mask).save(root / f"data/masks/case{i}.png")
        rels.append(rel)
        rows.append(f"case{i},{dx}")
    (root / "data/cases.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    anns, _ = _run(_task(root, rels))
    assert {a["media_geometry"]["media"]["task_type"] for a in anns} == {"segmentation"}


def test_a_name_line_titles_a_readme() -> None:
    from medio.dataset_docs import readme_title

    assert readme_title("Dataset: Knee Effusion Cohort\nImages in img/.\n") == "Knee Effusion Cohort"
    assert readme_title("Images of knees, labels in labels.csv.\n") is None


def test_legend_files_keep_their_ids_and_non_ascii_names(tmp_path: Path) -> None:
    from agents.rules.context import DatasetContext

    root = tmp_path / "legends"
    (root / "data/img").mkdir(parents=True)
    _png(root / "data/img/a.png", 1)
    (root / "data/legend.txt").write_bytes("0 background\n1 Läsion\n3 Ödem\n".encode("cp1252"))
    (root / "data/structures.csv").write_text("value,name\n1,Leber\n2,Milz\n", encoding="utf-8")
    (root / "data/labels.csv").write_text("id,label\n1,benign\n2,benign\n3,malignant\n", encoding="utf-8")
    ctx = DatasetContext.build(root, "legends", ["data/img/a.png"])
    assert {0: "background", 1: "Läsion", 3: "Ödem"} in ctx.class_maps
    assert {1: "Leber", 2: "Milz"} in ctx.class_maps
    assert not any(m.get(3) == "malignant" for m in ctx.class_maps)  # a label table is not a legend


def test_bare_participant_and_session_numbers_pick_the_row(tmp_path: Path) -> None:
    root = tmp_path / "bare"
    visits = [("01", "1", "stable"), ("01", "2", "progressed"), ("02", "2", "stable")]
    rels, rows = [], ["subject,visit,outcome"]
    for sub, ses, label in visits:
        rel = f"data/sub-{sub}/ses-{ses}/sub-{sub}_ses-{ses}_T2w.png"
        _png(root / rel, int(sub) * 10 + int(ses))
        rels.append(rel)
        rows.append(f"{sub},{ses},{label}")
    (root / "data/outcomes.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    anns, _ = _run(_task(root, rels))
    assert [a["tasks"]["classification"]["label_name"] for a in anns] == ["stable", "progressed", "stable"]

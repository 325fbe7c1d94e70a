"""The rules agent on layouts users have that the bundled suite does not hold: class folders above subject
folders, and DICOM segmentation objects of another study beside the images."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from agents.base import ManifestEntry, Task
from agents.rules import RulesAgent
from agents.rules.source import DatasetFiles, mask_candidates


def _task(root: Path, rels: list[str]) -> Task:
    vlm = root / "VLM"
    vlm.mkdir(parents=True, exist_ok=True)
    lines = [f"{i} /authors/x/{root.name}/{rel}" for i, rel in enumerate(rels)]
    (vlm / "random.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    entries = tuple(ManifestEntry(i, rel) for i, rel in enumerate(rels))
    return Task(root=root, name=root.name, entries=entries, out_dir=vlm / "rules")


def _annotations(task: Task) -> list[dict[str, Any]]:
    candidate = asyncio.run(RulesAgent().generate(task))
    out = candidate.output_dir / "standardized_annotations"
    return [json.loads((out / f"{i}.json").read_text()) for i in range(len(task.entries))]


def test_class_folders_above_subject_folders_give_the_class(tmp_path: Path) -> None:
    root = tmp_path / "skin-lesions"
    labels = ["benign", "malignant", "benign", "malignant", "benign"]
    rels = []
    for i, label in enumerate(labels):
        rel = f"data/{label}/case_{i + 1:03d}/dermoscopy.png"
        (root / rel).parent.mkdir(parents=True)
        Image.fromarray(np.full((20, 24, 3), 40 * i, dtype=np.uint8)).save(root / rel)
        rels.append(rel)
    for ann, label in zip(_annotations(_task(root, rels)), labels, strict=True):
        assert ann["tasks"]["classification"]["label_name"] == label


def _dicom(src: Path, dst: Path, study: str) -> None:
    import pydicom

    ds = pydicom.dcmread(src)
    ds.StudyInstanceUID = study
    dst.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(dst)


def test_a_dicom_mask_of_another_study_is_not_the_images_mask(tmp_path: Path) -> None:
    from pydicom.data import get_testdata_file

    ct = Path(str(get_testdata_file("CT_small.dcm", download=False)))
    seg = Path(str(get_testdata_file("liver_1frame.dcm", download=False)))
    root = tmp_path / "ct"
    _dicom(ct, root / "data/P1/CT.P1.dcm", "1.2.3.1")
    _dicom(seg, root / "data/P1/SEG.P1.dcm", "1.2.3.999")  # another study: a decoy
    _dicom(seg, root / "data/P1/SEG.P1.same.dcm", "1.2.3.1")  # the same study: may be the mask
    files = DatasetFiles.scan(root)
    found = [h.value for h in mask_candidates(files, "data/P1/CT.P1.dcm")]
    assert found == ["data/P1/SEG.P1.same.dcm"]


def test_segmentation_decoys_of_other_studies_leave_a_classification_dataset(tmp_path: Path) -> None:
    from pydicom.data import get_testdata_file

    ct = Path(str(get_testdata_file("CT_small.dcm", download=False)))
    seg = Path(str(get_testdata_file("liver_1frame.dcm", download=False)))
    root = tmp_path / "head-ct"
    rels = []
    for i, label in enumerate(["normal", "abnormal", "normal"]):
        rel = f"data/{label}/P{i}/P{i}_ct.dcm"
        _dicom(ct, root / rel, f"1.2.3.{i}")
        _dicom(seg, root / f"data/{label}/P{i}/SEG.P{i}.dcm", "1.2.3.999")
        rels.append(rel)
    anns = _annotations(_task(root, rels))
    assert [a["media_geometry"]["media"]["task_type"] for a in anns] == ["classification"] * 3
    assert [a["tasks"]["classification"]["label_name"] for a in anns] == ["normal", "abnormal", "normal"]


def test_a_joined_label_table_beats_site_folders_above_subject_folders(tmp_path: Path) -> None:
    root = tmp_path / "two-sites"
    labels = ["normal", "pneumonia", "pneumonia", "normal"]
    rels, rows = [], ["case,diagnosis"]
    for i, label in enumerate(labels):
        rel = f"data/{'north' if i % 2 else 'south'}/case_{i + 1:03d}/image.png"
        (root / rel).parent.mkdir(parents=True)
        Image.fromarray(np.full((8, 8), 10 * i, dtype=np.uint8)).save(root / rel)
        rels.append(rel)
        rows.append(f"case_{i + 1:03d},{label}")
    (root / "data" / "labels.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    anns = _annotations(_task(root, rels))
    assert [a["tasks"]["classification"]["label_name"] for a in anns] == labels


def test_a_series_of_extensionless_dicom_files_is_read_as_a_volume(tmp_path: Path) -> None:
    import shutil

    import pydicom.data

    tree = Path(pydicom.data.__file__).parent / "test_files" / "dicomdirtests" / "77654033" / "CT2"
    root = tmp_path / "dicomdir"
    shutil.copytree(tree, root / "data" / "77654033" / "CT2")
    (root / "data" / "labels.csv").write_text("patient,label\n77654033,normal\n", encoding="utf-8")
    ann = _annotations(_task(root, ["data/77654033/CT2/17106"]))[0]
    assert ann["media_geometry"]["media"]["dimension"] == "3D"
    assert ann["media_geometry"]["spatial"]["three_d"]

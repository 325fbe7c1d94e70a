"""Ground truth for the suites whose datasets are named by their documentation (foreign, independent).

An annotator names such a dataset as its README, `dataset.json` or COCO `info` does, not by the folder id:
every place the ground truth states the dataset name gets that title; the GT label maps are written as the
other suites write them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from testbed.synth.groundtruth import ground_truth, sample_truth
from testbed.synth.spec import DatasetSpec, SynthSample
from testbed.synth.write_files import write_pillow, write_text

__all__ = ["rename_truth", "write_documented_truth"]


def rename_truth(doc: dict[str, Any], title: str) -> dict[str, Any]:
    """Put ``title`` everywhere a ground-truth document states the dataset name.

    Args:
        doc: The ground-truth document (changed in place).
        title: The documented dataset name.

    Returns:
        ``doc``.
    """
    doc["dataset_name"] = title
    doc["content"]["expected_dataset_name"] = title
    doc["content"]["global_expected_blocks"]["record"]["dataset_name"] = title
    for sample in doc["samples"].values():
        sample["expected_record"]["dataset_name"] = title
    return doc


def write_documented_truth(root: Path, spec: DatasetSpec, truth: dict[int, SynthSample], title: str) -> None:
    """Write ``VLM/ground_truth_<name>.json`` (named ``title``) and the GT label maps of one dataset.

    Args:
        root: The dataset folder.
        spec: Its spec.
        truth: The per-index truth.
        title: The documented dataset name.
    """
    order = sorted(truth)
    doc = ground_truth(spec, [truth[i] for i in order])
    doc["samples"] = {str(i): sample_truth(i, spec, truth[i]) for i in order}
    for i in order:
        mask = truth[i].mask
        if mask is not None:
            write_pillow(root / "VLM" / "gt_geometry" / f"{i}.png", mask.astype("uint8"))
    write_text(
        root / "VLM" / f"ground_truth_{spec.name}.json",
        json.dumps(rename_truth(doc, title), indent=2, ensure_ascii=False),
    )

"""Fixtures for the scorer tests; the builders themselves live in score_builders.py."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from score_builders import GT_TEMPLATE, META, Builder, annotation, gt_sample, square_mask, write_png


@pytest.fixture
def build_dataset(tmp_path: Path) -> Builder:
    """Factory: ``build_dataset(n=2, edit=None, gt_edit=None, model="m")`` → dataset root with one model
    folder.

    ``edit(i, ann)`` may change (or replace, by returning a value) annotation ``i``; returning ``...`` deletes
    it.
    ``gt_edit(gt)`` may change the GT in place.
    """

    def build(
        n: int = 2,
        edit: Callable[[int, Any], Any] | None = None,
        gt_edit: Callable[[dict[str, Any]], None] | None = None,
        model: str = "m",
    ) -> Path:
        root = tmp_path / "tiny"
        vlm = root / "VLM"
        pred = vlm / model / "agent1_data_organization"
        (pred / "standardized_annotations").mkdir(parents=True, exist_ok=True)
        gt = copy.deepcopy(GT_TEMPLATE)
        gt["expected_count"] = n
        gt["samples"] = {str(i): gt_sample(i) for i in range(n)}
        if gt_edit:
            gt_edit(gt)
        (vlm / "ground_truth_tiny.json").write_text(json.dumps(gt), encoding="utf-8")
        (vlm / "random.txt").write_text(
            "".join(f"{i} /x/tiny/data/case_{i}.png\n" for i in range(n)), encoding="utf-8"
        )
        meta = dict(META, data_volume={"total": n}, valid_image_n={"total": n})
        (pred / "data_meta.json").write_text(json.dumps(meta), encoding="utf-8")
        for i in range(n):
            write_png(pred / "images" / f"{i}.png", np.full((8, 8), 100, np.uint8))
            write_png(pred / "masks" / f"{i}.png", square_mask())
            ann: Any = annotation(i)
            if edit:
                out = edit(i, ann)
                ann = ann if out is None else out
            if ann is not ...:
                (pred / "standardized_annotations" / f"{i}.json").write_text(
                    json.dumps(ann), encoding="utf-8"
                )
        return root

    return build

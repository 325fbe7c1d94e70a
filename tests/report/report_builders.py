"""A small hand-made run folder (two datasets, two candidates each) for the report tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

METRICS = ("SV", "SSC", "SC", "IC", "IV", "INR", "CF", "MSC", "MSJ", "SCJ", "E2E")
OUT = "agent1_data_organization"


def _annotation(dataset: str, index: int, task: str, label: str) -> dict[str, Any]:
    branch: dict[str, Any] = {"classification": {}, "segmentation": {}, "detection": {}}
    if task == "classification":
        branch["classification"] = {"schema_variant": "multiclass", "label": 1, "label_name": label}
    else:
        branch["detection"] = {
            "schema_variant": "2d",
            "boxes2d": [{"bbox": [1, 2, 3, 4], "category_name": label}],
        }
    return {
        "record": {"schema_version": "1.0.1", "dataset_name": dataset, "image_path": f"images/{index}.png"},
        "context": {"sample": {"subject_id": f"s{index}", "extra": {"source_file": f"data/{index}.png"}}},
        "media_geometry": {"media": {"task_type": task, "dimension": "2D"}},
        "tasks": branch,
    }


def _write(
    folder: Path, dataset: str, index: int, task: str, label: str, shade: int, png: bool = True
) -> None:
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / "standardized_annotations").mkdir(parents=True, exist_ok=True)
    if png:
        pixels = np.full((600, 400), shade, dtype=np.uint8)  # larger than a thumbnail on purpose
        pixels[100:200, 50:150] = 255 - shade
        Image.fromarray(pixels).save(folder / "images" / f"{index}.png")
    else:
        (folder / "images" / f"{index}.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")  # truncated
    doc = _annotation(dataset, index, task, label)
    (folder / "standardized_annotations" / f"{index}.json").write_text(json.dumps(doc), encoding="utf-8")


def _scores(e2e: bool, semantic: float) -> dict[str, Any]:
    values = {
        "pair_valid": True,
        "source_score": 1.0,
        "schema_valid_score": 1.0,
        "semantic_score": semantic,
        "content_fidelity_score": 1.0 if e2e else 0.0,
        "e2e": e2e,
    }
    return {"official": values, "strict": values}


def make_run(run: Path, *, ablation: bool = False) -> Path:
    """Write the run folder: ``alpha`` (classification, sample 1 fails E2E and its candidates disagree on
    the label) and ``beta`` (detection, candidate 1's image of sample 0 is a truncated PNG)."""
    plan = {"alpha": "classification", "beta": "detection"}
    rows = []
    for dataset, task in plan.items():
        decisions = {}
        for index in (0, 1):
            failing = dataset == "alpha" and index == 1
            for k in (0, 1):
                label = f"label-{k}" if failing else "lesion"
                png = not (dataset == "beta" and index == 0 and k == 1)
                folder = run / "candidates" / dataset / str(k) / OUT
                _write(folder, dataset, index, task, label, 40 + 60 * k + 20 * index, png)
                meta = {"status": "ok", "reason": None, "candidate_index": k}
                (folder.parent / "candidate.json").write_text(json.dumps(meta), encoding="utf-8")
            _write(
                run / "selected" / dataset / OUT,
                dataset,
                index,
                task,
                "label-0" if failing else "lesion",
                40 + 20 * index,
            )
            decision = {"index": index, "candidate": 0, "reason": "validator_max: candidate 0", "score": 0.9}
            decisions[str(index)] = decision
            rows.append(
                {
                    "dataset": dataset,
                    "index": index,
                    "strategy": "s3",
                    "decision": decision,
                    "validator_total": 0.9,
                    "scores": _scores(not failing, 0.9 if failing else 1.0),
                }
            )
        result = {"strategy": "s3", "decisions": decisions, "candidates": [], "usage": {}}
        (run / "selected" / dataset / "result.json").write_text(json.dumps(result), encoding="utf-8")
        vlm = run / "export" / dataset / "VLM"
        vlm.mkdir(parents=True, exist_ok=True)
        gt = {
            "samples": {
                str(i): {"class": "lesion", "expected_extra": {"source_file": f"data/{i}.png"}}
                for i in (0, 1)
            }
        }
        (vlm / f"ground_truth_{dataset}.json").write_text(json.dumps(gt), encoding="utf-8")
    per = {"alpha": dict.fromkeys(METRICS, 0.5), "beta": dict.fromkeys(METRICS, 1.0)}
    for name, profile in (("metrics.json", "official"), ("metrics_strict.json", "strict")):
        doc = {"profile": profile, "macro": dict.fromkeys(METRICS, 0.75), "datasets": per}
        (run / name).write_text(json.dumps(doc), encoding="utf-8")
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    usage = {
        "total": {"total_tokens": 10},
        "datasets": {d: {"total_tokens": 5, "cost_usd": 0.01} for d in plan},
    }
    (run / "usage.json").write_text(json.dumps(usage), encoding="utf-8")
    info = {"strategy": "s3", "run_name": "s3", "datasets": list(plan)}
    (run / "run.json").write_text(json.dumps(info), encoding="utf-8")
    if ablation:
        Image.fromarray(np.zeros((30, 60, 3), dtype=np.uint8)).save(run / "ablation.png")
    return run

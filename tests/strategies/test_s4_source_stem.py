"""S4 votes ``extra.source_file`` across candidates; the ``source_stem`` the official scorer needs follows the
voted source, not the base candidate's own (docs/scoring.md, "Sources outside the extension list")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from agents.base import Candidate, Feedback, ManifestEntry, Task, Usage
from benchmark.score.profiles import resolve
from benchmark.score.source import derive_source_stem, source_score
from strategies import ProfileValidator, strategies
from strategies.selectors import first

RIGHT, WRONG = "data/raw/P001.dat", "data/raw/vol_3.raw"


def _annotation(source: str, stem: str) -> dict[str, Any]:
    name = source.rsplit("/", 1)[-1]
    return {
        "record": {"schema_version": "1.0.1", "dataset_name": "stems", "image_path": "images/0.png"},
        "context": {
            "sample": {
                "subject_id": "NA",
                "sex": "unknown",
                "race_ethnicity": "NA",
                "site_id": "NA",
                "modality_primary": "CT",
                "extra": {"source_file": source, "original_filename": name, "source_stem": stem},
            }
        },
        "media_geometry": {
            "media": {"task_type": "classification", "dimension": "2D"},
            "spatial": {"common": {"pixel_size_px": [8, 8]}, "three_d": {}, "video": {}},
        },
        "tasks": {
            "classification": {"schema_variant": "multiclass", "class_names": {"0": "a"}, "label": 0},
            "segmentation": {},
            "detection": {},
        },
    }


class TwoMindsAgent:
    """Candidate 0 names another file (with that file's stem); every later candidate names the right one."""

    name = "two-minds"

    async def generate(self, task: Task) -> Candidate:
        out = task.output_dir
        (out / "standardized_annotations").mkdir(parents=True, exist_ok=True)
        (out / "images").mkdir(exist_ok=True)
        doc = _annotation(WRONG, "vol_3") if task.candidate_index == 0 else _annotation(RIGHT, "P001")
        (out / "standardized_annotations" / "0.json").write_text(json.dumps(doc), encoding="utf-8")
        Image.fromarray(np.full((8, 8), 50, np.uint8)).save(out / "images" / "0.png")
        return Candidate(out, Usage(calls=1), candidate_index=task.candidate_index, agent=self.name)

    async def revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable_fields: Sequence[str]
    ) -> Candidate:
        raise AssertionError("S4 does not revise")


def test_the_stem_follows_the_voted_source(tmp_path: Path) -> None:
    root = tmp_path / "stems"
    for rel in (RIGHT, WRONG):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(bytes(range(32)))
    (root / "VLM").mkdir()
    (root / "VLM" / "random.txt").write_text(f"0 /authors/stems/{RIGHT}\n", encoding="utf-8")
    task = Task(root=root, name="stems", entries=(ManifestEntry(0, RIGHT),), out_dir=tmp_path / "sel", seed=0)

    # The first candidate is the base; a merge is always kept (margin 1); two candidates outvote it.
    s4 = strategies.get("s4")(n=3, margin=1.0, selector=first)
    result = asyncio.run(s4(task, TwoMindsAgent(), ProfileValidator("evidence")))
    assert {d.candidate for d in result.decisions.values()} == {0}
    merged = json.loads((task.output_dir / "standardized_annotations" / "0.json").read_text(encoding="utf-8"))
    extra = merged["context"]["sample"]["extra"]
    assert (extra["source_file"], extra["source_stem"]) == (RIGHT, "P001")
    assert source_score(merged, derive_source_stem(merged), {"p001"}, resolve("official")) == 1.0

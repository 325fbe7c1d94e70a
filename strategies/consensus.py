"""The ``consensus`` selector: validator score plus agreement with the other candidates on high-risk fields.

In the spirit of universal self-consistency (Chen et al., 2023): among independently sampled outputs, the one
most consistent with the others is more likely right. Agreement is measured on the fields where a wrong value
costs the sample (task, dimension, source, subject, dataset name, modality, demographics, the task branch,
the spatial branch) and on the content of the written image and label map. It adds to the validator total
with a weight, so a candidate the validator clearly prefers still wins, and among near-ties the one the
others agree with is kept.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from agents.base import Candidate, Task
from strategies.fields import AGREEMENT_FIELDS
from strategies.mechanics import find_image, get_path, read_annotation
from validator.report import Report

__all__ = ["AGREEMENT_FIELDS", "IMAGE_FIELD", "MASK_FIELD", "Consensus", "consensus"]

IMAGE_FIELD = "images"
"""The pseudo-field for the written image (compared on a coarse 16 × 16 grey thumbnail)."""
MASK_FIELD = "masks"
"""The pseudo-field for a written label map (compared on a 16 × 16 nearest-neighbour thumbnail)."""


def _canonical(value: Any) -> str:
    # Case and surrounding space are not a disagreement; everything else (types, ids, structure) is.
    if isinstance(value, str):
        return value.strip().lower()
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@functools.lru_cache(maxsize=4096)
def _thumbnail(path: str, stamp: float, label: bool) -> str | None:
    try:
        with Image.open(path) as img:
            size = f"{img.size[0]}x{img.size[1]}:"
            if label:  # ids are compared as they are: nearest neighbour, no quantisation
                small = np.asarray(img.convert("L").resize((16, 16), Image.Resampling.NEAREST))
            else:  # coarse levels: re-encoding or a one-level rounding difference is not a disagreement
                small = np.asarray(img.convert("L").resize((16, 16), Image.Resampling.BOX)) // 32
            return size + np.asarray(small, dtype=np.uint8).tobytes().hex()
    except (OSError, ValueError):
        return None


def _file_key(path: Path | None, label: bool) -> str | None:
    if path is None or not path.is_file():
        return None
    return _thumbnail(str(path), path.stat().st_mtime, label)


class Consensus:
    """Validator total plus ``weight`` × agreement with the other candidates.

    Args:
        weight: How much full agreement adds to the validator total (totals lie in [0, 1]).
        fields: The field paths compared (`AGREEMENT_FIELDS`); ``"images"`` compares the written images.
        compare_images: Whether the written image and label map take part as two more fields.
    """

    __name__ = "consensus"

    def __init__(
        self, weight: float = 0.25, fields: Sequence[str] = AGREEMENT_FIELDS, compare_images: bool = True
    ) -> None:
        self.weight = float(weight)
        self.fields = tuple(fields)
        self.compare_images = compare_images

    def signature(self, cand: Candidate, index: int) -> dict[str, str | None] | None:
        """The candidate's canonical values of the compared fields on one sample (None: no sample)."""
        ann = read_annotation(cand.output_dir, index)
        if ann is None:
            return None
        sig: dict[str, str | None] = {f: _canonical(get_path(ann, f)) for f in self.fields}
        if self.compare_images:
            sig[IMAGE_FIELD] = _file_key(find_image(cand.output_dir, index, ann), label=False)
            sig[MASK_FIELD] = _file_key(cand.output_dir / "masks" / f"{index}.png", label=True)
        return sig

    def agreement(self, candidates: Sequence[Candidate], index: int) -> dict[int, float]:
        """Per candidate holding the sample, the mean share of the others that agree with it, per field."""
        sigs = {k: s for k, c in enumerate(candidates) if (s := self.signature(c, index)) is not None}
        out: dict[int, float] = {}
        for k, mine in sigs.items():
            others = [s for j, s in sigs.items() if j != k]
            if not others:
                out[k] = 0.0
                continue
            shares = [
                sum(1 for s in others if value is not None and s.get(f) == value) / len(others)
                for f, value in mine.items()
            ]
            out[k] = sum(shares) / len(shares)
        return out

    def __call__(
        self, index: int, candidates: Sequence[Candidate], reports: Sequence[Report], task: Task
    ) -> int:
        """The candidate with the best validator total + weight × agreement (ties: better image, lower k)."""
        agree = self.agreement(candidates, index)

        def key(k: int) -> tuple[bool, float, float, int]:
            total = reports[k].sample_total(index) + self.weight * agree.get(k, 0.0)
            return (k in agree, round(total, 6), reports[k].check_score(index, "image_path"), -k)

        return max(range(len(candidates)), key=key)


consensus = Consensus()
"""The registered ``consensus`` selector with its default weight (``Consensus(weight=...)`` for others)."""

"""What every replica recipe needs about the dataset being built: its listing, its GT (read for plausible
content only), the output folder, the pixel scale and a per-file seeded generator."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from testbed.replica.source import ReplicaDataset, ReplicaFile

__all__ = ["RecipeContext", "scaled"]


def scaled(size: int, factor: float, minimum: int = 4) -> int:
    """``size`` times ``factor``, rounded, at least ``minimum``."""
    return max(minimum, round(size * factor))


@dataclass
class RecipeContext:
    """One dataset being built.

    Attributes:
        dataset: The material's dataset.
        out: The dataset's output folder (``<root>/<id>_folder``).
        scale: Linear pixel scale on top of each recipe's own geometry (1.0 for the suite; tests shrink).
        seed: The build seed.
        truths: GT sample per raw file it names (``source_file`` and the ``*_file`` keys), by relpath.
        memo: Recipe scratch space shared by the files of one case (geometry, lesion) so they agree.
    """

    dataset: ReplicaDataset
    out: Path
    scale: float = 1.0
    seed: int = 0
    truths: dict[str, dict[str, Any]] = field(default_factory=dict)
    memo: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for sample in self.dataset.sample_truths():
            extra = sample.get("expected_extra") or {}
            for key, value in extra.items():
                if isinstance(value, str) and (key == "source_file" or key.endswith("_file")):
                    self.truths.setdefault(value, sample)

    def rng(self, key: str) -> np.random.Generator:
        """A generator seeded by the build seed, the dataset and ``key`` (a relpath or a case id)."""
        digest = hashlib.sha256(f"{self.seed}/{self.dataset.name}/{key}".encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))

    def target(self, file: ReplicaFile) -> Path:
        """The output path of ``file`` (real relative path, spaces kept)."""
        return self.out.joinpath(*PurePosixPath(file.relpath).parts)

    def truth(self, file: ReplicaFile) -> dict[str, Any] | None:
        """The GT sample that names ``file`` as its source or label file, if any."""
        return self.truths.get(file.relpath)

    def listed(self, relpath: str) -> ReplicaFile | None:
        """The listed file at ``relpath``, if the tree has one."""
        if "listing" not in self.memo:
            self.memo["listing"] = {f.relpath: f for f in self.dataset.files}
        found: ReplicaFile | None = self.memo["listing"].get(relpath)
        return found

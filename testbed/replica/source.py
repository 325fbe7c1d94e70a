"""Read the replica material: where it lives, each dataset's file listing, its Git-LFS pointers and its GT.

The material (``shared/mdsbench/replica/``, described by its ``README.md``) holds, per real MDS-Bench dataset
``<id>_folder/``: ``paths.tsv`` (``commit<TAB>path<TAB>kind`` for every file of the real tree),
``files/<path>`` (the real text files, byte-exact), ``files/<path>.lfs`` (the Git-LFS pointer of a binary: its
real size and sha256), ``VLM/random.txt`` and ``VLM/ground_truth_*.json``. ``MANIFEST.sha256`` covers all of
it. Nothing here is shipped with the project: the builder reads it at build time from a folder the user points
at.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.errors import BenchmarkError
from benchmark.manifest import VLM_DIR

__all__ = [
    "MANIFEST_FILE",
    "ReplicaDataset",
    "ReplicaFile",
    "ReplicaSourceError",
    "find_replica_source",
    "load_replica_dataset",
    "replica_dataset_names",
    "source_digest",
]

#: The checksum list at the top of the replica folder (it keys the cache).
MANIFEST_FILE = "MANIFEST.sha256"
#: ``paths.tsv`` kinds whose bytes are in ``files/`` (copied byte-exact).
TEXT_KINDS = frozenset({"text-fetched", "text-eol-unknown"})
#: ``paths.tsv`` kinds that are binaries the builder synthesizes.
BINARY_KINDS = frozenset({"binary", "lfs-pointer"})
#: Where the material sits below a ``shared/`` folder.
_SHARED_SUBDIR = Path("mdsbench") / "replica"


class ReplicaSourceError(BenchmarkError):
    """The replica material is missing or malformed (names the folder or file and the reason)."""


@dataclass(frozen=True)
class ReplicaFile:
    """One file of a real dataset tree.

    Attributes:
        relpath: POSIX path relative to the dataset folder (``data/...`` or ``VLM/...``), spaces included.
        kind: The ``paths.tsv`` kind (``text-fetched``, ``text-eol-unknown``, ``lfs-pointer``, ``binary``).
        real_size: The real byte size when the Git-LFS pointer tells it, else None.
        text: The stored copy of a text file (None for binaries).
    """

    relpath: str
    kind: str
    real_size: int | None = None
    text: Path | None = None

    @property
    def is_binary(self) -> bool:
        """Whether the builder must synthesize this file."""
        return self.kind in BINARY_KINDS


@dataclass(frozen=True)
class ReplicaDataset:
    """One dataset of the material: its listing and its ground truth (read only to make plausible binaries).

    Attributes:
        name: The folder name (``10602767_folder``); the manifests' paths anchor on it.
        folder: The material folder of the dataset.
        files: Every listed file, in listing order.
        gt: The parsed ground truth (``VLM/ground_truth_*.json``).
        gt_file: That file's path relative to the dataset (``VLM/ground_truth_<n>.json``).
    """

    name: str
    folder: Path
    files: list[ReplicaFile]
    gt: dict[str, Any] = field(repr=False)
    gt_file: str

    def sample_truths(self) -> list[dict[str, Any]]:
        """The GT samples in index order (``samples`` or its alias ``source_to_truth``)."""
        samples = self.gt.get("samples") or self.gt.get("source_to_truth") or {}
        return [samples[k] for k in sorted(samples, key=int)]


def find_replica_source(explicit: str | Path | None = None) -> Path:
    """The replica folder: ``explicit`` if given, else ``$MEDSTRAT_SHARED/mdsbench/replica``, else
    ``../shared/mdsbench/replica`` beside the checkout.

    Raises:
        ReplicaSourceError: None of them holds a ``MANIFEST.sha256`` (the message names each place).
    """
    if explicit not in (None, "", "null"):
        candidates = [Path(str(explicit)).expanduser()]
    else:
        candidates = []
        if os.environ.get("MEDSTRAT_SHARED"):
            candidates.append(Path(os.environ["MEDSTRAT_SHARED"]).expanduser() / _SHARED_SUBDIR)
        checkout = Path(__file__).resolve().parents[2]
        candidates.append(checkout.parent / "shared" / _SHARED_SUBDIR)
    for candidate in candidates:
        if (candidate / MANIFEST_FILE).is_file():
            return candidate.absolute()
    others = "".join(f", nor at {c}" for c in candidates[1:])
    raise ReplicaSourceError(
        candidates[0],
        f"no replica material here (no {MANIFEST_FILE}){others}; set benchmark.source=<folder> or "
        "MEDSTRAT_SHARED=<shared>",
    )


def source_digest(source: Path) -> str:
    """The sha256 of the material's ``MANIFEST.sha256`` (it lists the sha256 of every other file)."""
    return hashlib.sha256((source / MANIFEST_FILE).read_bytes()).hexdigest()


def replica_dataset_names(source: Path) -> list[str]:
    """The dataset folders of the material (those with a ``paths.tsv``), sorted."""
    return sorted(p.parent.name for p in source.glob("*/paths.tsv"))


def _lfs_size(pointer: Path) -> int:
    """The ``size`` line of a Git-LFS pointer (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md)."""
    for line in pointer.read_text(encoding="ascii").splitlines():
        key, _, value = line.partition(" ")
        if key == "size" and value.isdigit():
            return int(value)
    raise ReplicaSourceError(pointer, "Git-LFS pointer without a 'size <bytes>' line")


def load_replica_dataset(source: Path, name: str) -> ReplicaDataset:
    """Read one dataset's listing, pointers and ground truth from the material.

    Raises:
        ReplicaSourceError: A missing ``paths.tsv``, an unknown kind, a text file without its stored copy, or
            no ground truth.
    """
    folder = source / name
    listing = folder / "paths.tsv"
    if not listing.is_file():
        raise ReplicaSourceError(listing, "missing: not a replica dataset folder")
    files: list[ReplicaFile] = []
    with listing.open(encoding="utf-8", newline="") as handle:
        for line_no, row in enumerate(csv.DictReader(handle, delimiter="\t"), start=2):
            relpath, kind = row.get("path") or "", row.get("kind") or ""
            in_vlm = relpath.startswith(f"{VLM_DIR}/")
            stored = folder / ("VLM" if in_vlm else "files") / relpath.removeprefix(f"{VLM_DIR}/")
            if kind in TEXT_KINDS:
                if not stored.is_file():
                    raise ReplicaSourceError(
                        listing, f"text file {relpath!r} has no stored copy", line=line_no
                    )
                files.append(ReplicaFile(relpath, kind, text=stored))
            elif kind in BINARY_KINDS:
                pointer = stored.with_name(stored.name + ".lfs")
                size = _lfs_size(pointer) if kind == "lfs-pointer" and pointer.is_file() else None
                files.append(ReplicaFile(relpath, kind, real_size=size))
            else:
                raise ReplicaSourceError(listing, f"unknown kind {kind!r} for {relpath!r}", line=line_no)
    gts = sorted((folder / VLM_DIR).glob("ground_truth_*.json"))
    if not gts:
        raise ReplicaSourceError(folder / VLM_DIR, "no ground_truth_*.json")
    gt = json.loads(gts[0].read_text(encoding="utf-8"))
    return ReplicaDataset(name, folder, files, gt, f"{VLM_DIR}/{gts[0].name}")

"""Dataset-wide raw facts the evidence checks share: the file listing, the text the raw files hold, the
documentation (`medio.dataset_docs`), and the header identifiers of a source. Read once per dataset root.

Only ``<dataset>/data`` is read (raw evidence); ``VLM/`` (ground truth) never is.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmark.discover import Dataset
from medio.dataset_docs import DatasetDocs, read_dataset_docs, read_text_any
from medio.inspect import dicom_header

__all__ = ["DatasetFacts", "dataset_facts", "header_of", "words"]

_NON_WORD = re.compile(r"[\W_]+")


def words(text: str) -> str:
    """Lower-case words of any script separated by single spaces (every punctuation mark separates).

    `benchmark.normalize.norm_token` drops punctuation without a space (``a;b`` → ``ab``) and non-Latin
    letters; a class name must be found inside a semicolon-separated cp1252 row (``...;décalé``).
    """
    return _NON_WORD.sub(" ", text.lower()).strip()


_LETTERS = re.compile(r"[a-z]+")
_TEXT_SUFFIXES = (".csv", ".tsv", ".txt", ".json", ".md", ".rst", ".xml", ".yaml", ".yml")
_MAX_TEXT_FILE = 2_000_000
_MAX_CORPUS = 20_000_000
# Words marking a file as an annotation (mask, label map, boxes) by its folder or name.
ANNOTATION_WORDS = frozenset(
    {"mask", "masks", "label", "labels", "labelstr", "labelsts", "seg", "segmentation", "segmentations",
     "annot", "annotation", "annotations", "gt", "groundtruth", "dseg", "probseg", "roi", "bbox", "boxes"}
)  # fmt: skip
# Containers whose members may hold labels the text corpus cannot show.
OPAQUE_SUFFIXES = (".h5", ".hdf5", ".mat", ".npz", ".parquet", ".pkl", ".npy")


@dataclass(frozen=True)
class DatasetFacts:
    """What the raw folder of one dataset holds.

    Attributes:
        root: The dataset root.
        files: Every file below ``data/`` (``data/...``), sorted.
        corpus: `words` of every path and small text file, space-fenced.
        docs: The documentation's facts (title, legends).
        opaque: True when containers exist whose contents the corpus does not cover.
    """

    root: Path
    files: tuple[str, ...]
    corpus: str
    docs: DatasetDocs
    opaque: bool

    def annotation_files(self) -> list[str]:
        """Non-text files whose folder or name carries an annotation word (``masks/``, ``_dseg``,
        ``labelsTr``): the label maps a mask may come from (a ``labels.csv`` table is not one)."""
        return list(self._annotation_files)

    @functools.cached_property
    def _annotation_files(self) -> tuple[str, ...]:
        # Computed once per dataset: a check asks for every sample, and a tree of 20,000 files made that
        # 20,000 x samples word splits (perf/big_tree.py).
        out = []
        for rel in self.files:
            if rel.lower().endswith(_TEXT_SUFFIXES) or "readme" in rel.lower().rsplit("/", 1)[-1]:
                continue
            found: set[str] = set()
            for part in rel.split("/")[1:]:
                found.update(words(part).split())
                # A word glued to a number is still the word: a folder ``3LABEL`` holds label maps.
                found.update(_LETTERS.findall(part.lower()))
            if found & ANNOTATION_WORDS:
                out.append(rel)
        return tuple(out)


@functools.lru_cache(maxsize=32)
def _facts(root: str) -> DatasetFacts:
    base = Path(root)
    files = Dataset.from_root(base).data_files()
    chunks = [words(f) for f in files]
    size = 0
    for rel in files:
        low = rel.lower()
        if low.endswith(_TEXT_SUFFIXES) or "readme" in low.rsplit("/", 1)[-1]:
            try:
                if (base / rel).stat().st_size > _MAX_TEXT_FILE or size > _MAX_CORPUS:
                    continue
            except OSError:
                continue
            text = read_text_any(base / rel, _MAX_TEXT_FILE)
            size += len(text)
            chunks.append(words(text))
    corpus = " " + " ".join(c for c in chunks if c) + " "
    opaque = any(f.lower().endswith(OPAQUE_SUFFIXES) for f in files)
    return DatasetFacts(base, tuple(files), corpus, read_dataset_docs(base, files), opaque)


def dataset_facts(root: Path) -> DatasetFacts:
    """The facts of the dataset at ``root`` (cached per root for the process).

    Args:
        root: The dataset root (holding ``data/``).

    Returns:
        The facts.
    """
    return _facts(str(Path(root).resolve()))


@functools.lru_cache(maxsize=4096)
def _header(path: str) -> dict[str, Any]:
    return dicom_header(path)


def header_of(path: Path) -> dict[str, Any]:
    """A DICOM source's identifying header fields (PatientID, UIDs, Modality); empty for other files."""
    return _header(str(path))


def clear() -> None:
    """Forget the cached facts (tests that rewrite a dataset in place)."""
    _facts.cache_clear()
    _header.cache_clear()

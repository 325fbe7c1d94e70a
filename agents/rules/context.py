"""Dataset-level evidence and decisions: tables, README code maps, COCO files, the task type, modality hints.

One `DatasetContext` is built per candidate from a single listing of ``data/``; the per-sample pipeline
(`agents.rules.pipeline`) then reads what it needs from it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.rules.decisions import Decider, Hypothesis
from agents.rules.labels import code_maps_from_text
from agents.rules.source import DatasetFiles, stem
from agents.rules.tables import Table, load_table
from agents.rules.vocab import ANNOTATION_TOKENS, anatomy_from_words, modality_scores, tokens

log = logging.getLogger(__name__)

__all__ = ["DatasetContext"]

_MAX_README_CHARS = 20_000
_BOX_COLUMNS = (
    {"x_min", "x_max"},
    {"xmin", "xmax"},
    {"coordx", "diameter_mm"},
    {"x", "width"},
    {"cx", "width"},
)
_FORMAT_WORDS = {
    "synth",
    "nifti",
    "nii",
    "dicom",
    "dcm",
    "mha",
    "mhd",
    "nrrd",
    "tiff",
    "tif",
    "tiff16",
    "png",
    "jpg",
    "jpeg",
    "bmp",
    "pgm",
    "npy",
    "npz",
    "h5",
    "hdf5",
    "mat",
    "mat73",
    "parquet",
    "avi",
    "mp4",
    "coco",
    "series",
    "multiframe",
    "stack",
    "shards",
    "cine",
    "4d",
    "3d",
    "2d",
    "raw",
    "data",
    "dataset",
    "images",
    "image",
}


@dataclass
class DatasetContext:
    """What the rules baseline knows about one dataset before looking at any sample.

    Attributes:
        root: The dataset root.
        name: The dataset's name.
        files: The listing of ``data/``.
        sources: The manifest's source paths (``data/...``), in manifest order.
        tables: Label/box tables (not the samples' own files).
        readme: README text (bounded).
        code_maps: README ``code → name`` maps by context word.
        class_maps: ``{id: name}`` maps from JSON class files (``classes.json``) and ``classes.txt`` lists.
        coco: COCO documents (``images`` + ``annotations``).
    """

    root: Path
    name: str
    files: DatasetFiles
    sources: list[str]
    tables: list[Table] = field(default_factory=list)
    readme: str = ""
    code_maps: dict[str, dict[int, str]] = field(default_factory=dict)
    class_maps: list[dict[int, str]] = field(default_factory=list)
    coco: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @classmethod
    def build(cls, root: Path, name: str, sources: Sequence[str]) -> DatasetContext:
        """List the folder and load its tables, READMEs and class files.

        Args:
            root: The dataset root.
            name: The dataset name.
            sources: Manifest source paths (``data/...``).

        Returns:
            The context.
        """
        files = DatasetFiles.scan(root)
        ctx = cls(root, name, files, list(sources))
        source_set = set(sources)
        texts = []
        for rel in files.texts():
            try:
                texts.append((root / rel).read_text(encoding="utf-8", errors="replace")[:_MAX_README_CHARS])
            except OSError as exc:
                log.debug("cannot read %s: %s", rel, exc)
        ctx.readme = "\n".join(texts)
        ctx.code_maps = code_maps_from_text(ctx.readme)
        for rel in files.tables():
            if rel in source_set:
                continue
            if rel.lower().endswith(".txt"):
                ctx._maybe_class_list(rel)
                continue
            table = load_table(root / rel, rel)
            if table is None:
                continue
            raw = table.raw
            if isinstance(raw, dict) and "annotations" in raw and "images" in raw:
                ctx.coco.append((rel, raw))
            elif isinstance(raw, dict) and raw and all(isinstance(v, str) for v in raw.values()):
                ctx.class_maps.append({int(k): v for k, v in raw.items() if str(k).isdigit()})
            elif not table.frame.empty:
                ctx.tables.append(table)
        return ctx

    def _maybe_class_list(self, rel: str) -> None:
        name = rel.rsplit("/", 1)[-1].lower()
        if not any(w in name for w in ("class", "names", "categories", "labels")) or (
            "/" in rel[5:] and self.files.is_annotation(rel.rsplit("/", 1)[0] + "/x")
        ):
            return
        try:
            lines = [
                ln.strip() for ln in (self.root / rel).read_text(encoding="utf-8").splitlines() if ln.strip()
            ]
        except (OSError, UnicodeDecodeError):
            return
        if lines and all(len(ln) < 60 for ln in lines):
            self.class_maps.append(dict(enumerate(lines)))

    # ------------------------------------------------------------------ evidence
    def words(self) -> list[str]:
        """Tokens of the dataset name, folder and file names of the sources, and the README."""
        words = tokens(self.name)
        for src in self.sources[:5]:
            words += tokens(src[5:])
        return words + tokens(self.readme[:2000])

    def modality_hypotheses(self, dicom_modality: str | None, hu_like: bool) -> list[Hypothesis[str]]:
        """Rank modalities from a DICOM tag, HU-like intensities and the words on disk.

        Args:
            dicom_modality: The mapped DICOM Modality, if any.
            hu_like: True when the intensities look like Hounsfield units (air near -1000).

        Returns:
            Hypotheses over modality names.
        """
        scores = modality_scores(tokens(self.name), 1.0)
        for word_source, weight in (
            (tokens(" ".join(s[5:] for s in self.sources[:5])), 0.5),
            (tokens(self.readme[:2000]), 0.5),
        ):
            for key, val in modality_scores(word_source, weight).items():
                scores[key] = scores.get(key, 0.0) + val
        if dicom_modality:
            scores[dicom_modality] = scores.get(dicom_modality, 0.0) + 4.0
        if hu_like:
            scores["CT"] = scores.get("CT", 0.0) + 2.0
        hyps = [Hypothesis(m, s, "words/tags on disk") for m, s in scores.items()]
        if not hyps:
            hyps = [Hypothesis("NA", 0.0, "no modality evidence")]
        return sorted(hyps, key=lambda h: -h.score)

    def anatomy(self) -> list[str]:
        """``"Organ (Region)"`` entries named by the dataset name and source paths."""
        return anatomy_from_words(tokens(self.name) + [w for s in self.sources[:3] for w in tokens(s[5:])])[
            :2
        ]

    def object_words(self) -> list[str]:
        """Words of the dataset name that are neither format, modality nor anatomy words (``nodule``)."""
        from agents.rules.vocab import MODALITY_WORDS, ORGAN_REGION

        return [
            w
            for w in tokens(self.name)
            if w not in _FORMAT_WORDS
            and w not in MODALITY_WORDS
            and w not in ORGAN_REGION
            and not w.isdigit()
            and len(w) > 2
        ] or ["object"]

    def box_tables(self) -> list[Table]:
        """Tables whose columns look like boxes."""
        out = []
        for t in self.tables:
            cols = {str(c).lower() for c in t.frame.columns}
            if any(group <= cols for group in _BOX_COLUMNS):
                out.append(t)
        return out

    def yolo_dirs(self) -> bool:
        """True when per-image ``.txt`` label files with five numbers per line exist."""
        for rel in self.files.files:
            if rel.lower().endswith(".txt") and self.files.is_annotation(rel) and "readme" not in rel.lower():
                try:
                    line = (self.root / rel).read_text(encoding="utf-8").strip().split("\n", 1)[0]
                except (OSError, UnicodeDecodeError):
                    continue
                return len(line.split()) == 5
        return False

    def task_hypotheses(self, seg_signals: int, source_is_container_with_mask: bool) -> list[Hypothesis[str]]:
        """Rank task types from the evidence on disk.

        Args:
            seg_signals: How many samples have a mask-like sibling (checked on the first few samples).
            source_is_container_with_mask: A source container has a ``label``/``mask`` key.

        Returns:
            Hypotheses over ``segmentation`` / ``detection`` / ``classification``.
        """
        seg = 0.0
        if seg_signals:
            seg += 2.5 + 0.2 * seg_signals
        if source_is_container_with_mask:
            seg += 3.0
        if any("mask" in {str(c).lower() for c in t.frame.columns} for t in self.tables):
            seg += 2.0
        if any(self.files.is_annotation(s) for s in self.sources):
            seg += 2.5
        det = 0.0
        if self.coco:
            det += 3.5
        if self.box_tables():
            det += 3.5
        if self.yolo_dirs():
            det += 3.5
        cls = 1.5 + (0.5 if self.tables else 0.0)
        hyps = [
            Hypothesis("segmentation", seg, "masks on disk"),
            Hypothesis("detection", det, "box files"),
            Hypothesis("classification", cls, "the default: an image-level label"),
        ]
        return sorted(hyps, key=lambda h: -h.score)

    def decide_task(self, decider: Decider, seg_signals: int, container_mask: bool) -> str:
        """Decide the dataset's task type (a dataset-level decision point)."""
        return decider.choose("task_type", self.task_hypotheses(seg_signals, container_mask))

    def mask_words(self, mask_rel: str, source_rel: str) -> list[str]:
        """Class words in a mask's file name that the image's name does not have
        (``abd_003_spleen`` → spleen)."""
        src = set(tokens(stem(source_rel.rsplit("/", 1)[-1])))
        words = [
            w
            for w in tokens(stem(mask_rel.rsplit("/", 1)[-1]))
            if w not in src
            and w not in ANNOTATION_TOKENS
            and not w.isdigit()
            and len(w) > 2
            and w not in _FORMAT_WORDS
            and not any(ch.isdigit() for ch in w)
        ]
        return words

    def json_dump(self) -> dict[str, Any]:
        """A JSON-able summary for the trace."""
        return {
            "files": len(self.files.files),
            "tables": [t.relpath for t in self.tables],
            "coco": [rel for rel, _ in self.coco],
            "code_maps": {k: {str(c): n for c, n in v.items()} for k, v in self.code_maps.items()},
            "class_maps": [
                json.loads(json.dumps({str(k): v for k, v in m.items()})) for m in self.class_maps
            ],
        }

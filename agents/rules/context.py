"""Dataset-level evidence and decisions: tables, README code maps, COCO files, the task type, modality hints.

One `DatasetContext` is built per candidate from a single listing of ``data/``; the per-sample pipeline
(`agents.rules.pipeline`) then reads what it needs from it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.rules.decisions import Decider, Hypothesis
from agents.rules.labels import code_maps_from_text, label_column_hypotheses
from agents.rules.source import DatasetFiles, stem
from agents.rules.tables import Table, TableSkipped, join, read_table, sample_ids
from agents.rules.vocab import (
    ANNOTATION_TOKENS,
    MODALITY_WORDS,
    ORGAN_REGION,
    anatomy_from_words,
    modality_scores,
    tokens,
)
from medio.dataset_docs import DatasetDocs, bids_entities, read_dataset_docs, read_text_any
from medio.inspect import dicom_header

log = logging.getLogger(__name__)

__all__ = ["DatasetContext"]

_MAX_README_CHARS = 20_000
# Documents that describe the dataset, never label tables of its samples.
_DOC_FILES = ("dataset.json", "dataset_description.json", "dseg.tsv")
_LEGEND_LINE = re.compile(r"^(\d{1,3})\s*(?:[:=,\t;-]|\s)\s*(\S.*)$")
_LEGEND_ID_COLUMNS = ("index", "id", "value", "label_id", "class_id", "label_value", "code")
_LEGEND_NAME_COLUMNS = ("name", "label", "label_name", "class", "class_name", "description", "structure")
# File formats that, alone, suggest a modality (a TIFF with no DICOM header is most often a microscope's).
_FORMAT_MODALITY = {"tiff": ("Microscopy", 0.8)}
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
        skipped_tables: Files under a table suffix that were not used, with the one-line reason.
        readme: README text (bounded).
        code_maps: README ``code → name`` maps by context word.
        class_maps: ``{id: name}`` maps from JSON class files (``classes.json``) and ``classes.txt`` lists.
        coco: COCO documents (``images`` + ``annotations``).
        docs: What the documentation states (title, legends) - `medio.dataset_docs`.
        header_cache: Header id facts per source (UIDs, PatientID), read once.
    """

    root: Path
    name: str
    files: DatasetFiles
    sources: list[str]
    tables: list[Table] = field(default_factory=list)
    skipped_tables: dict[str, str] = field(default_factory=dict)
    readme: str = ""
    code_maps: dict[str, dict[int, str]] = field(default_factory=dict)
    class_maps: list[dict[int, str]] = field(default_factory=list)
    coco: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    docs: DatasetDocs = field(default_factory=DatasetDocs)
    header_cache: dict[str, dict[str, Any]] = field(default_factory=dict)

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
        ctx.docs = read_dataset_docs(root, files.files)
        # BIDS READMEs have no extension; documents' own words (dataset.json channel names) count too.
        known = set(files.texts())
        texts += [
            read_text_any(root / rel, _MAX_README_CHARS) for rel in ctx.docs.readmes if rel not in known
        ]
        texts += [ctx.docs.text] if ctx.docs.text else []
        ctx.readme = "\n".join(texts)
        ctx.code_maps = code_maps_from_text(ctx.readme)
        ctx.class_maps.extend(ctx.docs.class_maps)
        image_stems = {stem(s.rsplit("/", 1)[-1]) for s in sources}
        for rel in files.tables():
            name = rel.rsplit("/", 1)[-1].lower()
            if rel in source_set or name.endswith(_DOC_FILES):
                continue
            if name.endswith(".json") and stem(rel.rsplit("/", 1)[-1]) in image_stems:
                continue  # a BIDS sidecar of an image (acquisition parameters), not a label table
            if rel.lower().endswith(".txt"):
                ctx._maybe_class_list(rel)
                continue
            try:
                ctx._add_table(read_table(root / rel, rel))
            except TableSkipped as exc:
                ctx.skipped_tables[rel] = exc.reason
            except Exception as exc:
                # A table that parses but trips a heuristic (cells of an unforeseen shape) is a bug to fix,
                # logged with its traceback; the dataset goes on without that table.
                log.warning("rules: table %s skipped: %s: %s", rel, type(exc).__name__, exc, exc_info=True)
                ctx.skipped_tables[rel] = f"{type(exc).__name__}: {exc}"
        if ctx.skipped_tables:
            log.info(
                "rules: %d table file(s) not used; first: %s",
                len(ctx.skipped_tables),
                "; ".join(f"{k}: {v}" for k, v in list(ctx.skipped_tables.items())[:1]),
            )
        return ctx

    def _add_table(self, table: Table) -> None:
        raw = table.raw
        if isinstance(raw, dict) and "annotations" in raw and "images" in raw:
            self.coco.append((table.relpath, raw))
        elif isinstance(raw, dict) and raw and all(isinstance(v, str) for v in raw.values()):
            self.class_maps.append({int(k): v for k, v in raw.items() if str(k).isdigit()})
        elif not table.frame.empty:
            self.tables.append(table)
            self._maybe_legend_table(table)

    def _maybe_class_list(self, rel: str) -> None:
        name = rel.rsplit("/", 1)[-1].lower()
        if not any(w in name for w in ("class", "names", "categories", "labels", "legend")) or (
            "/" in rel[5:] and self.files.is_annotation(rel.rsplit("/", 1)[0] + "/x")
        ):
            return
        lines = [ln.strip() for ln in read_text_any(self.root / rel, 200_000).splitlines() if ln.strip()]
        if not lines or not all(len(ln) < 60 for ln in lines):
            return
        # "0 background" / "1: Läsion" / "2 = tumour" lines give their ids; bare names are numbered in order.
        pairs = [_LEGEND_LINE.match(ln) for ln in lines]
        if all(pairs):
            self.class_maps.append({int(m.group(1)): m.group(2).strip() for m in pairs if m})
        else:
            self.class_maps.append(dict(enumerate(lines)))

    def _maybe_legend_table(self, table: Table) -> None:
        """A small table of integer ids and names (``index,name``; ``value,label``) is a class legend too."""
        frame = table.frame
        if not 2 <= len(frame) <= 256 or frame.shape[1] > 4:
            return
        ids = next((c for c in frame.columns if str(c).lower() in _LEGEND_ID_COLUMNS), None)
        names = next((c for c in frame.columns if str(c).lower() in _LEGEND_NAME_COLUMNS), None)
        if ids is None or names is None:
            return
        values = [str(v).strip() for v in frame[ids]]
        labels = [str(n).strip() for n in frame[names]]
        # A legend names each id once; a per-sample label table ("id,label") repeats its class names.
        if (
            not all(v.isdigit() for v in values)
            or len(set(values)) != len(values)
            or len(set(labels)) != len(labels)
        ):
            return
        self.class_maps.append({int(v): n for v, n in zip(values, labels, strict=True)})

    # ------------------------------------------------------------------ evidence
    def name_hypotheses(self) -> list[Hypothesis[str]]:
        """The dataset's name: the documented one (README title, dataset.json, dataset_description.json)
        before the folder id."""
        hyps = []
        if self.docs.title and self.docs.title != self.name:
            hyps.append(
                Hypothesis(self.docs.title, 4.5, f"named by {self.docs.title_source}", self.docs.title)
            )
        hyps.append(Hypothesis(self.name, 2.0, "the dataset folder's name", self.name))
        return hyps

    def header_ids(self, rel: str) -> dict[str, Any]:
        """Identifier fields of a DICOM source's header (PatientID, instance/series/study UIDs), read once."""
        if rel not in self.header_cache:
            self.header_cache[rel] = dicom_header(self.root / rel)
        return self.header_cache[rel]

    def label_table_joins(self) -> int:
        """How many of the first samples a label-like table joins (evidence for image-level labels)."""
        hits = 0
        for rel in self.sources[:3]:
            ids = sample_ids(rel, header=self.header_ids(rel))
            for table in self.tables:
                found = join(table, ids)
                if found is None or found.strength < 2.0:
                    continue
                cols = label_column_hypotheses(table.frame, found.column, self.code_maps)
                if cols and cols[0].score > 0.5:
                    hits += 1
                    break
        return hits

    def words(self) -> list[str]:
        """Tokens of the dataset name, folder and file names of the sources, and the README."""
        words = tokens(self.name)
        for src in self.sources[:5]:
            words += tokens(src[5:])
        return words + tokens(self.readme[:2000])

    def modality_hypotheses(
        self, dicom_modality: str | None, hu_like: bool, file_format: str | None = None
    ) -> list[Hypothesis[str]]:
        """Rank modalities from a DICOM tag (the mapped Modality), HU-like intensities (air near -1000), the
        documentation and the words on disk; ``file_format`` (medio's format family of the source) is a weak
        prior: TIFF suggests microscopy.
        """
        scores = modality_scores(tokens(self.name), 1.0)
        votes = [modality_scores(tokens(self.docs.title), 1.0)] if self.docs.title else []
        votes.append(modality_scores(tokens(" ".join(s[5:] for s in self.sources[:5])), 0.5))
        votes.append(modality_scores(tokens(self.readme[:4000]), 0.5))
        votes += [{dicom_modality: 4.0}] if dicom_modality else []
        votes += [{"CT": 2.0}] if hu_like else []
        prior = _FORMAT_MODALITY.get(file_format or "")
        votes += [{prior[0]: prior[1]}] if prior is not None and not dicom_modality else []
        for vote in votes:
            for key, val in vote.items():
                scores[key] = scores.get(key, 0.0) + val
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
        # The documented name says what the dataset is about; a folder id (ds042_x) often says nothing.
        return [
            w
            for w in tokens(self.docs.title or self.name)
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

    def task_hypotheses(
        self,
        seg_signals: int,
        source_is_container_with_mask: bool,
        table_joins: int = 0,
        exact_pairs: int = 0,
    ) -> list[Hypothesis[str]]:
        """Rank task types from the evidence on disk.

        A task with no evidence at all is not offered (sampling at temperature > 0 must not turn a
        classification dataset into a segmentation one that no mask supports); a label table that joins the
        samples is evidence for image-level labels, as label maps on the image's grid are for segmentation.

        Args:
            seg_signals: How many samples have a mask-like sibling (checked on the first few samples).
            source_is_container_with_mask: A source container has a ``label``/``mask`` key.
            table_joins: How many of the first samples a label table joins.
            exact_pairs: How many of the first samples have a mask paired by the community naming rule.

        Returns:
            Hypotheses over ``segmentation`` / ``detection`` / ``classification``.
        """
        seg = 0.0
        if seg_signals:
            seg += 2.5 + 0.2 * seg_signals
        if exact_pairs:
            seg += 1.5  # a label map named exactly after the image: stronger than any table
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
        # A joined label table lifts classification only up to a tie with fuzzy mask-like siblings (ties go
        # to segmentation, listed first); an exactly paired label map always wins.
        cls = 1.5 + (0.5 if self.tables else 0.0) + (0.4 + 0.2 * table_joins if table_joins else 0.0)
        hyps = [
            Hypothesis("segmentation", seg, "masks on disk"),
            Hypothesis("detection", det, "box files"),
            Hypothesis("classification", cls, "the default: an image-level label"),
        ]
        hyps = [h for h in hyps if h.score > 0.0 or h.value == "classification"]
        return sorted(hyps, key=lambda h: -h.score)

    def decide_task(
        self, decider: Decider, seg_signals: int, container_mask: bool, exact_pairs: int = 0
    ) -> str:
        """Decide the dataset's task type (a dataset-level decision point)."""
        joins = self.label_table_joins() if self.tables else 0
        hyps = self.task_hypotheses(seg_signals, container_mask, joins, exact_pairs)
        return decider.choose("task_type", hyps)

    def mask_words(self, mask_rel: str, source_rel: str) -> list[str]:
        """Class words in a mask's file name that the image's name does not have
        (``abd_003_spleen`` → spleen); for BIDS names the ``label-``/``desc-`` value
        (``sub-01_desc-brain_mask`` → brain)."""
        entities = bids_entities(mask_rel.rsplit("/", 1)[-1])
        for key in ("label", "desc"):
            if entities.get(key):
                return [entities[key]]
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
            "skipped_tables": dict(self.skipped_tables),
            "coco": [rel for rel, _ in self.coco],
            "code_maps": {k: {str(c): n for c, n in v.items()} for k, v in self.code_maps.items()},
            "class_maps": [
                json.loads(json.dumps({str(k): v for k, v in m.items()})) for m in self.class_maps
            ],
        }

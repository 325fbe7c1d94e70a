"""Checks that tie a candidate's choices back to evidence the dataset documents, without ground truth.

The other evidence checks ask "is what was written internally coherent and re-renderable?". These ask "did the
candidate follow the benchmark's documented rules where the raw folder says what the answer must be?":

- the subject id must *identify* the sample: a file stem or folder name that several manifest lines share
  cannot;
- the slice/frame must follow the task rule (docs/benchmark.md, "Which slice or frame is the sample"): the
  largest-foreground slice of the declared label volume, the middle slice of other volumes, the frame the
  dataset's frame table names;
- one candidate must not contradict itself across samples (task type, modality, class table).

Each reads only the manifest, the raw files the candidate declares, and the candidate's own outputs. Reads of
raw files are cached per (file, mtime, size), so the n candidates of a sample share them.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

import medio
from benchmark.fields import MODALITY_PRIMARY, SUBJECT_ID, TASK_TYPE
from medio.errors import MedioError
from medio.sniff import has_suffix, split_suffix
from medio.table import read_table
from validator import _raw
from validator.registry import check
from validator.report import CheckResult
from validator.sample import SampleView, file_signature, stat_path
from validator.values import nonmissing, norm_token

log = logging.getLogger(__name__)

SUBJECT = SUBJECT_ID
EXTRA_SUBJECT = "context.sample.extra.subject_id"
CASE_ID = "context.sample.extra.case_id"
SLICE = "media_geometry.spatial.three_d.slice_index"
FRAME = "media_geometry.spatial.video.frame_index"
TASK = TASK_TYPE
MODALITY = MODALITY_PRIMARY

_MAX_TABLE_BYTES = 2_000_000


def _stem(name: str) -> str:
    return split_suffix(name)[0]


def _norm(value: Any) -> str:
    return str(value).strip().lower() if value is not None else ""


# ----- subject id -----------------------------------------------------------------------------------------
def _non_identifying(paths: tuple[str, ...], folder_share: float | None) -> dict[str, str]:
    """Tokens that cannot identify one manifest sample, each with the reason.

    A file named by several manifest lines (records of one container) and a stem shared by files at different
    paths (``IM0001.dcm``, ``segmentation.nii``) name a group, not a sample: that is a fact of the manifest.
    With ``folder_share`` (the ``evidence_conventions`` profile only), a folder above that share of the
    samples (``Videos``, ``subset0``) is also refused: a convention, since one subject may own many samples.
    """
    out: dict[str, str] = {}
    by_path = Counter(paths)
    for path, n in by_path.items():
        if n > 1:
            out[_norm(_stem(path))] = f"the file {path.rsplit('/', 1)[-1]} holds {n} manifest samples"
    stems = Counter(_norm(_stem(p)) for p in by_path)
    for token, n in stems.items():
        if n > 1:
            out.setdefault(token, f"{n} different manifest files are named {token!r}")
    if folder_share is None:
        return out
    folders: Counter[str] = Counter()
    for path in paths:
        folders.update({_norm(part) for part in path.split("/")[:-1]})
    threshold = max(3, int(np.ceil(len(paths) * folder_share)))
    for token, n in folders.items():
        if n >= threshold:
            out.setdefault(token, f"the folder {token!r} holds {n} manifest samples")
    return out


def _manifest_paths(sample: SampleView) -> tuple[str, ...]:
    peers = sample.peers or []
    return tuple(p.entry.relpath for p in peers if p.entry is not None)


def _generic_tokens(sample: SampleView) -> tuple[int, dict[str, str]]:
    """The number of manifest paths and `_non_identifying` of them, computed once per candidate.

    Every sample of a candidate shares the peer list, so the first peer's memo holds the answer (as in
    `_majority`); recomputing it per sample would make the check quadratic in the dataset size.
    """
    peers = sample.peers or []
    holder = peers[0].memo if peers else sample.memo
    if "subject_generic_tokens" not in holder:
        paths = _manifest_paths(sample)
        share = sample.option("subject_folder_share", None)
        generic = _non_identifying(paths, None if share is None else float(share)) if len(paths) >= 2 else {}
        holder["subject_generic_tokens"] = (len(paths), generic)
    result: tuple[int, dict[str, str]] = holder["subject_generic_tokens"]
    return result


@check(
    "subject_id_identifies_sample",
    weight=0.06,
    fields=(SUBJECT, EXTRA_SUBJECT, CASE_ID),
    high_risk=True,
)
def subject_id_identifies_sample(sample: SampleView) -> CheckResult:
    """subject_id / case_id is not a file stem or folder name that several manifest samples share."""
    fields = (SUBJECT, EXTRA_SUBJECT, CASE_ID)
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    n_paths, generic = _generic_tokens(sample)
    if n_paths < 2:
        return CheckResult.ok(fields, skipped="fewer than two manifest samples")
    declared = {
        SUBJECT: sample.get(SUBJECT),
        EXTRA_SUBJECT: sample.extra.get("subject_id"),
        CASE_ID: sample.extra.get("case_id"),
    }
    bad = {
        f: (str(v), generic[_norm(v)])
        for f, v in declared.items()
        if isinstance(v, str) and _norm(v) in generic
    }
    for f, v in declared.items():
        other = _names_other_sample(sample, v) if f not in bad else None
        if other is not None:
            bad[f] = (str(v), f"it names the path of manifest sample {other}, not of this sample")
    if not bad:
        return CheckResult.ok(fields)
    value, why = next(iter(bad.values()))
    return CheckResult.fail(
        f"subject id {value!r} does not identify this sample ({why}); use the case id of this record "
        "(the folder or table row that differs between samples)",
        tuple(bad),
        flagged=sorted(bad),
    )


def _path_words(relpath: str) -> str:
    """A path's folder names and file stem as normalised words, each part fenced by `` | ``."""
    parts = relpath.split("/")
    words = [norm_token(p) for p in (*parts[:-1], _stem(parts[-1]))]
    return " | " + " | ".join(w for w in words if w) + " | "


def _manifest_words(sample: SampleView) -> tuple[list[tuple[int, str]], frozenset[str]]:
    """Per manifest sample its path words, and every word of every path (once per candidate)."""
    peers = sample.peers or []
    holder = peers[0].memo if peers else sample.memo
    if "subject_path_words" not in holder:
        words = [(p.index, _path_words(p.entry.relpath).replace(" | ", "  ")) for p in peers if p.entry]
        vocabulary = frozenset(w for _, text in words for w in text.split())
        holder["subject_path_words"] = (words, vocabulary)
    result: tuple[list[tuple[int, str]], frozenset[str]] = holder["subject_path_words"]
    return result


def _names_other_sample(sample: SampleView, value: Any) -> int | None:
    """The manifest sample whose path names ``value`` (as whole words of a folder or file stem) when this
    sample's path does not: the id was copied from a neighbour."""
    token = norm_token(value) if isinstance(value, str) and nonmissing(value) else ""
    if sample.entry is None or len(token) < 3:
        return None
    needle = f" {token} "
    mine = _path_words(sample.entry.relpath).replace(" | ", "  ")
    if needle in mine:
        return None
    words, vocabulary = _manifest_words(sample)
    if not set(token.split()) <= vocabulary:
        return None  # some word of the id is in no manifest path: no need to scan them
    owners = [i for i, text in words if needle in text]
    return min(owners) if owners else None


# ----- slice / frame rule ---------------------------------------------------------------------------------
@lru_cache(maxsize=512)
def _largest_foreground(path: str, signature: tuple[int, int] | None) -> int | None:
    """The largest-foreground slice (axis 0) of a label volume, or None when it is not a 3D label map."""
    del signature  # part of the cache key only: a rewritten file is read again
    read = _raw.label_array(Path(path))
    if isinstance(read, str):
        log.debug("cannot read label volume %s: %s", path, read)
        return None
    arr = read[0]
    if arr.ndim != 3 or arr.dtype.kind not in "iub" or not arr.any():
        return None
    return int(medio.choose_slice(arr.shape, 0, arr))


def _expected_slice(sample: SampleView) -> tuple[int | None, str]:
    task = _norm(sample.get(TASK))
    shape = sample.get("media_geometry.spatial.three_d.volume_shape_voxels")
    if task == "segmentation":
        label = sample.extra.get("mask_file") or sample.extra.get("label_file")
        path = sample.dataset_path(label)
        if path is None or not path.is_file():
            return None, "no declared label volume"
        k = _largest_foreground(str(path), file_signature(path))
        return k, f"the largest-foreground slice of {label}"
    if isinstance(shape, list) and shape and isinstance(shape[0], int) and shape[0] > 0:
        return shape[0] // 2, f"the middle slice of a {shape[0]}-slice volume"
    return None, "no volume shape"


@lru_cache(maxsize=64)
def _frame_tables(root: str) -> tuple[tuple[tuple[str, ...], tuple[tuple[str, ...], ...]], ...]:
    """CSV tables under ``data/`` with a ``frame`` column: ``(header, rows)`` each, lower-cased header."""
    tables = []
    for path in sorted(p for p in Path(root, "data").rglob("*") if has_suffix(p.name, ".csv")):
        try:
            rows = read_table(path, max_bytes=_MAX_TABLE_BYTES).frame
        except (MedioError, OSError):
            continue
        header = tuple(str(c).lower() for c in rows.columns)
        if "frame" in header and len(rows):
            tables.append((header, tuple(tuple(r) for r in rows.values.tolist())))
    return tuple(tables)


def _expected_frame(sample: SampleView) -> tuple[int | None, str]:
    if sample.dataset_root is None:
        return None, "no dataset"
    source = sample.extra.get("source_file") or (sample.entry.relpath if sample.entry else None)
    if not isinstance(source, str):
        return None, "no source"
    name = source.rsplit("/", 1)[-1]
    stem = _stem(name)
    for header, rows in _frame_tables(str(sample.dataset_root)):
        col = header.index("frame")
        for row in rows:
            cells = {c.strip().rsplit("/", 1)[-1] for c in row}
            if name in cells or stem in {_stem(c) for c in cells}:
                try:
                    return int(float(row[col])), "the frame the dataset's frame table names"
                except (ValueError, IndexError):
                    continue
    n = sample.get("media_geometry.spatial.video.n_frames")
    if isinstance(n, int) and n > 0:
        return n // 2, f"the middle frame of {n} (no frame table names this video)"
    return None, "no frame table and no frame count"


@check("plane_follows_rule", weight=0.05, fields=(SLICE, FRAME), high_risk=True)
def plane_follows_rule(sample: SampleView) -> CheckResult:
    """The slice/frame is the one the task rule picks (largest-foreground/middle slice, frame-table frame)."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, (SLICE, FRAME))
    three_d = sample.block("media_geometry.spatial.three_d")
    video = sample.block("media_geometry.spatial.video")
    if three_d:
        field, declared = SLICE, three_d.get("slice_index")
        expected, why = _expected_slice(sample)
    elif video:
        field, declared = FRAME, video.get("frame_index")
        expected, why = _expected_frame(sample)
    else:
        return CheckResult.ok((SLICE, FRAME), skipped="2D sample")
    if expected is None:
        return CheckResult.ok((field,), skipped=why)
    if isinstance(declared, int) and declared == expected:
        return CheckResult.ok((field,), expected=expected)
    return CheckResult.fail(
        f"{field.rsplit('.', 1)[-1]} is {declared!r} but the task rule picks {expected} ({why}); "
        "render that plane and its mask",
        (field,),
        expected=expected,
    )


_ANNOTATION_NAME = re.compile(
    r"(^|[^a-z])(seg|segmentation|mask|masks|label|labels|annot|annotation)([^a-z]|$)"
)


@check("task_matches_source_kind", weight=0.06, fields=(TASK,), high_risk=True)
def task_matches_source_kind(sample: SampleView) -> CheckResult:
    """A sample whose manifest file holds an integer label map (few distinct ids) is standardized as
    segmentation."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, (TASK,))
    if sample.entry is None or sample.dataset_root is None:
        return CheckResult.ok((TASK,), skipped="no manifest file")
    task = _norm(sample.get(TASK))
    if task in ("segmentation", ""):
        return CheckResult.ok((TASK,))
    path = sample.dataset_path(sample.entry.relpath)
    if path is None or stat_path(path) is None:
        return CheckResult.ok((TASK,), skipped="the manifest file is not there")
    facts = _raw.label_facts(path)
    max_ids = int(sample.option("label_map_max_ids", 16))
    if not facts.ok or facts.colour or not 2 <= len(facts.ids) <= max_ids:
        return CheckResult.ok((TASK,))
    what = f"its member {facts.key!r}" if facts.key else "it"
    return CheckResult.fail(
        f"the manifest lists {sample.entry.relpath.rsplit('/', 1)[-1]!r} and {what} holds an integer label "
        f"map with ids {list(facts.ids)}, but task_type is {task!r}; a listed label map is a segmentation "
        "target",
        (TASK,),
    )


@check("task_matches_source_name", weight=0.06, fields=(TASK,), high_risk=True)
def task_matches_source_name(sample: SampleView) -> CheckResult:
    """A sample whose manifest file is named as a mask/label map is standardized as segmentation (a naming
    convention of the bundled suite: profile ``evidence_conventions``)."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, (TASK,))
    listed = sample.entry.relpath if sample.entry is not None else sample.extra.get("source_file")
    if not isinstance(listed, str):
        return CheckResult.ok((TASK,), skipped="no manifest file")
    name = _stem(listed).lower()
    task = _norm(sample.get(TASK))
    if not _ANNOTATION_NAME.search(name) or task in ("segmentation", ""):
        return CheckResult.ok((TASK,))
    return CheckResult.fail(
        f"the manifest lists {listed.rsplit('/', 1)[-1]!r}, a label map, but task_type is {task!r}; a listed "
        "label map is the segmentation target of the image beside it",
        (TASK,),
    )


# ----- one candidate, one story ---------------------------------------------------------------------------
def _class_table(sample: SampleView) -> str:
    task = _norm(sample.get(TASK))
    block = sample.block(f"tasks.{task}") if task else {}
    table = block.get("classes") or block.get("class_names")
    if not isinstance(table, dict):
        return ""
    return "|".join(f"{k}={_norm(v)}" for k, v in sorted(table.items(), key=lambda kv: str(kv[0])))


_PAYLOAD_FIELDS = (
    "label",
    "label_name",
    "coco_2d",
    "mask_3d",
    "video_coco",
    "boxes2d",
    "boxes3d",
    "frame_boxes2d",
)
FACET_NAMES = ("task type", "modality", "class table", "dataset name", "payload fields")
DATASET_NAME = "record.dataset_name"


def _payload_kind(sample: SampleView) -> str:
    """Which payload fields the active task branch fills (a candidate writes one dataset one way)."""
    task = _norm(sample.get(TASK))
    block = sample.block(f"tasks.{task}") if task else {}
    return ",".join(k for k in _PAYLOAD_FIELDS if block.get(k) not in (None, "", [], {}))


def _facets(sample: SampleView) -> tuple[str, ...]:
    return (
        _norm(sample.get(TASK)),
        _norm(sample.get(MODALITY)),
        _class_table(sample),
        str(sample.get(DATASET_NAME) or "").strip(),  # spelled one way, case included
        _payload_kind(sample),
    )


def _majority(peers: list[SampleView]) -> tuple[str, ...]:
    # Computed once per candidate: the first peer's memo holds it for every sample of the candidate.
    holder = peers[0].memo
    if "consistency_majority" not in holder:
        facets = [_facets(p) for p in peers if p.annotation is not None]
        holder["consistency_majority"] = tuple(
            Counter(f[k] for f in facets).most_common(1)[0][0] if facets else ""
            for k in range(len(FACET_NAMES))
        )
    majority: tuple[str, ...] = holder["consistency_majority"]
    return majority


@check("consistent_across_samples", weight=0.03, fields=(TASK, MODALITY, "tasks", DATASET_NAME))
def consistent_across_samples(sample: SampleView) -> CheckResult:
    """Task type, modality, class table, dataset name and payload fields agree with the candidate's other
    samples (the majority)."""
    fields = (TASK, MODALITY, "tasks", DATASET_NAME, "tasks")
    peers = sample.peers or []
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields[:4])
    if len(peers) < 3:
        return CheckResult.ok(fields[:4], skipped="too few samples to compare")
    mine, common = _facets(sample), _majority(peers)
    off = [k for k in range(len(FACET_NAMES)) if mine[k] != common[k]]
    if not off:
        return CheckResult.ok(fields[:4])
    what = "; ".join(f"{FACET_NAMES[k]} {mine[k] or 'empty'!r} vs {common[k] or 'empty'!r}" for k in off)
    return CheckResult.fail(
        f"this sample disagrees with the other samples of the dataset ({what}); one dataset has one task, "
        "one modality, one class table, one name and one way of writing its payload",
        tuple(dict.fromkeys(fields[k] for k in off)),
        score=1.0 - len(off) / len(FACET_NAMES),
    )


def clear_caches() -> None:
    """Forget cached label-volume slices and frame tables (tests, cold-start timing)."""
    _largest_foreground.cache_clear()
    _frame_tables.cache_clear()


__all__ = [
    "clear_caches",
    "consistent_across_samples",
    "plane_follows_rule",
    "subject_id_identifies_sample",
    "task_matches_source_kind",
    "task_matches_source_name",
]

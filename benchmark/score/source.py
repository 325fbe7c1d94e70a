"""Source identification: stem normalisation, aliases, main stems and the source gate (SPEC §3.1-3.3).

The reference scorer never looks at pixels to decide whether an annotation describes the right raw file; it
compares normalised file stems. Its quirks (basename only, a fixed extension list, ``test_NN`` collapsing,
dataset-specific rules) are reproduced because the ``official`` numbers depend on them. The stem and alias
rules themselves (:func:`normalize_source_stem`, :func:`expand_aliases`) live in `benchmark.normalize`, shared
with the validator and the suite generator, and are re-exported here; this module adds what needs an
annotation or a ground-truth sample: the main stem, the scanned stems, the source gate and index matching.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from benchmark.normalize import expand_aliases, is_number, nonmissing, normalize_source_stem, scanned_stem
from benchmark.score import constants as C
from benchmark.score.normalize import as_dict
from benchmark.score.profiles import Profile

__all__ = [
    "aliases_of",
    "derive_source_stem",
    "expand_aliases",
    "expected_sources",
    "get_extra",
    "has_trace_evidence",
    "match_annotations",
    "normalize_source_stem",
    "sample_block",
    "scanned_stems",
    "source_from_notes",
    "source_score",
]

_LABEL_KEYS = frozenset({"label_text", "class_name", "label_name"})


def aliases_of(values: set[str]) -> set[str]:
    """Union of :func:`expand_aliases` over several stems."""
    out: set[str] = set()
    for v in values:
        out |= expand_aliases(v)
    return out


def sample_block(ann: dict[str, Any]) -> dict[str, Any]:
    """``context.sample`` of an annotation ({} when absent or malformed)."""
    return as_dict(as_dict(ann.get("context")).get("sample"))


def get_extra(ann: dict[str, Any]) -> dict[str, Any]:
    """``context.sample.extra`` with ``context.sample.subject_id`` copied in (the reference scorer's view of
    extra).

    Args:
        ann: A parsed annotation object.

    Returns:
        A new dict; the annotation is not modified.
    """
    sample = sample_block(ann)
    extra = dict(as_dict(sample.get("extra")))
    if "subject_id" in sample and "subject_id" not in extra:
        extra["subject_id"] = sample["subject_id"]
    return extra


@lru_cache(maxsize=1024)
def _dotted_path(dotted: str) -> tuple[bool, tuple[str, ...]]:
    # (starts in raw?, keys to follow): the constant key lists are looked up for every annotation.
    head, _, rest = dotted.partition(".")
    if head == "raw":
        return True, tuple(rest.split("."))
    # "extra.x" lives in extra; so do "labels.slice_stem" / "csv_label.dcm", whole
    return False, tuple((rest if head == "extra" else dotted).split("."))


def _lookup(ann: dict[str, Any], extra: dict[str, Any], dotted: str) -> Any:
    in_raw, parts = _dotted_path(dotted)
    node: Any = as_dict(ann.get("raw")) if in_raw else extra
    for part in parts:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def source_from_notes(ann: dict[str, Any]) -> str | None:
    """A source file named in ``provenance.notes`` ("Converted from: X", "Original file: X, Key: v", ...)."""
    notes = as_dict(ann.get("provenance")).get("notes")
    if not isinstance(notes, str) or not notes.strip():
        return None
    text = notes.strip()
    if text.lower().startswith("converted from:"):
        return text.split(":", 1)[1].strip() or None
    m = C.NOTES_RES[0].match(text)
    if m:
        return m.group(1)
    for rx in C.NOTES_RES[1:]:
        m = rx.search(text)
        if m:
            return m.group(1).strip() or None
    return None


def _first_truthy(ann: dict[str, Any], extra: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        v = _lookup(ann, extra, k)
        if v:
            return v
    return None


def _medical7_composed(ann: dict[str, Any], extra: dict[str, Any]) -> str | None:
    name = _first_truthy(ann, extra, C.MEDICAL7_NAME_KEYS)
    if not nonmissing(name):
        for k in ("original_filename", "original_file", "mat_basename", "mat_file"):
            v = extra.get(k)
            if v:
                name = PurePosixPath(str(v).replace("\\", "/")).stem
                break
    cfg = _first_truthy(ann, extra, C.MEDICAL7_CFG_KEYS)
    param = _first_truthy(ann, extra, C.MEDICAL7_PARAM_KEYS)
    if nonmissing(cfg) and nonmissing(param) and nonmissing(name):
        return f"{cfg}_{param}_{name}"
    return None


def _microscopy_stem(ann: dict[str, Any], extra: dict[str, Any]) -> str | None:
    paths = [v for k in C.MICROSCOPY_PATH_CANDIDATES if isinstance(v := _lookup(ann, extra, k), str)]
    for p in paths:
        m = C.DYNAMICNUCLEARNET_RE.search(p)
        if m:
            return normalize_source_stem(f"{m.group(1)}_{m.group(2)}_{m.group(3)}")
    seq = extra.get("sequence_id") or extra.get("sequence")
    if not seq and isinstance(extra.get("subject_id"), str):
        m = C.TEST_ID_RE.search(extra["subject_id"])
        seq = m.group(1) if m else None
    frame = None
    fi: Any = extra.get("frame_index")
    if is_number(fi) and float(fi).is_integer():
        frame = f"frame_{int(fi):04d}"
    else:
        for k in ("original_filename", "source_file", "source_path", "subpath"):
            v = extra.get(k)
            if isinstance(v, str) and v:
                m = C.FRAME_CAPTURE_RE.search(v)
                if m:
                    frame = m.group(1)
                break
    if not (seq and frame):
        return None
    dataset = str(as_dict(ann.get("record")).get("dataset_name") or "").lower()
    if dataset == "microscopy-demo" or any("dynamicnuclearnet" in p.lower() for p in paths):
        return normalize_source_stem(f"dynamicnuclearnet_{seq}_{frame}") or normalize_source_stem(
            f"{seq}_{frame}"
        )
    return normalize_source_stem(f"{seq}_{frame}")


def _mri_rd_stem(ann: dict[str, Any], extra: dict[str, Any]) -> str | None:
    for k in C.MRI_RD_PATHS:
        v = _lookup(ann, extra, k)
        if isinstance(v, str) and v:
            m = C.MRI_RD_FILE_RE.match(v.replace("\\", "/").split("/")[-1])
            if m:
                ext = m.group(2).lower()
                return normalize_source_stem(f"{m.group(1)}_{'jpg' if ext == 'jpeg' else ext}")
    return None


def _stem_candidates(ann: dict[str, Any], extra: dict[str, Any]) -> Iterator[Any]:
    """Candidate source values in the reference priority order, lazily (most annotations stop early)."""
    if extra.get("volume_id") is not None and extra.get("slice_id") is not None:
        yield f"volume_{extra['volume_id']}_slice_{extra['slice_id']}"
    for key in C.SOURCE_STEM_PRIORITY:
        yield _medical7_composed(ann, extra) if key == "composed_source" else _lookup(ann, extra, key)
    pid, visit = extra.get("patient_id"), extra.get("visit")
    if isinstance(pid, str) and pid and isinstance(visit, str) and visit:
        yield f"{pid}-{visit}-ADC_ss"
    elif pid:
        yield f"{pid}-VISIT_01-ADC_ss"
    if isinstance(extra.get("bisque_tags"), dict):
        yield extra["bisque_tags"].get("name")


def derive_source_stem(ann: dict[str, Any]) -> str | None:
    """The annotation's main stem: the first nonmissing source-like value, normalised (SPEC §3.2 step 1).

    Args:
        ann: A parsed annotation object.

    Returns:
        The main stem, or None when the annotation names no source.
    """
    extra = get_extra(ann)
    stem = _microscopy_stem(ann, extra)
    if stem:
        return stem
    if str(as_dict(ann.get("record")).get("dataset_name") or "").lower() == "mri-rd":
        stem = _mri_rd_stem(ann, extra)
        if stem:
            return stem
    for value in _stem_candidates(ann, extra):
        if nonmissing(value) and not isinstance(value, (dict, list)):
            stem = normalize_source_stem(value)
            if stem:
                return stem
    return normalize_source_stem(source_from_notes(ann))


def expected_sources(gt_sample: dict[str, Any]) -> set[str]:
    """Normalised accepted stems of a GT sample: ``expected_sources`` (else ``source_stem``) plus a nonmissing
    subject_id.
    """
    listed = gt_sample.get("expected_sources")
    raw_values = listed if isinstance(listed, list) and listed else [gt_sample.get("source_stem")]
    out = {s for v in raw_values if (s := normalize_source_stem(v))}
    subject = as_dict(gt_sample.get("expected_extra")).get("subject_id")
    if nonmissing(subject):
        s = normalize_source_stem(subject)
        if s:
            out.add(s)
    return out


def _skip_key(where: str, key: str, profile: Profile) -> bool:
    if profile.image_path_not_evidence and where == "record" and key == "image_path":
        return True
    return profile.labels_not_evidence and key in _LABEL_KEYS


def scanned_stems(ann: dict[str, Any], main_stem: str | None, profile: Profile) -> set[str]:
    """Stems of every source-like string value in extra, raw and record, plus the main stem (gate part A)."""
    out = {main_stem} if main_stem else set()
    for where, block in (
        ("extra", get_extra(ann)),
        ("raw", as_dict(ann.get("raw"))),
        ("record", as_dict(ann.get("record"))),
    ):
        for key, value in block.items():
            stem = None if _skip_key(where, key, profile) else scanned_stem(key, value)
            if stem:
                out.add(stem)
    return out


def has_trace_evidence(ann: dict[str, Any], profile: Profile) -> bool:
    """Gate part B: a source-trace key is filled in extra/raw/record, or provenance.notes names a source."""
    extra = get_extra(ann)
    if any(nonmissing(extra.get(k)) for k in C.SOURCE_TRACE_KEYS if not _skip_key("extra", k, profile)):
        return True
    for where, block in (("raw", as_dict(ann.get("raw"))), ("record", as_dict(ann.get("record")))):
        if any(nonmissing(block.get(k)) for k in C.RAW_SOURCE_KEYS if not _skip_key(where, k, profile)):
            return True
    record = as_dict(ann.get("record"))
    if any(nonmissing(record.get(k)) for k in C.RECORD_TRACE_KEYS):
        return True
    if any(nonmissing(_lookup(ann, extra, k)) for k in C.EXTRA_NESTED_TRACE_KEYS):
        return True
    return source_from_notes(ann) is not None


def source_score(ann: dict[str, Any], main_stem: str | None, expected: set[str], profile: Profile) -> float:
    """s_i: 1.0 when a scanned stem is an alias of an expected stem and the annotation carries trace evidence.

    Args:
        ann: A parsed annotation object.
        main_stem: Its :func:`derive_source_stem`.
        expected: :func:`expected_sources` of the GT sample.
        profile: Which evidence counts.

    Returns:
        1.0 or 0.0.
    """
    if not expected:
        return 0.0
    hit = bool(aliases_of(scanned_stems(ann, main_stem, profile)) & aliases_of(expected))
    return 1.0 if hit and has_trace_evidence(ann, profile) else 0.0


def match_annotations(
    indices: list[str], expected: dict[str, set[str]], stems: dict[str, str | None]
) -> dict[str, str | None]:
    """Greedy source-bucket matching of GT indices to annotation file stems (SPEC §3.2).

    Args:
        indices: GT indices (strings), in any order; they are processed in ascending numeric order.
        expected: Expected stems per GT index.
        stems: Main stem per annotation file stem (file name without ``.json``).

    Returns:
        For every GT index, the matched annotation file stem or None.
    """
    order = sorted(stems, key=lambda s: (0, int(s), s) if s.isdigit() else (1, 0, s))
    used: set[str] = set()
    out: dict[str, str | None] = {}
    for idx in sorted(indices, key=lambda s: (0, int(s), s) if s.isdigit() else (1, 0, s)):
        accepted = aliases_of(expected.get(idx, set()))
        chosen = next((f for f in order if f not in used and stems[f] and stems[f] in accepted), None)
        if chosen is None and idx in stems and idx not in used:
            chosen = idx
        if chosen is not None:
            used.add(chosen)
        out[idx] = chosen
    return out

"""Identify a sample's source and its siblings: the file to read, mask/label files, container keys, subject
id.

Everything here looks only at what is on disk under ``<dataset>/data/``: file and folder names, file sizes and
the headers `medio` reports. Never the ground truth (``VLM/``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import medio
from agents.rules.decisions import Hypothesis
from agents.rules.tables import TABLE_SUFFIXES
from agents.rules.vocab import ANNOTATION_TOKENS, GENERIC_NAMES, tokens
from benchmark.discover import Dataset
from medio.dataset_docs import bids_entities, pair_key
from medio.inspect import dicom_header
from medio.sniff import split_suffix

__all__ = [
    "EXACT_PAIR_SCORE",
    "DatasetFiles",
    "container_shapes",
    "image_key_hypotheses",
    "mask_candidates",
    "mask_key_hypotheses",
    "read_target_hypotheses",
    "stem",
    "subject_hypotheses",
]

_TEXT_SUFFIXES = (".md", ".txt", ".rst")
#: The score of a mask that pairs with the image by the community naming rule (above any fuzzy match).
EXACT_PAIR_SCORE = 6.0
# Folder words of an acquisition (a study, a series named by its modality code "RTIMAGE_2", "CT_1").
_VISIT_WORDS = frozenset(
    {"study", "series", "sequence", "scan", "visit", "session", "ses", "run", "acq"}
    | {"ct", "mr", "us", "cr", "dx", "mg", "pt", "nm", "xa", "rtimage", "rtdose", "rtstruct", "ot", "sr"}
)
_DIGITS = re.compile(r"\d+")
_IMAGE_KEY_WORDS = {
    "image": 3.0,
    "images": 3.0,
    "img": 2.5,
    "data": 1.0,
    "volume": 2.0,
    "vol": 1.5,
    "bmode": 2.5,
    "recon": 2.0,
    "x": 1.0,
    "ct": 2.0,
    "mr": 2.0,
    "t1": 1.5,
    "t2": 1.5,
    "raw": 1.0,
}
_MASK_KEY_WORDS = {"label", "labels", "mask", "masks", "seg", "segmentation", "gt", "y", "annotation"}
_NOT_IMAGE_KEY_WORDS = {
    "spacing",
    "ids",
    "id",
    "case",
    "displacement",
    "velocity",
    "strain",
    "meta",
    "header",
    "preview",
    "thumbnail",
    "affine",
}


def stem(name: str) -> str:
    """A file name without its (possibly double) extension (``a.nii.gz`` → ``a``, ``b.seg.nrrd`` → ``b``)."""
    return split_suffix(name)[0]


@dataclass
class DatasetFiles:
    """A one-time listing of ``<root>/data``.

    Attributes:
        root: The dataset root.
        files: Every file, as dataset-relative POSIX paths (``data/...``), sorted.
    """

    root: Path
    files: list[str] = field(default_factory=list)

    @classmethod
    def scan(cls, root: Path) -> DatasetFiles:
        """List every file under ``root/data`` (`benchmark.discover.Dataset.data_files`)."""
        return cls(root, Dataset.from_root(root).data_files())

    def texts(self) -> list[str]:
        """README-like text files (``.md``, ``.txt``, ``.rst`` whose name is not a per-sample label file)."""
        return [
            f
            for f in self.files
            if (f.lower().endswith(_TEXT_SUFFIXES) and "readme" in f.lower())
            or f.lower().endswith((".md", ".rst"))
        ]

    def tables(self) -> list[str]:
        """Files that may be tables."""
        return [f for f in self.files if f.lower().endswith(TABLE_SUFFIXES) and f not in self.texts()]

    def is_annotation(self, relpath: str) -> bool:
        """True when a folder or the file name carries an annotation word
        (``masks/``, ``_seg``, ``labelsTr``)."""
        words = set()
        for part in relpath.split("/")[1:]:
            words.update(tokens(part))
            words.add(part.lower())
        return bool(words & ANNOTATION_TOKENS)


def _is_generic(name: str) -> bool:
    """A file name that does not identify the sample (``IM0001``, ``segmentation``, ``image``)."""
    lower = name.lower()
    return lower in GENERIC_NAMES or bool(re.fullmatch(r"(im|img|image|slice|i)?[_-]?\d+", lower))


def _is_visit_folder(name: str) -> bool:
    """A study/series/date folder, which names an acquisition rather than the subject."""
    words = set(tokens(name))
    return bool(words & _VISIT_WORDS) or bool(re.search(r"(19|20)\d{6}", name))


def _digit_runs(text: str) -> set[str]:
    return {d.lstrip("0") or "0" for d in _DIGITS.findall(text)}


def _shared_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    """How many leading items (folder names, characters) ``a`` and ``b`` share."""
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def mask_candidates(
    files: DatasetFiles, source: str, *, exclude: set[str] | None = None
) -> list[Hypothesis[str]]:
    """Rank the annotation-like image files that may hold ``source``'s mask.

    A candidate whose stem pairs exactly with the source's under community naming rules (the same stem in a
    parallel tree, nnU-Net's ``<case>_0000`` → ``<case>``, BIDS entities without the suffix:
    `medio.dataset_docs.pair_key`) ranks above every fuzzy match; one that pairs exactly with another
    manifest sample is that sample's mask and is dropped. Otherwise scores add: shared name tokens, the same
    number in both names, closeness in the folder tree, the same file type; a candidate that names another
    sample's number is penalised.

    Args:
        files: The dataset listing.
        source: The sample's source path (``data/...``).
        exclude: Paths that cannot be the mask (the source itself, other samples' sources).

    Returns:
        Hypotheses over dataset-relative paths, best first (empty when nothing annotation-like exists).
    """
    exclude = exclude or set()
    src_parts = source.split("/")
    src_stem = stem(src_parts[-1])
    src_words = set(tokens(src_stem)) - ANNOTATION_TOKENS
    src_digits = _digit_runs(src_stem)
    if _is_generic(src_stem) or not src_digits:
        src_digits = _digit_runs(" ".join(p for p in src_parts[1:-1] if not _is_visit_folder(p)))
    path_words = set(tokens("/".join(src_parts[1:-1])))
    ext = src_parts[-1].lower().rsplit(".", 1)[-1]
    src_key = pair_key(src_stem)
    other_keys = {pair_key(stem(p.rsplit("/", 1)[-1])) for p in exclude} - {src_key}
    out: list[Hypothesis[str]] = []
    for cand in files.files:
        if cand == source or cand in exclude or cand.lower().endswith(TABLE_SUFFIXES + _TEXT_SUFFIXES):
            continue
        if cand.lower().endswith((".raw", ".zraw")) or not files.is_annotation(cand):
            continue
        c_parts = cand.split("/")
        c_stem = stem(c_parts[-1])
        c_key = pair_key(c_stem)
        if c_key in other_keys and c_key != src_key:
            continue  # another manifest image's own mask (tile_r1_c0 is not tile_r0_c1's)
        if c_key == src_key and not _is_generic(src_stem):
            score = EXACT_PAIR_SCORE + 0.4 * _shared_prefix(src_parts[:-1], c_parts[:-1])
            out.append(Hypothesis(cand, score, "the same stem under the community's naming rule", cand))
            continue
        c_words = set(tokens(c_stem)) - ANNOTATION_TOKENS
        c_digits = _digit_runs(c_stem)
        score = 0.0
        shared_words = (src_words | path_words) & c_words
        score += 0.8 * len(shared_words)
        if src_digits and c_digits:
            score += 2.0 if src_digits & c_digits else -3.0
        score += 0.4 * _shared_prefix(src_parts[:-1], c_parts[:-1])
        if c_parts[-1].lower().rsplit(".", 1)[-1] == ext:
            score += 0.3
        if score > 0.5:
            out.append(Hypothesis(cand, score, f"shares {sorted(shared_words)[:3]} / numbers", cand))
    return _same_study(files.root, source, sorted(out, key=lambda h: -h.score)[:5])


def _uid(path: Path, tag: str) -> str | None:
    """A DICOM file's ``StudyInstanceUID``, ``SeriesInstanceUID`` ...; None for other files or when absent."""
    uid = dicom_header(path).get(tag)
    return str(uid) if uid else None


def _same_study(root: Path, source: str, hyps: list[Hypothesis[str]]) -> list[Hypothesis[str]]:
    """Drop DICOM mask candidates of another study than a DICOM source.

    A segmentation object always belongs to the study of the image it segments (PS3.3 C.8.20), so a SEG or an
    RT object of another study in the same folder (an export that mixes patients, a decoy) is not its mask.
    """
    if not hyps or (src_uid := _uid(root / source, "StudyInstanceUID")) is None:
        return hyps
    return [h for h in hyps if _uid(root / h.value, "StudyInstanceUID") in (None, src_uid)]


def container_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """``{key: shape}`` of a container's members (npz, HDF5, MATLAB) from `medio.inspect`, without loading
    payloads; empty when the file is not a container or cannot be inspected.
    """
    info = medio.inspect(path)
    out: dict[str, tuple[int, ...]] = {}
    for group in ("members", "datasets", "variables"):
        for key, facts in (info.get(group) or {}).items():
            if isinstance(facts, dict) and isinstance(facts.get("shape"), list):
                out[str(key)] = tuple(int(s) for s in facts["shape"])
    return out


def read_target_hypotheses(files: DatasetFiles, source: str) -> list[Hypothesis[str]]:
    """Should the reader open the listed file or its folder (a DICOM series sliced into files)? Hypotheses
    over both dataset-relative paths.
    """
    if not source.lower().endswith((".dcm", ".dicom", ".ima")) and "." in source.rsplit("/", 1)[-1]:
        return [Hypothesis(source, 3.0, "a self-contained file")]
    folder = source.rsplit("/", 1)[0]
    # DICOM media trees (DICOMDIR exports, PACS dumps) name files without an extension (IM000001, 17106).
    bare = "." not in source.rsplit("/", 1)[-1]
    siblings = [
        f
        for f in files.files
        if f.rsplit("/", 1)[0] == folder
        and (f.lower().endswith((".dcm", ".ima")) or (bare and "." not in f.rsplit("/", 1)[-1]))
    ]
    others = [f for f in siblings if f != source][:2]
    uid = _uid(files.root / source, "SeriesInstanceUID") if others else None
    same = uid is not None and all(_uid(files.root / f, "SeriesInstanceUID") == uid for f in others)
    if len(siblings) >= 3 and same:
        return [
            Hypothesis(folder, 3.0, f"{len(siblings)} DICOM slices in the folder: a series", folder),
            Hypothesis(source, 0.8, "the listed slice alone", source),
        ]
    if len(siblings) >= 3:
        return [
            Hypothesis(source, 3.0, "the folder's files belong to different series", source),
            Hypothesis(folder, 0.3, "read the folder as a series anyway", folder),
        ]
    return [Hypothesis(source, 3.0, "a single DICOM file", source)]


def image_key_hypotheses(
    keys: list[str], shapes: dict[str, tuple[int, ...]] | None = None
) -> list[Hypothesis[str]]:
    """Rank container keys (npz members, HDF5 datasets, MATLAB variables) as the image, best first; a key
    whose known shape is a vector (fewer than 2 dimensions longer than 1) is skipped.
    """
    out: list[Hypothesis[str]] = []
    for position, key in enumerate(keys):
        words = tokens(key.rsplit("/", 1)[-1])
        if shapes and sum(1 for n in shapes.get(key, (2, 2)) if n > 1) < 2:
            continue  # a vector, also when MATLAB stores it 1×N: an axis or a label list, never the image
        if set(words) & _MASK_KEY_WORDS:
            continue
        score = max((_IMAGE_KEY_WORDS.get(w, 0.0) for w in words), default=0.0) + 1.0 - 0.1 * position
        if set(words) & _NOT_IMAGE_KEY_WORDS:
            score -= 2.5
        out.append(Hypothesis(key, score, "key name", key))
    return sorted(out, key=lambda h: -h.score)


def mask_key_hypotheses(
    keys: list[str], shapes: dict[str, tuple[int, ...]] | None = None
) -> list[Hypothesis[str]]:
    """Rank container keys as the label map (``label``, ``mask``, ``seg`` ...); empty when none looks like
    one. A key whose known shape has fewer than 2 dimensions (a label vector) is not a map.
    """
    out = [
        Hypothesis(k, 3.0 - 0.1 * i, "mask-like key", k)
        for i, k in enumerate(keys)
        if set(tokens(k.rsplit("/", 1)[-1])) & _MASK_KEY_WORDS and len((shapes or {}).get(k, (2, 2))) >= 2
    ]
    return out


def subject_hypotheses(
    source: str,
    *,
    patient_id: str | None,
    join_value: str | None,
    mask: str | None,
    label_word: str | None,
    table_subject: str | None = None,
) -> list[Hypothesis[str]]:
    """Rank subject ids for a sample.

    Args:
        source: The manifest path.
        patient_id: DICOM PatientID, when the header has one.
        join_value: The value that joined the sample to a label table.
        mask: The mask file chosen, if any (the part its name shares with the source is the subject).
        label_word: A class word found in the file name (removed from the stem).
        table_subject: The participant/subject/patient column of the sample's label-table row.

    Returns:
        Hypotheses over ids, best first.
    """
    # Scores are calibrated so that at temperature 0.7 the file-stem fallback (1.8) is drawn for roughly one
    # sample in eight when a better-supported id exists (a gap of ~1.2-1.4 nats), and a bare folder name for
    # one in twenty: the slips a sampled model makes, not coin flips.
    parts = source.split("/")
    base = stem(parts[-1])
    hyps: list[Hypothesis[str]] = []
    if patient_id:
        hyps.append(Hypothesis(patient_id, 4.5, "DICOM PatientID"))
    if table_subject:
        hyps.append(Hypothesis(table_subject, 3.6, "the participant column of the sample's table row"))
    entities = bids_entities(parts[-1])
    if entities.get("sub"):
        hyps.append(Hypothesis(f"sub-{entities['sub']}", 3.5, "the BIDS participant (sub- entity)"))
    if join_value and stem(join_value) != base:
        hyps.append(Hypothesis(stem(join_value), 3.1, "the id that joined the label table"))
    generic = _is_generic(base)
    folders = [
        p
        for p in parts[1:-1]
        if p.lower() not in GENERIC_NAMES and _DIGITS.search(p) and not _is_visit_folder(p)
    ]
    if generic and folders:
        hyps.append(
            Hypothesis(folders[-1], 3.2, "the file name is generic: the case folder names the sample")
        )
    if mask:
        shared = _common_stem(base, stem(mask.rsplit("/", 1)[-1]))
        if shared and shared != base:
            hyps.append(Hypothesis(shared, 3.15, "the part of the name the image and its mask share"))
    if label_word and label_word.lower() in base.lower():
        trimmed = re.sub(re.escape(label_word), "", base, flags=re.I).strip("_- ")
        if trimmed:
            hyps.append(Hypothesis(trimmed, 3.05, "file name without its class word"))
    if folders and folders[-1] in base and folders[-1] != base:
        hyps.append(Hypothesis(folders[-1], 3.0, "the patient folder"))
    hyps.append(Hypothesis(base, 1.8, "the file stem"))
    if folders and not generic:
        hyps.append(Hypothesis(folders[-1], -0.2, "the nearest numbered folder"))
    unique: dict[str, Hypothesis[str]] = {}
    for h in hyps:
        if h.value not in unique or unique[h.value].score < h.score:
            unique[h.value] = h
    return sorted(unique.values(), key=lambda h: -h.score)


def _common_stem(a: str, b: str) -> str:
    n = _shared_prefix(a, b)
    prefix = a[:n]
    cut = max(prefix.rfind(c) for c in "_-. ")
    if n == len(a) or n == len(b):
        return prefix
    if cut < 3:
        return ""
    return prefix[:cut]

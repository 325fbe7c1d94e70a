"""What a dataset's own documentation states: its name, its class legends, and the names community layouts
give files (BIDS entities, nnU-Net channel suffixes).

Read from files people write beside their data, never from a benchmark's ground truth:

- nnU-Net raw folders: ``dataset.json`` (``name``, ``labels`` as ``{"background": 0, ...}`` or the older
  ``{"0": "background", ...}``, ``channel_names``/``modality``);
- BIDS: ``dataset_description.json`` (``Name``; a ``DatasetType: derivative`` names a pipeline, not the
  dataset), ``*_dseg.tsv`` / ``dseg.tsv`` legends (``index`` and ``name`` columns);
- READMEs (``README``, ``README.md``, ``readme.txt`` ...): the title is the first Markdown heading, or a first
  line underlined with ``===``/``---`` (reStructuredText/setext).

Both the rules baseline (to decide) and the validator (to check) read these facts; neither encodes the other.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DatasetDocs", "bids_entities", "pair_key", "read_dataset_docs", "read_text_any", "text_encoding"]

_MAX_DOC_BYTES = 2_000_000
_LATIN_FAMILY = ("cp125", "latin", "iso8859", "mac_", "cp850", "cp437", "ascii")
_README = re.compile(r"^read[\s_-]?me(\.(md|txt|rst|markdown))?$", re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}#{1,3}\s+(.+?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^\s*(=+|-+)\s*$")
_NAME_LINE = re.compile(r"^\s*(?:dataset(?:\s+name)?|name|title)\s*[:=]\s*(\S.{0,118})$", re.IGNORECASE)
_BIDS_PAIR = re.compile(r"^([a-zA-Z]+)-([a-zA-Z0-9]+)$")
# nnU-Net names image channels <case>_0000; the label has the bare case id.
_CHANNEL = re.compile(r"_\d{4}$")
# Words that mark a file as a label map of another file's grid (BIDS derivatives suffixes included).
_ANNOTATION_SUFFIXES = ("mask", "masks", "seg", "dseg", "probseg", "label", "labels", "gt", "segmentation")
# BIDS entities that describe the derived map, not the sample (desc-brain, label-GM, space-MNI...).
_MAP_ENTITIES = frozenset({"desc", "label", "space", "res", "den", "atlas", "seg", "roi"})


def read_text_any(path: Path, limit: int = _MAX_DOC_BYTES) -> str:
    """Decode a small text file whatever its encoding (`text_encoding`).

    Args:
        path: The file.
        limit: Bytes read at most.

    Returns:
        The text ("" when unreadable).
    """
    try:
        raw = path.read_bytes()[:limit]
    except OSError:
        return ""
    return raw.decode(text_encoding(raw), errors="replace")


def text_encoding(raw: bytes) -> str:
    """The encoding of a text: its BOM's, else UTF-8 when it decodes, else detected, else cp1252.

    Args:
        raw: The text's bytes (a head of a file cut at a line end, not inside a character).

    Returns:
        A codec name that decodes ``raw`` (``utf-8-sig`` and ``utf-16`` drop their BOM).
    """
    for bom, enc in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if raw.startswith(bom):
            return enc
    try:
        raw.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(raw).best()
    # On short Latin-script text the detector cannot tell the single-byte code pages apart (cp1250 vs
    # cp1252); Windows-1252 is the commonest export encoding of that family, so it wins among them.
    if best is not None and not str(best.encoding).startswith(_LATIN_FAMILY):
        return str(best.encoding)
    try:
        raw.decode("cp1252")
        return "cp1252"
    except UnicodeDecodeError:
        return str(best.encoding) if best is not None else "latin-1"


@dataclass
class DatasetDocs:
    """Facts the documentation states.

    Attributes:
        title: The dataset's documented name (None when no document names it).
        title_source: Which file gave the title (``data/...``).
        class_maps: ``{id: name}`` legends (dataset.json labels, dseg.tsv), in the order found.
        text: The JSON documents' string values (dataset.json, dataset_description.json), bounded.
        readmes: README files found (``data/...``).
    """

    title: str | None = None
    title_source: str = ""
    class_maps: list[dict[int, str]] = field(default_factory=list)
    text: str = ""
    readmes: list[str] = field(default_factory=list)


def _depth(rel: str) -> int:
    return rel.count("/")


def readme_title(text: str) -> str | None:
    """The title of a README: its first Markdown heading, a ``Dataset: X`` / ``Name: X`` / ``Title: X`` line
    among the first three, or a first line underlined with ``===``/``---``.

    Args:
        text: README text.

    Returns:
        The title, or None (a README that starts with a sentence has no title).
    """
    lines = [ln.rstrip() for ln in text.splitlines()]
    content = [(i, ln) for i, ln in enumerate(lines) if ln.strip()]
    if not content:
        return None
    for _, line in content[:3]:
        m = _HEADING.match(line) or _NAME_LINE.match(line)
        if m:
            return m.group(1).strip()
    i, first = content[0]
    if i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1]) and len(first.strip()) <= 120:
        return first.strip()
    return None


def _json(path: Path) -> Any:
    try:
        return json.loads(read_text_any(path))
    except ValueError:
        return None


def _labels_map(labels: Any) -> dict[int, str]:
    """nnU-Net ``labels``: ``{"background": 0, "vessel": 1}`` (v2) or ``{"0": "background"}`` (v1)."""
    out: dict[int, str] = {}
    if not isinstance(labels, dict):
        return out
    for k, v in labels.items():
        if isinstance(v, int) and not isinstance(v, bool):
            out[v] = str(k)
        elif isinstance(v, list) and v and all(isinstance(x, int) for x in v):
            out[int(v[0])] = str(k)  # a region label lists the ids it unites; its first id names it
        elif str(k).strip().lstrip("-").isdigit() and isinstance(v, str):
            out[int(k)] = v
    return out


def _dseg_map(path: Path) -> dict[int, str]:
    """A BIDS ``dseg.tsv`` legend: ``index`` → ``name``."""
    text = read_text_any(path)
    rows = list(csv.DictReader(io.StringIO(text), delimiter="\t"))
    out: dict[int, str] = {}
    for row in rows:
        norm = {str(k).strip().lower(): str(v).strip() for k, v in row.items() if k is not None}
        if norm.get("index", "").isdigit() and norm.get("name"):
            out[int(norm["index"])] = norm["name"]
    return out


def _strings(doc: Any, limit: int = 60) -> list[str]:
    out: list[str] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append(str(k))
            out += _strings(v, limit)
    elif isinstance(doc, list):
        for v in doc[:limit]:
            out += _strings(v, limit)
    elif isinstance(doc, str) and len(doc) < 200:
        out.append(doc)
    return out[:limit]


def read_dataset_docs(root: Path, files: list[str]) -> DatasetDocs:
    """Read the documentation of the dataset at ``root`` from its file listing.

    Args:
        root: The dataset root (the listing's paths are relative to it: ``data/...``).
        files: Every file of the dataset (``data/...``), e.g. from one ``os.walk``.

    Returns:
        The facts; the shallowest document of each kind wins (a nested copy describes a part).
    """
    docs = DatasetDocs()
    by_name: dict[str, list[str]] = {}
    for rel in files:
        by_name.setdefault(rel.rsplit("/", 1)[-1].lower(), []).append(rel)
    titles: list[tuple[int, int, str, str]] = []  # (rank, depth, title, source)
    texts: list[str] = []
    for rel in sorted(by_name.get("dataset.json", []), key=_depth):
        doc = _json(root / rel)
        if not isinstance(doc, dict):
            continue
        if isinstance(doc.get("name"), str) and doc["name"].strip():
            titles.append((0, _depth(rel), doc["name"].strip(), rel))
        labels = _labels_map(doc.get("labels"))
        if labels:
            docs.class_maps.append(labels)
        texts += _strings({k: doc.get(k) for k in ("description", "channel_names", "modality", "name")})
    for rel in sorted(by_name.get("dataset_description.json", []), key=_depth):
        doc = _json(root / rel)
        if not isinstance(doc, dict):
            continue
        derivative = str(doc.get("DatasetType", "")).lower() == "derivative" or "/derivatives/" in rel
        name = doc.get("Name")
        if isinstance(name, str) and name.strip() and not derivative:
            titles.append((0, _depth(rel), name.strip(), rel))
        texts += _strings({k: doc.get(k) for k in ("Name", "Description")})
    for rel in sorted((f for n, fs in by_name.items() if _README.match(n) for f in fs), key=_depth):
        text = read_text_any(root / rel, 20_000)
        docs.readmes.append(rel)
        title = readme_title(text)
        if title:
            titles.append((1, _depth(rel), title, rel))
    for rel in sorted(f for n, fs in by_name.items() if n.endswith("dseg.tsv") for f in fs):
        legend = _dseg_map(root / rel)
        if legend:
            docs.class_maps.append(legend)
    if titles:
        _, _, docs.title, docs.title_source = min(titles)
    docs.text = "\n".join(texts)[:40_000]
    return docs


def bids_entities(name: str) -> dict[str, str]:
    """BIDS entities of a file name (``sub-01_ses-2_task-rest_bold.nii.gz`` → sub, ses, task, suffix).

    Args:
        name: A file name or stem.

    Returns:
        ``{entity: value}`` plus ``"suffix"``; empty when the name is not BIDS-like (no ``sub-``).
    """
    stem = name.split(".", 1)[0]
    parts = stem.split("_")
    out: dict[str, str] = {}
    for i, part in enumerate(parts):
        m = _BIDS_PAIR.match(part)
        if m:
            out[m.group(1).lower()] = m.group(2)
        elif i == len(parts) - 1 and part.isalnum():
            out["suffix"] = part
        else:
            return {}
    return out if "sub" in out else {}


def pair_key(stem: str) -> str:
    """The part of a file stem an image and its label map share under community naming rules.

    BIDS: the entities that identify the acquisition (``sub``, ``ses``, ``acq``, ``run`` ...), without the
    suffix and the derived-map entities (``desc``, ``label``, ``space``). nnU-Net: the case id without the
    channel suffix ``_0000``. Otherwise the stem without a trailing annotation word (``_mask``, ``_seg``).

    Args:
        stem: A file name without its extension.

    Returns:
        The lower-case key (compare keys for exact pairing).
    """
    entities = bids_entities(stem)
    if entities:
        keep = [f"{k}-{v}" for k, v in entities.items() if k != "suffix" and k not in _MAP_ENTITIES]
        return "_".join(keep).lower()
    key = _CHANNEL.sub("", stem.lower())
    for word in _ANNOTATION_SUFFIXES:
        for sep in ("_", "-", "."):
            if key.endswith(sep + word):
                return key[: -len(word) - 1]
    return key

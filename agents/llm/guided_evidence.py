"""What a guided request shows the model and reads back: tool results as lines, evidence fitted to a window,
the slices a file has, the files that may be a sample's mask, the JSON object of a reply."""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from agents.base import ManifestEntry
from validator.dataset_facts import ANNOTATION_WORDS

__all__ = [
    "answer_object",
    "data_files",
    "extent",
    "fit",
    "mask_choices",
    "mask_of",
    "plain",
    "rendered_info",
]

_MASK_CHOICES = 12
_FILES_SCANNED = 20_000


def plain(text: str) -> str:
    """A JSON tool result as ``key: value`` lines; other text as it is.

    Small models read lines better than nested JSON, and some servers' chat templates HTML-escape every quote
    of a message (llama-cpp-python's ``chatml-function-calling``: ``"`` becomes ``&#34;``), which a small
    model then copies into its answer.
    """
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if not isinstance(value, dict | list):
        return text
    lines: list[str] = []

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict) and node:
            for key, item in node.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        elif isinstance(node, list) and node and any(isinstance(v, dict | list) for v in node):
            for k, item in enumerate(node[:20]):
                walk(f"{prefix}[{k}]", item)
        else:
            shown = node if isinstance(node, str) else json.dumps(node, ensure_ascii=False)
            lines.append(f"{prefix}: {shown}"[:240])

    walk("", value)
    return "\n".join(lines)


def fit(parts: Sequence[tuple[str, str]], budget: int) -> str:
    """The evidence as titled sections, the longest cut (head kept) until the whole fits ``budget`` chars."""
    sections = [(title, text or "") for title, text in parts]
    total = sum(len(t) + len(text) + 6 for t, text in sections)
    if total > budget:
        fixed = sum(len(t) + 6 for t, _ in sections)
        room = max(0, budget - fixed)
        sizes = [len(text) for _, text in sections]
        # Water-filling: short sections stay whole, the long ones share what is left equally.
        cap = room
        for _ in range(len(sizes)):
            small = [s for s in sizes if s <= cap]
            left = len(sizes) - len(small)
            if not left:
                break
            cap = max(0, (room - sum(small)) // left)
        cut = []
        for title, text in sections:
            if len(text) > cap:
                text = text[: max(0, cap - 40)] + f"\n[... {len(text) - max(0, cap - 40)} chars cut to fit]"
            cut.append((title, text))
        sections = cut
    return "\n\n".join(f"## {title}\n{text}" for title, text in sections)


def answer_object(message: Mapping[str, Any], name: str) -> tuple[dict[str, Any] | None, str]:
    """The JSON object of a reply: the forced call's arguments, else the content; or None and why not."""
    calls = [c for c in message.get("tool_calls") or [] if (c.get("function") or {}).get("name") == name]
    raw = (calls[0].get("function") or {}).get("arguments") if calls else message.get("content")
    if not raw:
        return None, "an empty answer"
    try:
        # strict=False: a raw tab or newline inside a string (small models write them) is no reason to re-ask.
        value = json.loads(raw, strict=False) if isinstance(raw, str) else raw
    except ValueError as exc:
        return None, f"invalid JSON ({exc})"
    if not isinstance(value, dict):
        return None, "not an object"
    return value, ""


def extent(inspected: str, dimension: str) -> int | None:
    """Slices (3D: a volume's first canonical axis, ``Z``) or frames (video) the inspected file has, when it
    says; None for a 2D file (an RGB bitmap's three axes are no volume)."""
    try:
        summary = json.loads(inspected)
    except ValueError:
        return None
    if not isinstance(summary, dict):
        return None
    frames = summary.get("n_frames")
    if dimension == "video":
        return frames if isinstance(frames, int) else None
    shape, axes = summary.get("shape"), str(summary.get("axes") or "")
    if isinstance(shape, list) and len(shape) >= 3 and isinstance(shape[0], int) and axes[:1] in ("Z", "T"):
        return int(shape[0])
    return frames if isinstance(frames, int) and frames > 1 else None


def data_files(read_root: Path, images: set[str]) -> list[str]:
    """The dataset's files below ``data/`` (``data/...``, manifest images and dot files excepted), at most
    ``_FILES_SCANNED`` of them; listed once per candidate, not once per sample."""
    names: list[str] = []
    for folder, dirs, files in os.walk(read_root):
        dirs.sort()
        for name in sorted(files):
            rel = "data/" + (Path(folder) / name).relative_to(read_root).as_posix()
            if rel not in images and not name.startswith("."):
                names.append(rel)
            if len(names) >= _FILES_SCANNED:
                return names
    return names


def mask_choices(files: Sequence[str], entry: ManifestEntry) -> list[str]:
    """The files (`data_files`) most likely the sample's mask, best first.

    A mask shares the sample's numbers (its case or subject id) and carries an annotation word in its path
    (`validator.dataset_facts.ANNOTATION_WORDS`, read inside words: ``3LABEL``, ``labelsTr``); another image
    of the sample's own series (same folder, same suffix) shares the most characters of its name and is
    none. Name likeness only breaks ties: ranked by it alone, a sample's sibling images filled the list and
    the mask in another folder fell off it.
    """
    sample = PurePosixPath(entry.relpath)
    target = sample.name.lower()
    numbers = set(re.findall(r"\d+", sample.name))

    folder = str(sample.parent)

    def rank(rel: str) -> tuple[int, bool, bool]:
        # String work only: a path object per file costs more than the ranking on a tree of thousands.
        parent, _, name = rel.rpartition("/")
        shared = len(numbers & set(re.findall(r"\d+", name)))
        words = re.findall(r"[a-z]+", rel.lower().removeprefix("data/"))
        annotated = any(w in ANNOTATION_WORDS for w in words)
        sibling = parent == folder and PurePosixPath(name).suffixes == sample.suffixes
        return -shared, not annotated, sibling

    ranked = sorted(((rank(rel), rel) for rel in files), key=lambda pair: pair[0])
    if len(ranked) > _MASK_CHOICES:
        # Likeness (difflib, the slow part on a tree of thousands of files) only orders the files that tie
        # with the last one kept.
        last = ranked[_MASK_CHOICES - 1][0]
        ranked = [pair for pair in ranked if pair[0] <= last]

    def likeness(rel: str) -> float:
        return difflib.SequenceMatcher(None, target, rel.rpartition("/")[2].lower()).ratio()

    ranked.sort(key=lambda pair: (*pair[0], -likeness(pair[1])))
    return [rel for _key, rel in ranked[:_MASK_CHOICES]]


def rendered_info(annotation: Mapping[str, Any], image: Path) -> dict[str, Any]:
    """What `annotation_schema` needs of an image written earlier: its size and the slice or frame."""
    from PIL import Image

    with Image.open(image) as img:
        info: dict[str, Any] = {"size": list(img.size)}
    spatial = (
        ((annotation.get("media_geometry") or {}).get("spatial") or {})
        if isinstance(annotation, dict)
        else {}
    )
    three_d = spatial.get("three_d") if isinstance(spatial, dict) else None
    video = spatial.get("video") if isinstance(spatial, dict) else None
    if isinstance(three_d, dict) and isinstance(three_d.get("slice_index"), int):
        info["slice_index"] = three_d["slice_index"]
        info["axis"] = three_d.get("slice_axis") if isinstance(three_d.get("slice_axis"), int) else 0
    if isinstance(video, dict) and isinstance(video.get("frame_index"), int):
        info["frame"] = video["frame_index"]
    return info


def mask_of(annotation: Mapping[str, Any]) -> str | None:
    extra = ((annotation.get("context") or {}).get("sample") or {}).get("extra") or {}
    value = extra.get("mask_file") if isinstance(extra, dict) else None
    return str(value) if isinstance(value, str) else None

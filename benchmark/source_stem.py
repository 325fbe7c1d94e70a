"""What the official scorer needs to match a sample's source by name: ``extra.source_stem`` (SPEC §3.1-3.3).

The reference scorer compares normalised stems: it takes a source value's basename and strips one extension
from a fixed list (``STEM_EXTENSIONS_STRIPPED``). The ground truth's ``source_stem`` is the file name without
its extension (``P001`` for ``P001.dat``, ``MGHNICU_001-VISIT_01-ADC_ss`` for ``...ADC_ss.mha``). A source
whose extension is not in the list (``.dat``, ``.mhd``, ``.nrrd``, ``.raw``, ``.dcm.gz`` ...) keeps it in its
stem (``P001.dat`` → ``p001dat``), so an output that names the right file exactly as the standard asks never
passes the source gate, and scores 0 on SCJ and E2E, unless some scanned value of ``extra`` carries the bare
stem. The standard's own key for it is ``extra.source_stem`` (a trace key the scorer scans); the reference's
oracle for dataset 8045940 writes it for exactly this reason (conformance README).

`source_stem_need` decides, from ``extra`` alone (no ground truth), whether the scorer can match the declared
source, and which stem to record; `add_source_stem` is the one writer every producer calls (the answer
skeleton of the rules agent and the suite's oracle, the rules revision, the LiteLLM tools, the script mode,
S2's autofix, S4's merge); the validator's ``source_stem_matchable`` check reports the same decision. Sources
whose extension the scorer strips are never touched. The scorer's scan of ``extra`` (key pattern, value
length) is `benchmark.normalize.scanned_stem`, the one rule the scorer applies too.

Rules (docs/scoring.md, "Sources outside the extension list"):

- The declared source is ``extra.source_file``, else ``extra.original_filename``.
- Its file stem is the basename without its extension: a compression suffix (``.gz``, ``.bz2``, ``.xz``,
  ``.zst``) goes with the extension before it (``a.dcm.gz`` → ``a``, ``v.nrrd.gz`` → ``v``). An extension has
  at most 8 characters (``.parquet``) and at least one letter, so DICOM-style names (``1.2.840.5.1``) keep
  their dots; a path ending in ``/`` names a folder and keeps its whole name.
- The scorer can match when any value it scans in ``extra`` (a key matching its scan pattern, a short or
  path-like string) normalises to the file stem or one of its aliases.
- A ``source_stem`` already written that names a folder on the source's path is the writer's deliberate
  choice (the sample is a folder, as in kits23) and is kept. One that names neither the file nor a folder on
  its path cannot be the file's stem and is replaced; the note says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmark.normalize import (
    STEM_EXTENSIONS,
    expand_aliases,
    nonmissing,
    normalize_source_stem,
    scanned_stem,
)

__all__ = [
    "COMPRESSION_SUFFIXES",
    "SOURCE_KEYS",
    "STEM_KEY",
    "StemNeed",
    "add_source_stem",
    "add_source_stem_to_annotation",
    "add_source_stems_in_folder",
    "declared_source",
    "file_stem",
    "source_stem_need",
    "unstripped_extension",
]

STEM_KEY = "source_stem"
"""The ``extra`` key the standard offers for a normalised source id (a trace key the scorer scans)."""

SOURCE_KEYS = ("source_file", "original_filename")
"""Where the declared source is read from, in this order (the two source keys the standard names)."""

COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
"""Whole-file compression suffixes: stripped together with the extension before them."""

_EXTENSION_RE = re.compile(r"\.(?=[a-z0-9]{0,7}[a-z])[a-z0-9]{1,8}$", re.I)


def _basename(path: str) -> str:
    return path.strip().replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _scorer_strips(name: str) -> bool:
    low = name.lower()
    return any(low.endswith(ext) for ext in STEM_EXTENSIONS)


def unstripped_extension(path: str) -> str | None:
    """The extension of ``path`` that the official scorer keeps in its stem, if any.

    Args:
        path: A source path or file name (``data/P001.dat``).

    Returns:
        The extension as written (``.dat``, ``.dcm.gz``), or None when the scorer strips it, the path names a
        folder, or the name has no extension.
    """
    if path.strip().replace("\\", "/").endswith("/"):
        return None
    base = _basename(path)
    if not base or _scorer_strips(base):
        return None
    stem = file_stem(path)
    return base[len(stem) :] if stem and stem != base else None


def file_stem(path: str) -> str:
    """The file name of ``path`` without its extension, as the ground truth's ``source_stem`` holds it.

    Args:
        path: A source path or file name.

    Returns:
        The stem with its case kept (``data/P001.dat`` → ``P001``, ``a.dcm.gz`` → ``a``, ``x.ome.tif`` →
        ``x``); a folder path (trailing ``/``) or a name without extension is returned whole.

    Example:
        >>> file_stem("data/scans/CT_07.nrrd.gz")
        'CT_07'
    """
    if path.strip().replace("\\", "/").endswith("/"):
        return _basename(path)
    base = _basename(path)
    low = base.lower()
    for ext in STEM_EXTENSIONS:
        if low.endswith(ext) and len(base) > len(ext):
            return base[: -len(ext)]
    for suffix in COMPRESSION_SUFFIXES:
        if low.endswith(suffix) and len(base) > len(suffix):
            inner = base[: -len(suffix)]
            return file_stem(inner) if "." in inner else inner
    match = _EXTENSION_RE.search(base)
    return base[: match.start()] if match and match.start() > 0 else base


def _scanned_stems(extra: Mapping[str, Any]) -> set[str]:
    """Aliases of the stems the scorer reads from ``extra`` (gate part A, extra's share of it)."""
    out: set[str] = set()
    for key, value in extra.items():
        out |= expand_aliases(scanned_stem(key, value))
    return out


def _folder_stems(path: str) -> set[str]:
    # The folders under the dataset root that hold the source (never "data" itself).
    parts = [p for p in path.strip().replace("\\", "/").split("/")[:-1] if p and p not in (".", "..")]
    if parts and parts[0].lower() == "data":
        parts = parts[1:]
    return {s for p in parts if (s := normalize_source_stem(p))}


@dataclass(frozen=True)
class StemNeed:
    """An ``extra`` whose declared source the official scorer cannot match by name, and the fix.

    Attributes:
        source_key: The ``extra`` key the source was read from (``source_file``).
        source: The declared source as written.
        extension: The extension the scorer keeps (``.dat``).
        stem: The ``source_stem`` to record (``P001``).
        current: The ``source_stem`` written now (None when absent or a placeholder); it names neither the
            file nor a folder on its path.
    """

    source_key: str
    source: str
    extension: str
    stem: str
    current: str | None

    @property
    def reason(self) -> str:
        """Why the scorer cannot match the source by name."""
        head = (
            f"{self.source_key} {self.source!r} ends in {self.extension!r}, an extension the official scorer "
            "does not strip, so it cannot match the sample by its file name"
        )
        if self.current is None:
            return head
        return (
            f"{head}, and extra.{STEM_KEY} {self.current!r} names neither that file nor a folder on its path"
        )

    def message(self) -> str:
        """The one-line instruction for a writer that has not recorded the stem (what the validator says)."""
        return f"{self.reason}; {'add' if self.current is None else 'set'} extra.{STEM_KEY} {self.stem!r}"

    def note(self) -> str:
        """The one-line record of a writer that recorded the stem itself (what the tools tell the model)."""
        return f"extra.{STEM_KEY} set to {self.stem!r}: {self.reason}"


def declared_source(extra: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first filled `SOURCE_KEYS` entry of ``extra`` as ``(key, value)``, or None."""
    for key in SOURCE_KEYS:
        value = extra.get(key)
        if isinstance(value, str) and nonmissing(value):
            return key, value
    return None


def source_stem_need(extra: Mapping[str, Any]) -> StemNeed | None:
    """Whether the official scorer can match the declared source by name; the stem it needs if not.

    Args:
        extra: ``context.sample.extra`` of an annotation.

    Returns:
        None when there is no declared source, the scorer strips its extension, or a value it scans already
        names the file's stem (or ``source_stem`` names a folder on its path); else what to record.
    """
    declared = declared_source(extra)
    if declared is None:
        return None
    key, source = declared
    extension = unstripped_extension(source)
    if extension is None:
        return None
    stem = file_stem(source)
    wanted = expand_aliases(normalize_source_stem(stem))
    if not wanted or wanted & _scanned_stems(extra):
        return None
    current = extra.get(STEM_KEY)
    written = current.strip() if isinstance(current, str) and nonmissing(current) else None
    if written is not None and normalize_source_stem(written) in _folder_stems(source):
        return None
    return StemNeed(key, source, extension, stem, written)


def add_source_stem(extra: MutableMapping[str, Any]) -> StemNeed | None:
    """Record in ``extra`` the ``source_stem`` the official scorer needs to match its declared source.

    Every writer of annotations calls this (docs/scoring.md). It changes nothing when `source_stem_need` finds
    nothing to do, so a source whose extension the scorer strips is never touched.

    Args:
        extra: ``context.sample.extra``, changed in place.

    Returns:
        What was recorded (`StemNeed.note` says what and why), or None when nothing changed.
    """
    need = source_stem_need(extra)
    if need is not None:
        extra[STEM_KEY] = need.stem
    return need


def add_source_stem_to_annotation(annotation: Any) -> StemNeed | None:
    """`add_source_stem` on an annotation's ``context.sample.extra`` (anything malformed is left alone).

    Args:
        annotation: A parsed per-image JSON, changed in place.

    Returns:
        What was recorded, or None.
    """
    context = annotation.get("context") if isinstance(annotation, dict) else None
    sample = context.get("sample") if isinstance(context, dict) else None
    extra = sample.get("extra") if isinstance(sample, dict) else None
    return add_source_stem(extra) if isinstance(extra, dict) else None


def add_source_stems_in_folder(folder: Path, indices: Iterable[int]) -> dict[int, StemNeed]:
    """`add_source_stem` on every written ``standardized_annotations/<index>.json`` of an output folder.

    For writers that do not go through one annotation at a time (the script mode's conversion script).
    Unreadable or malformed files are left as they are (the validator reports them).

    Args:
        folder: An ``agent1_data_organization`` folder.
        indices: The manifest indices.

    Returns:
        Per index whose file changed, what was recorded.
    """
    from benchmark.layout import ANNOTATIONS_DIR
    from core.atomic import atomic_write_json

    out: dict[int, StemNeed] = {}
    for index in indices:
        path = folder / ANNOTATIONS_DIR / f"{index}.json"
        try:
            annotation = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        recorded = add_source_stem_to_annotation(annotation)
        if recorded is not None:
            atomic_write_json(path, annotation, durable=False)
            out[index] = recorded
    return out

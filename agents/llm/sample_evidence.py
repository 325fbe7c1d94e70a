"""The evidence that decides one sample's answer, as short lines a model reads in every mode.

Per sample: the rows of the dataset's label tables that name it and the parts of its path (folders often name
the class, the subject or the split). The rows are found exactly as the validator finds them when it checks a
label against the raw evidence (`validator.checks.evidence_payload.sample_keys` and `table_rows_naming`),
so what the model is shown is what its answer is checked against.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from agents.base import ManifestEntry
from agents.llm.prompts import EVIDENCE_HEAD
from validator.checks.evidence_payload import sample_keys, table_rows_naming

__all__ = ["evidence_line", "evidence_text", "path_parts", "table_rows"]

_ROW_CHARS = 300
# Samples whose evidence a tools/script-mode prompt lists: a batch is smaller; a script-mode manifest may be
# thousands of samples, whose rows the model then reads with the table tools.
_EVIDENCE_SAMPLES = 40


def path_parts(relpath: str) -> str:
    """The folders below ``data/`` and the file name of a sample's source, e.g. ``folders train / benign;
    file ISIC_0024306.jpg``."""
    parts = [p for p in PurePosixPath(relpath).parts if p not in {"", ".", "/"}]
    folders = parts[1:-1] if parts[:1] == ["data"] else parts[:-1]
    shown = " / ".join(folders) if folders else "(none)"
    return f"folders {shown}; file {parts[-1] if parts else relpath}"


def table_rows(dataset_root: Path, relpath: str, limit: int = 3) -> list[str]:
    """The label-table rows that name a sample (at most ``limit``; the validator takes a key naming more than
    ten as no key at all), one line each as ``column=value`` pairs (bare cells without a header), cut to a
    few hundred characters."""
    keys = sample_keys(relpath)
    if not keys:
        return []
    lines = []
    for cells, header in table_rows_naming(dataset_root, keys)[:limit]:
        if header is not None:
            text = ", ".join(f"{h}={c}" for h, c in zip(header, cells, strict=True) if c)
        else:
            text = " | ".join(cells)
        lines.append(text if len(text) <= _ROW_CHARS else text[: _ROW_CHARS - 3] + "...")
    return lines


def evidence_line(dataset_root: Path, relpath: str) -> str:
    """One sample's evidence in one line (the tools and script modes' manifests): its label-table rows, or
    its path parts when no table names it."""
    rows = table_rows(dataset_root, relpath, limit=2)
    return "table row: " + " // ".join(rows) if rows else path_parts(relpath)


def evidence_text(dataset_root: Path, entries: Sequence[ManifestEntry]) -> str:
    """The evidence section of a tools- or script-mode prompt: `prompts.EVIDENCE_HEAD`, then one line per
    sample (`evidence_line`), at most ``_EVIDENCE_SAMPLES`` of them."""
    lines = [EVIDENCE_HEAD]
    for entry in entries[:_EVIDENCE_SAMPLES]:
        try:
            line = evidence_line(dataset_root, entry.relpath)
        except (OSError, ValueError) as exc:  # an unreadable table: the sample keeps its path parts
            line = f"{path_parts(entry.relpath)} (label tables not read: {exc})"
        lines.append(f"sample {entry.index}: {line}")
    if len(entries) > _EVIDENCE_SAMPLES:
        lines.append(
            f"... {len(entries) - _EVIDENCE_SAMPLES} more samples: read their rows with the table tools"
        )
    return "\n".join(lines)

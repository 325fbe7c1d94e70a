"""S2's guarantee, enforced by the framework and not trusted to the agent: a revision may change only
whitelisted field paths; everything else is put back as it was, and every revert is logged.

Paths are dotted JSON paths inside a per-image annotation (``tasks.classification.label``) or, prefixed with
``data_meta.``, inside ``data_meta.json``. A path covers its whole subtree; ``"*"`` covers everything. Files:
the image is restored unless ``images`` is whitelisted, a sample's mask unless ``tasks.segmentation`` is
covered, and a sample the original did not have is removed unless ``"*"`` is whitelisted.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmark.atomic import atomic_write_json
from benchmark.layout import ANNOTATIONS_DIR, DATA_META_NAME, IMAGE_EXTENSIONS, IMAGES_DIR, MASKS_DIR

__all__ = ["covered", "enforce_whitelist", "folder_digest", "merge_whitelisted"]

_MISSING = object()


def covered(path: str, whitelist: Sequence[str]) -> bool:
    """Whether ``path`` lies inside a whitelisted subtree."""
    return any(w == "*" or path == w or path.startswith(w + ".") for w in whitelist)


def _leads_to(path: str, whitelist: Sequence[str]) -> bool:
    return not path or any(w.startswith(path + ".") for w in whitelist)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def merge_whitelisted(
    original: Any, revised: Any, whitelist: Sequence[str], path: str = "", log: list[str] | None = None
) -> Any:
    """Return ``original`` with only the whitelisted changes of ``revised`` applied.

    Args:
        original: The document before revision (``_MISSING`` semantics: a key absent on either side).
        revised: The revised document.
        whitelist: Editable field paths.
        path: The dotted path of this node.
        log: Receives one line per reverted path.

    Returns:
        The merged value (an internal sentinel when the node is absent in the merge).
    """
    if covered(path, whitelist):
        return revised
    if (
        isinstance(revised, dict)
        and _leads_to(path, whitelist)
        and (isinstance(original, dict) or original is _MISSING)
    ):
        base = original if isinstance(original, dict) else {}
        out: dict[str, Any] = {}
        for key in list(base) + [k for k in revised if k not in base]:
            value = merge_whitelisted(
                base.get(key, _MISSING), revised.get(key, _MISSING), whitelist, _join(path, key), log
            )
            if value is not _MISSING:
                out[key] = value
        return out if (out or original is not _MISSING) else _MISSING
    if original != revised and log is not None:
        log.append(f"reverted {path or '<document>'}: not in the whitelist")
    return original


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _MISSING


def _restore_file(original: Path, revised: Path, what: str, log: list[str]) -> None:
    before = original.read_bytes() if original.is_file() else None
    after = revised.read_bytes() if revised.is_file() else None
    if before == after:
        return
    log.append(f"reverted {what}: file changes are not in the whitelist")
    if before is None:
        revised.unlink()
    else:
        revised.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(original, revised)


def enforce_whitelist(original: Path, revised: Path, whitelist: Sequence[str]) -> list[str]:
    """Revert, in the ``revised`` folder, every change outside the whitelist relative to ``original``.

    Args:
        original: The ``agent1_data_organization`` folder before revision.
        revised: The revised folder (modified in place).
        whitelist: Editable field paths.

    Returns:
        One line per revert (``"sample 3: reverted context.sample.modality_primary: ..."``).
    """
    log: list[str] = []
    stems = {p.stem for d in (original, revised) for p in (d / ANNOTATIONS_DIR).glob("*.json")}
    for stem in sorted(stems, key=lambda s: (len(s), s)):
        lines: list[str] = []
        target = revised / ANNOTATIONS_DIR / f"{stem}.json"
        before, after = _read(original / ANNOTATIONS_DIR / f"{stem}.json"), _read(target)
        if before is _MISSING and "*" not in whitelist:
            if target.exists():
                target.unlink()
                lines.append("removed a sample the original did not have")
        elif before is not _MISSING:
            merged = (
                merge_whitelisted(before, after, whitelist, "", lines) if isinstance(before, dict) else before
            )
            if merged != after:
                atomic_write_json(target, merged)
        if "images" not in whitelist and "*" not in whitelist:
            for ext in IMAGE_EXTENSIONS:
                _restore_file(
                    original / IMAGES_DIR / f"{stem}{ext}",
                    revised / IMAGES_DIR / f"{stem}{ext}",
                    f"images/{stem}{ext}",
                    lines,
                )
        if not covered("tasks.segmentation", whitelist):
            _restore_file(
                original / MASKS_DIR / f"{stem}.png",
                revised / MASKS_DIR / f"{stem}.png",
                f"masks/{stem}.png",
                lines,
            )
        log.extend(f"sample {stem}: {line}" for line in lines)
    meta_before, meta_after = _read(original / DATA_META_NAME), _read(revised / DATA_META_NAME)
    if isinstance(meta_before, dict):
        lines = []
        wrapped = merge_whitelisted(
            {"data_meta": meta_before}, {"data_meta": meta_after}, whitelist, "", lines
        )
        merged_meta = wrapped.get("data_meta", meta_before) if isinstance(wrapped, dict) else meta_before
        if merged_meta != meta_after:
            atomic_write_json(revised / DATA_META_NAME, merged_meta)
        log.extend(f"data_meta.json: {line}" for line in lines)
    return log


def folder_digest(folder: Path) -> str:
    """A digest of every file's relative path and bytes (S1 stops when a round leaves it unchanged)."""
    h = hashlib.sha256()
    if folder.is_dir():
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            h.update(path.relative_to(folder).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()

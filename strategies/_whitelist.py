"""S2's guarantee, enforced by the framework and not trusted to the agent: a revision may change only
whitelisted field paths; everything else is put back as it was, and every revert is logged.

Paths are dotted JSON paths inside a per-image annotation (``tasks.classification.label``) or, prefixed with
``data_meta.``, inside ``data_meta.json``. A path covers its whole subtree; ``"*"`` covers everything.

A sample moves as a whole: its image, mask and JSON change together or not at all. The image file is editable
when ``images`` is whitelisted or when the sample's plane (``three_d.slice_index`` / ``video.frame_index``)
is editable; a plane fix also opens what depends on the plane (the spatial block, the mask and the
segmentation/detection payload). The mask is editable when ``tasks.segmentation`` is covered. A revision whose
plane moved without its image (or mask), or whose image moved without its plane, or whose mask no longer has
the image's size, is rejected: the sample's JSON, image and mask are all restored. A sample the original did
not have is removed unless ``"*"`` is whitelisted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmark.layout import ANNOTATIONS_DIR, DATA_META_NAME, IMAGE_EXTENSIONS, IMAGES_DIR, MASKS_DIR
from core.atomic import atomic_write_bytes, atomic_write_json
from validator.values import get_path

__all__ = [
    "PLANE_FIELDS",
    "PLANE_UNIT",
    "covered",
    "enforce_whitelist",
    "folder_digest",
    "merge_whitelisted",
    "sample_whitelist",
]

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
        log.extend(
            f"reverted {p or '<document>'}: not in the whitelist" for p in _changed(original, revised, path)
        )
    return original


def _changed(original: Any, revised: Any, path: str) -> list[str]:
    """The deepest paths where two documents differ (so a log names the field, not its whole block)."""
    if isinstance(original, dict) and isinstance(revised, dict):
        keys = list(original) + [k for k in revised if k not in original]
        return [
            p
            for k in keys
            if original.get(k, _MISSING) != revised.get(k, _MISSING)
            for p in _changed(original.get(k, _MISSING), revised.get(k, _MISSING), _join(path, k))
        ]
    return [path]


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _MISSING


PLANE_FIELDS: tuple[str, ...] = (
    "media_geometry.spatial.three_d.slice_index",
    "media_geometry.spatial.three_d.slice_axis",
    "media_geometry.spatial.video.frame_index",
)
"""The JSON fields that say which plane of the source the image shows."""

PLANE_UNIT: tuple[str, ...] = ("media_geometry.spatial", "tasks.segmentation", "tasks.detection", "images")
"""What moves with the plane: the spatial block, the mask payload, boxes drawn on that plane, the image."""


def _names(stem: str, kind: str) -> list[str]:
    """A sample's image files (any extension, in the scorer's order) or its mask, relative to the folder."""
    if kind == MASKS_DIR:
        return [f"{MASKS_DIR}/{stem}.png"]
    return [f"{IMAGES_DIR}/{stem}{ext}" for ext in IMAGE_EXTENSIONS]


def _file(folder: Path, stem: str, kind: str) -> Path | None:
    return next((folder / n for n in _names(stem, kind) if (folder / n).is_file()), None)


def _bytes_of(folder: Path, stem: str, kind: str) -> dict[str, bytes]:
    """``{relative path: bytes}`` of a sample's image files or its mask."""
    return {n: (folder / n).read_bytes() for n in _names(stem, kind) if (folder / n).is_file()}


def _restore(original: Path, revised: Path, stem: str, kind: str) -> bool:
    """Put a sample's image files or mask back as they were; True when something differed."""
    before, after = _bytes_of(original, stem, kind), _bytes_of(revised, stem, kind)
    if before == after:
        return False
    for name in after.keys() - before.keys():
        (revised / name).unlink()
    for name, data in before.items():
        if after.get(name) != data:
            atomic_write_bytes(revised / name, data, durable=False)
    return True


def _plane(document: Any) -> tuple[Any, ...]:
    return tuple(get_path(document, f) if isinstance(document, dict) else None for f in PLANE_FIELDS)


def _size(path: Path | None) -> tuple[int, int] | None:
    if path is None:
        return None
    try:
        from PIL import Image

        with Image.open(path) as img:
            return (int(img.size[0]), int(img.size[1]))
    except (OSError, ValueError):
        return None


def _narrow(flagged: Sequence[str], whitelist: Sequence[str]) -> list[str]:
    """The flagged fields a revision may change: each flagged path inside the whitelist, or the whitelisted
    paths inside a broader flagged one."""
    out: list[str] = []
    for field in flagged:
        if covered(field, whitelist):
            out.append(field)
        else:
            out.extend(w for w in whitelist if field == "" or w.startswith(field + ".") or w == "*")
    return sorted(set(out))


def sample_whitelist(fields: Sequence[str]) -> list[str]:
    """A sample's editable paths, widened by `PLANE_UNIT` when its plane is editable (it moves whole)."""
    out = list(fields)
    if any(covered(f, out) for f in PLANE_FIELDS):
        out += [u for u in PLANE_UNIT if u not in out]
    return out


def _enforce_sample(
    original: Path, revised: Path, stem: str, fields: Sequence[str], lines: list[str]
) -> None:
    """Apply a sample's editable ``fields`` to it and keep its image, mask and JSON together."""
    editable = sample_whitelist(fields)
    # An image opened only because the plane is editable must move with the plane; `images` (or "*") in
    # the whitelist itself allows a re-render on the same plane (another window, say).
    images_alone = covered("images", fields)
    target = revised / ANNOTATIONS_DIR / f"{stem}.json"
    before, after = _read(original / ANNOTATIONS_DIR / f"{stem}.json"), _read(target)
    if before is _MISSING:
        if "*" not in editable and target.exists():
            target.unlink()
            _restore(original, revised, stem, IMAGES_DIR)
            _restore(original, revised, stem, MASKS_DIR)
            lines.append("removed a sample the original did not have")
        return
    merged = merge_whitelisted(before, after, editable, "", lines) if isinstance(before, dict) else before
    if merged != after:
        atomic_write_json(target, merged)
    if not covered("images", editable) and _restore(original, revised, stem, IMAGES_DIR):
        lines.append(f"reverted {IMAGES_DIR}/{stem}: the image may change only with its plane")
    if not covered("tasks.segmentation", editable) and _restore(original, revised, stem, MASKS_DIR):
        lines.append(f"reverted {MASKS_DIR}/{stem}.png: file changes are not in the whitelist")
    image_moved = _bytes_of(original, stem, IMAGES_DIR) != _bytes_of(revised, stem, IMAGES_DIR)
    mask_moved = _bytes_of(original, stem, MASKS_DIR) != _bytes_of(revised, stem, MASKS_DIR)
    plane_moved = _plane(before) != _plane(merged)
    had_mask = _file(original, stem, MASKS_DIR) is not None
    problem = None
    if plane_moved and not image_moved:
        problem = "the declared plane changed but the image did not"
    elif plane_moved and had_mask and not mask_moved:
        problem = "the declared plane changed but the mask did not"
    elif image_moved and not plane_moved and not images_alone:
        problem = "the image changed but the declared plane did not"
    if problem is None and (image_moved or mask_moved):
        image_size = _size(_file(revised, stem, IMAGES_DIR))
        mask_size = _size(_file(revised, stem, MASKS_DIR))
        if image_size and mask_size and image_size != mask_size:
            problem = (
                f"the mask is {mask_size[0]}x{mask_size[1]} but the image is {image_size[0]}x{image_size[1]}"
            )
    if problem is not None:
        atomic_write_bytes(target, (original / ANNOTATIONS_DIR / f"{stem}.json").read_bytes(), durable=False)
        _restore(original, revised, stem, IMAGES_DIR)
        _restore(original, revised, stem, MASKS_DIR)
        lines.append(f"rejected a partial move ({problem}): image, mask and JSON restored")


def enforce_whitelist(
    original: Path,
    revised: Path,
    whitelist: Sequence[str],
    flagged: Mapping[int | None, Sequence[str]] | None = None,
) -> list[str]:
    """Revert, in the ``revised`` folder, every change outside the whitelist relative to ``original``.

    Args:
        original: The ``agent1_data_organization`` folder before revision.
        revised: The revised folder (modified in place).
        whitelist: Editable field paths.
        flagged: When given, the fields the checklist flagged per sample (``None`` = ``data_meta.json``): a
            sample may then change only its flagged fields inside the whitelist (plus what moves with a
            flagged plane), and a sample nothing flagged stays as it was. None: the whitelist applies to every
            sample.

    Returns:
        One line per revert (``"sample 3: reverted context.sample.modality_primary: ..."``).
    """
    log: list[str] = []
    stems = {p.stem for d in (original, revised) for p in (d / ANNOTATIONS_DIR).glob("*.json")}
    for stem in sorted(stems, key=lambda s: (len(s), s)):
        lines: list[str] = []
        if flagged is None:
            fields: Sequence[str] = whitelist
        else:
            named = flagged.get(int(stem), ()) if stem.isdigit() else ()
            fields = _narrow(named, whitelist)
        _enforce_sample(original, revised, stem, fields, lines)
        log.extend(f"sample {stem}: {line}" for line in lines)
    meta_before, meta_after = _read(original / DATA_META_NAME), _read(revised / DATA_META_NAME)
    if isinstance(meta_before, dict):
        lines = []
        meta_fields = whitelist if flagged is None else _narrow(flagged.get(None, ()), whitelist)
        wrapped = merge_whitelisted(
            {"data_meta": meta_before}, {"data_meta": meta_after}, meta_fields, "", lines
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

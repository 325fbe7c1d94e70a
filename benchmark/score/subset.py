"""A dataset's task cut to its first samples (``benchmark.samples``): the manifest lines and the ground truth
of those samples only, so the scorer judges a pilot run on what it was asked to do.

The ground truth is rewritten, not reinterpreted: its ``samples`` keep the chosen indices, and the counts the
reference scorer compares against (``expected_count``, the data_meta's ``strict_equals["data_volume.total"]``,
SPEC §3.6) become the cut's size, exactly what a ground truth written for a dataset of that many samples says
(the bundled suite generated with ``benchmark.samples``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from core.atomic import atomic_write_json, atomic_write_text, read_json_or_none

__all__ = ["cut_ground_truth", "write_subset"]


def cut_ground_truth(data: dict[str, Any], keep: set[int]) -> dict[str, Any]:
    """A ground truth document cut to the samples ``keep``, its counts the cut's size.

    Args:
        data: A ``ground_truth*.json`` document.
        keep: The sample indices to keep.

    Returns:
        A new document (``data`` is unchanged).
    """
    out = dict(data)
    samples = data.get("samples")
    if isinstance(samples, dict):
        out["samples"] = {k: v for k, v in samples.items() if k.strip().isdigit() and int(k) in keep}
    n = len(out["samples"]) if isinstance(out.get("samples"), dict) else len(keep)
    if "expected_count" in data:
        out["expected_count"] = n
    meta = data.get("data_meta_expected")
    if isinstance(meta, dict) and isinstance(meta.get("strict_equals"), dict):
        equals = dict(meta["strict_equals"])
        if "data_volume.total" in equals:
            equals["data_volume.total"] = n
        out["data_meta_expected"] = {**meta, "strict_equals": equals}
    return out


def write_subset(vlm_dir: Path, out_vlm: Path, indices: Iterable[int]) -> list[str]:
    """Write ``random.txt`` and every ``ground_truth*.json`` of ``vlm_dir`` into ``out_vlm``, cut to
    ``indices``.

    Args:
        vlm_dir: The dataset's ``VLM`` folder (read only).
        out_vlm: Where the cut files go (an export's ``VLM`` folder).
        indices: The sample indices to keep.

    Returns:
        The names of the files written (the caller links the others).
    """
    keep = set(indices)
    written = []
    manifest = vlm_dir / "random.txt"
    if manifest.is_file():
        lines = manifest.read_text(encoding="utf-8-sig").splitlines()
        # The index is the text before the first run of whitespace (SPEC §2.1); other lines are dropped.
        kept = [line for line in lines if line.split(maxsplit=1)[:1] and _index(line) in keep]
        atomic_write_text(out_vlm / "random.txt", "".join(f"{line}\n" for line in kept), durable=False)
        written.append("random.txt")
    for path in sorted(vlm_dir.glob("ground_truth*.json")):
        data = read_json_or_none(path)  # an unreadable one the scorer reports itself: link it as it is
        if isinstance(data, dict):
            atomic_write_json(out_vlm / path.name, cut_ground_truth(data, keep), durable=False)
            written.append(path.name)
    return written


def _index(line: str) -> int | None:
    head = line.split(maxsplit=1)[0]
    return int(head) if head.isdigit() else None

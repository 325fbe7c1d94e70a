"""What the file tools tell the model beyond pixels: bounded inspect listings and notes on derived objects.

``inspect`` on a MATLAB file, an HDF5 container or a CZI slide may list thousands of entries, and a render
of a DICOM SR or SEG shows pixels that belong to another file; both facts reach the model here, kept small.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["INSPECT_MAX_ENTRIES", "LABEL_MAP_OBJECTS", "bounded_summary", "derived_object_note"]

#: Entries kept per listing in one ``inspect`` result.
INSPECT_MAX_ENTRIES = 60


def bounded_summary(summary: dict[str, Any], limit: int = INSPECT_MAX_ENTRIES) -> dict[str, Any]:
    """``summary`` (what ``medio.inspect`` returned) with every listing (MATLAB variables, HDF5 datasets, CZI
    scenes ...) cut to ``limit`` entries, nested summaries (an AppleDouble stub's ``resolved``) too.

    A file may hold thousands of variables or scenes; the model sees the first ``limit`` and how many were
    left out (``"<name>_left_out"``), so one inspect stays a few kilobytes.
    """
    out: dict[str, Any] = {}
    for name, value in summary.items():
        if isinstance(value, dict) and name == "resolved":
            out[name] = bounded_summary(value, limit)
        elif isinstance(value, dict | list) and len(value) > limit:
            kept = list(value.items())[:limit] if isinstance(value, dict) else value[:limit]
            out[name] = dict(kept) if isinstance(value, dict) else kept
            out[f"{name}_left_out"] = len(value) - limit
        else:
            out[name] = value
    return out


# medio formats whose pixels are a label map drawn on another series (medio.dicom_seg, medio.rtstruct).
LABEL_MAP_OBJECTS = ("dicom_seg", "rtstruct")


def derived_object_note(image: Any, source: Path, info: dict[str, Any]) -> dict[str, Any]:
    """What the model must know when a render shows another file's pixels or a map on another series.

    An SR has no pixels: medio read the image it references (``info["source"]`` is that file). A SEG or
    RTSTRUCT label map lies on a slice of its referenced series: name that slice's image file.
    """
    header = image.meta.header
    if header.get("read_note"):
        return {"read_from": str(source), "note": header["read_note"]}
    files, k = header.get("slice_files"), info.get("slice_index")
    if image.meta.format not in LABEL_MAP_OBJECTS or not files:
        return {}
    k = 0 if k is None else k
    facts: dict[str, Any] = {"referenced_image": files[k] if k < len(files) else None}
    facts["note"] = (
        f"label map of the {image.meta.format} on slice {k} of its referenced series"
        + (" (referenced_image)" if facts["referenced_image"] else " (its image is not in the dataset)")
        + f"; render that image, or the series folder with slice_index={k}, as the sample's image"
    )
    return facts

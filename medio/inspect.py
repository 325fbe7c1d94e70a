"""``inspect(path)``: a safe JSON-able summary of any file, for people and for the agents' tools."""

from __future__ import annotations

import logging
from os import PathLike
from pathlib import Path
from typing import Any

from medio.errors import MedioError
from medio.libraries import need
from medio.read import SUMMARIZERS, library_failure, refine_dicom, resolve
from medio.sniff import sniff
from medio.types import jsonable

log = logging.getLogger(__name__)


def inspect(path: str | PathLike[str]) -> dict[str, Any]:
    """Summarise a file or DICOM folder without loading large payloads.

    Headers only: DICOM with ``stop_before_pixels``, NIfTI/MetaImage/TIFF/PNG headers, HDF5 trees, npz member
    headers, MATLAB ``whosmat`` (structs and cells walked), the first table rows, video container headers, the
    CZI directory and metadata, ENVI headers; a macOS AppleDouble stub is summarised with its real file.

    Args:
        path: File or folder.

    Returns:
        ``{"path", "format", "size_bytes", ...format-specific keys}``. Never raises for bad input: an unknown,
        empty or corrupt file yields a dict with an ``"error"`` entry (and ``"error_type"``).
    """
    p = Path(path)
    out: dict[str, Any] = {"path": str(p), "format": None, "size_bytes": None}
    try:
        out["size_bytes"] = p.stat().st_size if p.is_file() else None
        family = refine_dicom(p, sniff(p))
        out["format"] = family
        need(family)
        out.update(resolve(SUMMARIZERS[family])(p))
    except MedioError as exc:
        out.update({"error": exc.reason, "error_type": type(exc).__name__})
    except OSError as exc:
        out.update({"error": f"cannot open ({exc})", "error_type": "MedioError"})
    except Exception as exc:
        log.debug("inspect failed on %s", p, exc_info=True)
        wrapped = library_failure(p, str(out["format"]), exc)
        if isinstance(wrapped, MedioError):
            out.update({"error": wrapped.reason, "error_type": type(wrapped).__name__})
        else:
            out.update({"error": f"{type(exc).__name__}: {exc}", "error_type": "CorruptFile"})
    return jsonable(out)  # type: ignore[no-any-return]


def dicom_header(path: str | PathLike[str]) -> dict[str, Any]:
    """The header fields `inspect` reports for a DICOM file: PatientID, the study, series and instance UIDs,
    Modality ... (the identifiers a label table may key its rows by, and what a check compares).

    Args:
        path: Any file.

    Returns:
        The fields (``Modality`` from the summary's modality when the header lacks it); empty for a file that
        is no DICOM or cannot be opened.
    """
    p = Path(path)
    try:
        if sniff(p) != "dicom":
            return {}
    except (OSError, MedioError):
        return {}
    info = inspect(p)
    header = dict(info.get("header") or {})
    if info.get("modality"):
        header.setdefault("Modality", info["modality"])
    return header

"""Which kind of DICOM object a file holds: an image, or a derived object (SR, SEG, RTSTRUCT).

The kind comes from the header (SOP Class UID, else Modality), never from the file name: derived objects are
stored as ``.dcm`` like any image. Only the first elements of the data set are parsed (group 0008 ends with
Modality), and a file whose meta header names an image class is not parsed at all.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

# Structured reports: every SR storage class lives under this root (PS3.4 B.5, "1.2.840.10008.5.1.4.1.1.88.x":
# Basic/Enhanced/Comprehensive/Comprehensive 3D/Extensible SR, CAD SRs, dose reports, Key Object Selection).
SR_CLASS_ROOT = "1.2.840.10008.5.1.4.1.1.88."
# Segmentation Storage and Label Map Segmentation Storage (PS3.4 B.5; PS3.3 A.51).
SEG_CLASSES = frozenset({"1.2.840.10008.5.1.4.1.1.66.4", "1.2.840.10008.5.1.4.1.1.66.7"})
# RT Structure Set Storage (PS3.3 A.19).
RTSTRUCT_CLASS = "1.2.840.10008.5.1.4.1.1.481.3"
# Modality codes of the same objects (PS3.3 C.7.3.1.1.1), used when the SOP Class UID is missing or private.
_BY_MODALITY = {"SR": "dicom_sr", "KO": "dicom_sr", "SEG": "dicom_seg", "RTSTRUCT": "rtstruct"}

_HEAD_BYTES = 2048
# (0002,0002) Media Storage SOP Class UID, little endian as group 0002 always is (PS3.10 7.1).
_MEDIA_CLASS_TAG = b"\x02\x00\x02\x00"
_DERIVED_UIDS = tuple(u.encode("ascii") for u in (SR_CLASS_ROOT, *SEG_CLASSES, RTSTRUCT_CLASS))
_MODALITY = 0x00080060


def kind_of(sop_class_uid: str | None, modality: str | None) -> str:
    """Map a SOP Class UID (else a Modality) to ``"dicom_sr"``, ``"dicom_seg"``, ``"rtstruct"``, or
    ``"dicom"`` for anything else (images).
    """
    uid = (sop_class_uid or "").strip()
    if uid.startswith(SR_CLASS_ROOT):
        return "dicom_sr"
    if uid in SEG_CLASSES:
        return "dicom_seg"
    if uid == RTSTRUCT_CLASS:
        return "rtstruct"
    return _BY_MODALITY.get((modality or "").strip().upper(), "dicom")


def dicom_kind(path: Path) -> str:
    """The family (as `kind_of`) of a file already sniffed as ``"dicom"``, from its first header elements.

    A file whose header cannot be parsed stays ``"dicom"``: the image reader then reports the damage itself,
    with the usual one-line error.
    """
    from pydicom.filereader import read_partial

    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return "dicom"
    if head[128:132] == b"DICM" and _MEDIA_CLASS_TAG in head and not any(u in head for u in _DERIVED_UIDS):
        # The file meta names an image SOP class (PS3.10 7.1): no need to parse the data set.
        return "dicom"

    def past_modality(tag: int, vr: str | None, length: int) -> bool:
        return tag > _MODALITY

    try:
        with path.open("rb") as fh:
            ds = read_partial(fh, stop_when=past_modality, force=True)
        return kind_of(str(ds.get("SOPClassUID") or ""), str(ds.get("Modality") or ""))
    except Exception as exc:  # any parse failure is the image reader's to report
        log.debug("cannot read the SOP class of %s: %s", path, exc)
        return "dicom"

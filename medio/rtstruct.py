"""RT Structure Sets (RTSTRUCT): ROI contours in patient millimetres, rasterised to a label map.

An RTSTRUCT names its ROIs in the Structure Set ROI Sequence and draws each as planar contours (ROI Contour
Sequence → Contour Sequence, ``ContourData`` = x, y, z triplets in mm) on the images listed in each
contour's Contour Image Sequence (PS3.3 C.8.8.5, C.8.8.6). ``read_rtstruct`` finds those images in the
folder tree (:mod:`medio.dicom_refs`), maps the points to pixel coordinates with the image's position,
orientation and pixel spacing, and fills each closed contour (``skimage.draw.polygon``: pixels whose centre
lies inside). The label map spans the whole referenced series in :func:`medio.dicom_series.read_series`
order, so mask slice ``k`` is image slice ``k``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medio import _dicom_tags as tags
from medio.dicom import open_dataset
from medio.dicom_refs import SliceGeometry, nearest_slice, referenced_series, reports_damage, slice_heights
from medio.errors import CorruptFile, MissingReference, UnsupportedFormat
from medio.types import MedImage, Meta

if TYPE_CHECKING:
    from pydicom.dataset import Dataset

MAX_LISTED = 32


@dataclass
class Roi:
    """One ROI: its number and name, interpreted type, and its contours."""

    number: int
    name: str
    interpreted_type: str | None = None
    contours: list[tuple[str, str | None, np.ndarray]] = field(default_factory=list)
    """``(geometric type, referenced image UID, points (N, 3) in mm)`` per contour."""


def rois_of(path: Path, ds: Dataset) -> list[Roi]:
    """The ROIs in Structure Set order with their contours (parsed, nothing rasterised); ``CorruptFile`` when
    there is no StructureSetROISequence or contour data are not x, y, z triplets.
    """
    items = ds.get("StructureSetROISequence")
    if not items:
        raise CorruptFile(path, "RTSTRUCT without a StructureSetROISequence: no ROI names or numbers")
    rois: dict[int, Roi] = {}
    for k, item in enumerate(items):
        number = tags.first_float(item.get("ROINumber"))
        if number is None:
            raise CorruptFile(path, f"RTSTRUCT ROI item {k + 1} has no ROINumber")
        rois[int(number)] = Roi(int(number), tags.text(item, "ROIName") or f"ROI {int(number)}")
    for item in ds.get("RTROIObservationsSequence") or []:
        ref = tags.first_float(item.get("ReferencedROINumber"))
        if ref is not None and int(ref) in rois:
            rois[int(ref)].interpreted_type = tags.text(item, "RTROIInterpretedType")
    for item in ds.get("ROIContourSequence") or []:
        ref = tags.first_float(item.get("ReferencedROINumber"))
        roi = rois.get(int(ref)) if ref is not None else None
        if roi is None:
            continue
        for c, contour in enumerate(item.get("ContourSequence") or []):
            data = tags.floats(contour.get("ContourData"))
            if not data or len(data) % 3 or not all(np.isfinite(data)):
                raise CorruptFile(
                    path,
                    f"RTSTRUCT ROI {roi.name!r} contour {c + 1}: ContourData is not finite x,y,z triplets",
                )
            images = contour.get("ContourImageSequence") or []
            uid = tags.text(images[0], "ReferencedSOPInstanceUID") if images else None
            kind = tags.text(contour, "ContourGeometricType") or "CLOSED_PLANAR"
            roi.contours.append((kind, uid, np.asarray(data, dtype=np.float64).reshape(-1, 3)))
    return list(rois.values())


def label_ids(rois: list[Roi]) -> dict[int, int]:
    """ROI number → label id: the ROI numbers when all are in 1..255, else 1..n in file order."""
    keep = all(1 <= r.number <= 255 for r in rois)
    return {r.number: r.number if keep else k + 1 for k, r in enumerate(rois)}


def _referenced(ds: Dataset) -> tuple[list[str], list[str]]:
    """Image and series UIDs the structure set refers to (Referenced Frame of Reference → ... → series)."""
    images, series = [], []
    for frame in ds.get("ReferencedFrameOfReferenceSequence") or []:
        for study in frame.get("RTReferencedStudySequence") or []:
            for item in study.get("RTReferencedSeriesSequence") or []:
                if uid := tags.text(item, "SeriesInstanceUID"):
                    series.append(uid)
                for image in item.get("ContourImageSequence") or []:
                    if uid := tags.text(image, "ReferencedSOPInstanceUID"):
                        images.append(uid)
    return images, series


def _fill(geometry: SliceGeometry, points: np.ndarray) -> np.ndarray:
    from skimage.draw import polygon

    rows, cols = geometry.to_pixels(points)
    # Contours drawn through pixel centres come back as 6.9999999 after the mm round trip; without the
    # rounding, boundary pixels of one straight edge would be kept on some rows and lost on others.
    rows, cols = np.round(rows, 3), np.round(cols, 3)
    mask = np.zeros((geometry.rows, geometry.columns), dtype=bool)
    rr, cc = polygon(rows, cols, mask.shape)  # type: ignore[no-untyped-call]
    mask[rr, cc] = True
    return mask


@reports_damage
def read_rtstruct(path: str | Path) -> MedImage:
    """Rasterise an RTSTRUCT's closed contours to a label map on its referenced series.

    Ids are the ROI numbers (when all are in 1..255, else 1..n in file order). Several contours of one ROI
    on one slice combine by exclusive or, so a contour inside another is a hole (PS3.3 C.8.8.6.3 allows holes
    drawn as separate contours). Overlapping ROIs: larger ROIs are painted first, so a structure inside
    another (an organ inside the body outline) keeps its own id. Point and open contours are not filled.

    Args:
        path: The RTSTRUCT file.

    Returns:
        ``(Z, H, W)`` ``uint8`` ids over the referenced series; ``meta.header`` has ``classes``, ``rois``
        (number, id, name, type, contours, slices) and ``slice_files`` (the series' image of each slice).

    Raises:
        CorruptFile: No StructureSetROISequence, malformed contour data, or referenced images without
            patient geometry.
        MissingReference: A contour's image (or the whole referenced series) is not in the folder tree.
        UnsupportedFormat: The referenced image is one enhanced multi-frame file.
    """
    path = Path(path)
    ds, _ = open_dataset(path)
    rois = rois_of(path, ds)
    listed, series_uids = _referenced(ds)
    contour_uids = [uid for roi in rois for _, uid, _ in roi.contours if uid]
    # The series is found by its UID only when no image is named (a deeper, slower header read per file).
    by_series = series_uids if not (contour_uids or listed) else []
    geometries, found = referenced_series(path, [*contour_uids, *listed], by_series)
    missing = found.missing(dict.fromkeys(contour_uids))
    if missing or not geometries:
        what = (
            f"image {missing[0]}"
            if missing
            else f"series {series_uids[0] if series_uids else '(none named)'}"
        )
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise MissingReference(
            path,
            f"RTSTRUCT contours reference {what}{more}, which is not under {found.root} "
            f"({found.scanned} DICOM files searched)",
        )
    first = geometries[0]
    if any(g.n_frames > 1 for g in geometries):
        # One file holding the whole series (enhanced multi-frame CT/MR): its slices are frames, not files.
        raise UnsupportedFormat(path, f"RTSTRUCT on a multi-frame image ({first.path.name}) is not supported")
    if any((g.rows, g.columns) != (first.rows, first.columns) for g in geometries):
        raise CorruptFile(path, f"the referenced series {first.path.parent} mixes image sizes")
    by_uid = {g.sop_instance_uid: z for z, g in enumerate(geometries)}
    along, gap = slice_heights(geometries)
    if len(rois) > 255:
        raise CorruptFile(path, f"RTSTRUCT has {len(rois)} ROIs; an 8-bit label map holds 255")
    ids = label_ids(rois)
    per_roi: dict[int, dict[int, np.ndarray]] = {}
    skipped = 0
    for roi in rois:
        planes: dict[int, np.ndarray] = {}
        for kind, uid, points in roi.contours:
            if kind != "CLOSED_PLANAR" or len(points) < 3:
                skipped += 1
                continue
            # A contour without an image reference lies on the slice at its height (PS3.3 C.8.8.6.2: planar).
            z = by_uid.get(uid) if uid else nearest_slice(along, gap, float(np.mean(points @ first.normal)))
            if z is None:
                skipped += 1
                continue
            filled = _fill(geometries[z], points)
            planes[z] = planes[z] ^ filled if z in planes else filled
        per_roi[roi.number] = planes
    area = {n: sum(int(p.sum()) for p in planes.values()) for n, planes in per_roi.items()}
    labels = np.zeros((len(geometries), first.rows, first.columns), dtype=np.uint8)
    for number in sorted(per_roi, key=lambda n: -area[n]):
        for z, plane in per_roi[number].items():
            labels[z][plane] = ids[number]
    header: dict[str, Any] = tags.header_subset(ds)
    header.update(
        {
            "structure_set_label": tags.text(ds, "StructureSetLabel"),
            "classes": {"0": "background", **{str(ids[r.number]): r.name for r in rois}},
            "rois": [_roi_facts(r, ids[r.number], per_roi[r.number]) for r in rois],
            "contours_not_filled": skipped,
            "slice_files": [str(g.path) for g in geometries][:2000],
        }
    )
    spacing = (gap if gap is not None else 1.0, *first.spacing)
    meta = Meta(
        format="rtstruct",
        path=str(path),
        axes="ZYX",
        spacing=spacing,
        origin=first.position,
        direction=tags.direction_matrix(first.orientation),
        modality="RTSTRUCT",
        photometric="MONOCHROME2",
        header=header,
    )
    return MedImage(labels, meta)


def _roi_facts(roi: Roi, label_id: int | None, planes: dict[int, np.ndarray] | None) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "number": roi.number,
        "name": roi.name,
        "type": roi.interpreted_type,
        "contours": len(roi.contours),
        "geometric_types": sorted({kind for kind, _, _ in roi.contours}),
    }
    if label_id is not None:
        facts["id"] = label_id
    if planes is not None:
        facts["slices"] = sorted(z for z, p in planes.items() if p.any())[:MAX_LISTED]
        facts["pixels"] = int(sum(int(p.sum()) for p in planes.values()))
    return facts


@reports_damage
def summarize_rtstruct(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: ``rois`` (number, name, type, contours), ``referenced_series``, how many contour
    images were found in the folder tree (and one of their files), and the usual DICOM ``header``, from the
    header; ``CorruptFile`` for no StructureSetROISequence or malformed contour data.
    """
    from medio.dicom_refs import find_instances

    path = Path(path)
    ds, _ = open_dataset(path)
    rois = rois_of(path, ds)
    listed, series_uids = _referenced(ds)
    uids = list(dict.fromkeys([*(uid for roi in rois for _, uid, _ in roi.contours if uid), *listed]))
    found = find_instances(path, uids)
    a_file = next(iter(found.instances.values()), None)
    ids = label_ids(rois)
    return {
        "kind": "RTSTRUCT (ROI contours in mm; render gives the label map on the referenced series)",
        "modality": tags.text(ds, "Modality"),
        "structure_set_label": tags.text(ds, "StructureSetLabel"),
        "rois": [_roi_facts(r, ids[r.number], None) for r in rois[:MAX_LISTED]],
        "n_rois": len(rois),
        "classes": {"0": "background", **{str(ids[r.number]): r.name for r in rois[:MAX_LISTED]}},
        "referenced_series": series_uids[:4],
        "n_referenced_images": len(uids),
        "n_referenced_images_found": len(found.instances),
        "referenced_image_example": str(a_file.path) if a_file else None,
        "referenced_folder": str(a_file.path.parent) if a_file else None,
        "header": tags.header_subset(ds),
    }

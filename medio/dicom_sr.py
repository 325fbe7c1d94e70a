"""DICOM Structured Reports (SR): read as structured content, never as an image.

An SR holds no pixels: a tree of content items (PS3.3 C.17.3), each with a relationship to its parent, a
value type and a coded concept name. ``read_report`` walks the tree into what a standardizer uses:
measurements (NUM with units), findings (TEXT/CODE), regions (SCOORD: image pixel coordinates of points,
polylines, circles, ellipses, with the box they span; SCOORD3D: patient mm) and the images they refer to,
resolved by SOP Instance UID to files in the folder tree (:mod:`medio.dicom_refs`).

``read_sr`` (what ``medio.read`` does with an SR) returns the image the report describes, with the report
attached (``meta.header["structured_report"]``) and a note saying so; an SR whose images are not in the tree
fails with ``MissingReference``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from medio import _dicom_tags as tags
from medio.dicom import open_dataset, read_dicom
from medio.dicom_kind import dicom_kind
from medio.dicom_refs import find_instances, geometries_of, nearest_slice, reports_damage, slice_heights
from medio.dicom_seg import read_seg
from medio.errors import CorruptFile, MedioError, MissingReference
from medio.render import choose_slice
from medio.types import MedImage

if TYPE_CHECKING:
    from pydicom.dataset import Dataset

# Bounds on what is kept (reports of thousands of items exist; the agent's context is small).
MAX_DEPTH = 16
MAX_ITEMS = 5000
MAX_LISTED = 24
# Referenced images whose planes a SCOORD3D region is matched against (headers read, cached).
MAX_PROJECTION_IMAGES = 2000
# Concepts that name a measurement group (TID 1410/1411 Tracking Identifier, TID 1501 Finding).
_GROUP_NAMES = ("Tracking Identifier", "Finding", "Finding Site", "Tracking Unique Identifier")
_DATE_KEYWORDS = {"DATE": "Date", "TIME": "Time", "DATETIME": "DateTime"}


@dataclass
class Report:
    """What an SR says, flattened.

    Attributes:
        path: The SR file.
        title: The root container's concept name (the document title).
        document: The SOP class name (e.g. ``Comprehensive SR``).
        completion: CompletionFlag.
        verification: VerificationFlag.
        n_items: Content items walked.
        measurements: ``{group, concept, value, unit}`` per NUM item.
        findings: ``{group, concept, value}`` per TEXT/CODE/DATE/UIDREF item.
        regions: SCOORD/SCOORD3D items: ``graphic_type``, ``points``, ``box`` (``[x, y, w, h]`` in image
            pixels, SCOORD only), ``image`` (UID), ``frame``, ``file``, ``group``, ``concept``.
        images: Referenced images: ``{uid, frame, file}`` (``file`` when found in the folder tree).
        searched: The highest folder searched for the images.
        modality: The Modality element (``SR``, ``KO``).
        header: The usual identifying DICOM header subset.
        points_mm: All points of each SCOORD3D region (by index into ``regions``), in patient mm.
    """

    path: Path
    title: str | None
    document: str | None
    completion: str | None
    verification: str | None
    n_items: int = 0
    measurements: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    regions: list[dict[str, Any]] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    searched: str | None = None
    modality: str | None = None
    header: dict[str, Any] = field(default_factory=dict)
    points_mm: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def summary(self, limit: int = MAX_LISTED) -> dict[str, Any]:
        """The report as a bounded JSON-able dict (the first ``limit`` of each list, with full counts)."""
        return {
            "title": self.title,
            "document": self.document,
            "completion": self.completion,
            "verification": self.verification,
            "n_items": self.n_items,
            "measurements": self.measurements[:limit],
            "n_measurements": len(self.measurements),
            "findings": self.findings[:limit],
            "n_findings": len(self.findings),
            "regions": self.regions[:limit],
            "n_regions": len(self.regions),
            "referenced_images": self.images[:limit],
            "n_referenced_images": len(self.images),
            "n_referenced_images_found": sum(1 for i in self.images if i.get("file")),
        }


def _code_meaning(item: Any, keyword: str = "ConceptNameCodeSequence") -> str | None:
    codes = item.get(keyword)
    return tags.text(codes[0], "CodeMeaning") or tags.text(codes[0], "CodeValue") if codes else None


def _box(graphic_type: str, points: np.ndarray) -> list[float] | None:
    """``[x, y, w, h]`` spanned by a SCOORD (PS3.3 C.18.6.1.2: (column, row), (0, 0) the image's top left)."""
    if points.size == 0:
        return None
    if graphic_type == "CIRCLE" and len(points) >= 2:
        radius = float(np.linalg.norm(points[1] - points[0]))
        (x, y) = points[0]
        return [float(x - radius), float(y - radius), 2 * radius, 2 * radius]
    lo, hi = points.min(axis=0), points.max(axis=0)
    return [float(lo[0]), float(lo[1]), float(hi[0] - lo[0]), float(hi[1] - lo[1])]


def _image_ref(item: Any) -> tuple[str | None, int | None]:
    refs = item.get("ReferencedSOPSequence")
    if not refs:
        return None, None
    frame = tags.first_float(refs[0].get("ReferencedFrameNumber"))
    return tags.text(refs[0], "ReferencedSOPInstanceUID"), int(frame) if frame else None


def _group_label(children: Any, container: str | None) -> str | None:
    names = []
    for child in children:
        if _code_meaning(child) in _GROUP_NAMES:
            value = tags.text(child, "TextValue") or _code_meaning(child, "ConceptCodeSequence")
            value = value or tags.text(child, "UID")
            if value:
                names.append(value)
    return " / ".join(names) if names else container


class _Walker:
    """Depth-first walk of the content tree (bounded by depth and item count)."""

    def __init__(self, report: Report) -> None:
        self.report = report

    def walk(self, items: Any, depth: int, group: str | None) -> None:
        for item in items:
            if self.report.n_items >= MAX_ITEMS or depth > MAX_DEPTH:
                return
            self.report.n_items += 1
            self.item(item, depth, group)

    def item(self, item: Any, depth: int, group: str | None) -> None:
        value_type = (tags.text(item, "ValueType") or "").upper()
        concept = _code_meaning(item)
        children = item.get("ContentSequence") or []
        if value_type == "NUM":
            measured = item.get("MeasuredValueSequence") or []
            number = tags.first_float(measured[0].get("NumericValue")) if measured else None
            unit = None
            if measured and measured[0].get("MeasurementUnitsCodeSequence"):
                unit_item = measured[0].MeasurementUnitsCodeSequence[0]
                unit = tags.text(unit_item, "CodeValue") or tags.text(unit_item, "CodeMeaning")
            self.report.measurements.append(
                {"group": group, "concept": concept, "value": number, "unit": unit}
            )
        elif value_type in ("TEXT", "CODE", "DATE", "TIME", "DATETIME", "UIDREF", "PNAME"):
            value = (
                tags.text(item, "TextValue")
                or _code_meaning(item, "ConceptCodeSequence")
                or tags.text(item, "UID")
                or tags.text(item, "PersonName")
                or tags.text(item, _DATE_KEYWORDS.get(value_type, "TextValue"))
            )
            self.report.findings.append({"group": group, "concept": concept, "value": value})
        elif value_type in ("SCOORD", "SCOORD3D"):
            self.region(item, value_type, concept, group, children)
        elif value_type in ("IMAGE", "COMPOSITE"):
            self.image(*_image_ref(item))
        if value_type == "CONTAINER":
            group = _group_label(children, concept) or group
        if children and value_type != "SCOORD":
            self.walk(children, depth + 1, group)

    def region(
        self, item: Any, value_type: str, concept: str | None, group: str | None, children: Any
    ) -> None:
        graphic_type = (tags.text(item, "GraphicType") or "").upper()
        data = tags.floats(item.get("GraphicData")) or ()
        width = 3 if value_type == "SCOORD3D" else 2
        points = np.asarray(data[: len(data) - len(data) % width], dtype=np.float64).reshape(-1, width)
        region: dict[str, Any] = {
            "concept": concept,
            "group": group,
            "graphic_type": graphic_type,
            "points": points.round(3).tolist()[:16],
            "n_points": len(points),
        }
        if value_type == "SCOORD":
            region["box"] = _box(graphic_type, points)
            # The image a SCOORD is drawn on is its SELECTED FROM child (PS3.3 C.18.6.1).
            source = next((c for c in children if (tags.text(c, "ValueType") or "").upper() == "IMAGE"), None)
            uid, frame = _image_ref(source) if source is not None else (None, None)
            region.update({"image": uid, "frame": frame})
            self.image(uid, frame)
        else:
            region["coordinates"] = "patient mm"
            region["frame_of_reference"] = tags.text(item, "ReferencedFrameOfReferenceUID")
            self.report.points_mm[len(self.report.regions)] = points
        self.report.regions.append(region)

    def image(self, uid: str | None, frame: int | None) -> None:
        if uid and not any(i["uid"] == uid and i["frame"] == frame for i in self.report.images):
            self.report.images.append({"uid": uid, "frame": frame, "file": None})

    def image_list(self, uids: list[str]) -> None:
        # Evidence lists name whole instances; an instance already referenced (any frame) is not repeated.
        for uid in uids:
            if not any(i["uid"] == uid for i in self.report.images):
                self.image(uid, None)


def _evidence(ds: Dataset) -> list[str]:
    """Instances listed as evidence (PS3.3 C.17.2.3: Current Requested Procedure, Pertinent Other)."""
    uids = []
    for keyword in ("CurrentRequestedProcedureEvidenceSequence", "PertinentOtherEvidenceSequence"):
        for study in ds.get(keyword) or []:
            for series in study.get("ReferencedSeriesSequence") or []:
                for ref in series.get("ReferencedSOPSequence") or []:
                    if uid := tags.text(ref, "ReferencedSOPInstanceUID"):
                        uids.append(uid)
    return uids


@reports_damage
def read_report(path: str | Path) -> Report:
    """Walk an SR's content tree and resolve the images it references.

    Args:
        path: The SR file.

    Returns:
        The report.

    Raises:
        CorruptFile: The document has no content tree (an empty ContentSequence), or cannot be parsed.
    """
    from pydicom.uid import UID

    path = Path(path)
    ds, _ = open_dataset(path)
    content = ds.get("ContentSequence")
    if not content:
        raise CorruptFile(
            path, "DICOM SR with an empty content tree (no ContentSequence): it reports nothing"
        )
    sop_class = tags.text(ds, "SOPClassUID")
    report = Report(
        path,
        _code_meaning(ds),
        UID(sop_class).name if sop_class else None,
        tags.text(ds, "CompletionFlag"),
        tags.text(ds, "VerificationFlag"),
    )
    report.modality, report.header = tags.text(ds, "Modality"), tags.header_subset(ds)
    walker = _Walker(report)
    walker.walk(content, 0, _code_meaning(ds))
    walker.image_list(_evidence(ds))
    found = find_instances(path, [i["uid"] for i in report.images])
    report.searched = str(found.root) if found.root else None
    for image in report.images:
        if image["uid"] in found.instances:
            image["file"] = str(found.instances[image["uid"]].path)
            # TID 1500 reports point at a SEG as often as at an image (PS3.16 TID 1411).
            image["kind"] = dicom_kind(Path(image["file"]))
    for region in report.regions:
        if region.get("image") in found.instances:
            region["file"] = str(found.instances[region["image"]].path)
    _project(report)
    return report


def _project(report: Report) -> None:
    """Put each planar SCOORD3D region on the referenced image whose plane holds it, as a pixel box.

    A SCOORD3D names a frame of reference, not an image (PS3.3 C.18.9); the report's referenced images (its
    evidence lists the series) give the planes. A region within half a slice gap of one plane gets that
    image's ``image``/``file`` and a ``box`` in its pixels (``projected``: true).
    """
    if not report.points_mm:
        return
    files = [Path(i["file"]) for i in report.images if i.get("file") and i.get("kind") == "dicom"]
    planes = geometries_of(files[:MAX_PROJECTION_IMAGES])
    if not planes:
        return
    heights, gap = slice_heights(planes)
    for k, points in report.points_mm.items():
        if points.size == 0:
            continue
        nearest = nearest_slice(heights, gap, float(np.mean(points @ planes[0].normal)))
        if nearest is None:
            continue
        plane = planes[nearest]
        rows, cols = plane.to_pixels(points)
        # Pixel indices count pixel centres; SCOORD/COCO boxes count from the top-left corner (+0.5).
        corner = np.stack([cols, rows], axis=1) + 0.5
        graphic_type = report.regions[k]["graphic_type"]
        report.regions[k].update(
            {
                "image": plane.sop_instance_uid,
                "file": str(plane.path),
                "frame": None,
                "box": [round(v, 3) for v in _box(graphic_type, corner) or []] or None,
                "projected": True,
            }
        )


@reports_damage
def read_sr(path: str | Path) -> MedImage:
    """Read the image an SR describes (the first with a region on it, else the first referenced one).

    Args:
        path: The SR file.

    Returns:
        That image as :func:`medio.dicom.read_dicom` reads it (the referenced frame only, for a multi-frame
        image); ``meta.path`` is the image's file, ``meta.header["structured_report"]`` the report's bounded
        summary (regions on this image first) and ``meta.header["read_note"]`` says what was read instead.

    Raises:
        CorruptFile: The report has no content tree.
        MissingReference: None of its referenced images is in the folder tree (or it references none).
    """
    report = read_report(path)
    drawn = [r for r in report.regions if r.get("file")]
    target = _target(report, drawn)
    if target is None:
        what = f"{len(report.images)} image(s), none of them" if report.images else "no image, so nothing"
        counts = f"{len(report.measurements)} measurement(s), {len(report.regions)} region(s)"
        raise MissingReference(
            path,
            f"DICOM SR (no pixels: {counts}) references {what} under {report.searched}; "
            "inspect it for its content",
        )
    image = read_dicom(Path(target.file), frame=target.frame - 1 if target.frame else None)
    summary = report.summary()
    summary["regions"] = sorted(summary["regions"], key=lambda r: r.get("image") != target.uid)
    image.meta.header["structured_report"] = summary
    image.meta.header["read_from"] = str(report.path)
    boxes = [r["box"] for r in drawn if r["file"] == target.file][:4]
    image.meta.header["read_note"] = (
        f"{report.path.name} is a DICOM SR (no pixels): these are the pixels of {target.why}, "
        f"{Path(target.file).name}" + (f"; its boxes [x, y, w, h] on that image: {boxes}" if boxes else "")
    )
    return image


class _Target(NamedTuple):
    """The image `read_sr` shows for a report, and why."""

    file: str
    frame: int | None
    uid: str | None
    why: str


def _target(report: Report, drawn: list[dict[str, Any]]) -> _Target | None:
    """The image to show for a report: one a region is drawn on, else the slice under the largest part of
    a SEG it references, else the first referenced image."""
    if drawn:
        return _Target(drawn[0]["file"], drawn[0].get("frame"), drawn[0]["image"], "the image it marks")
    for image in report.images:
        if image.get("kind") == "dicom_seg":
            try:
                labels = read_seg(Path(image["file"]))
            except MedioError:
                continue
            volume = labels.array if labels.array.ndim == 3 else labels.array[None]
            k = choose_slice(volume.shape, 0, volume)
            behind = labels.meta.header["slice_files"][k]
            if behind:
                why = (
                    f"the slice under the largest part of the SEG it references ({Path(image['file']).name})"
                )
                return _Target(behind, None, labels.meta.header["slice_uids"][k], why)
    plain = next((i for i in report.images if i.get("kind") == "dicom"), None)
    if plain is None:
        return None
    return _Target(plain["file"], plain["frame"], plain["uid"], "the image it references")


@reports_damage
def summarize_sr(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: the report summary (:meth:`Report.summary`, bounded), ``kind``, ``modality``, the
    image to render and the usual DICOM ``header``; ``CorruptFile`` when the report has no content tree.
    """
    report = read_report(path)
    first = next((i["file"] for i in report.images if i["file"]), None)
    return {
        "kind": "DICOM SR (structured report, no pixels; render shows the image it references)",
        "modality": report.modality,
        **report.summary(),
        "image_to_render": first,
        "header": report.header,
    }

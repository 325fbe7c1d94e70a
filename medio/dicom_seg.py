"""DICOM Segmentation objects (SEG): labelled segments on the slices they reference, as one label map.

A SEG stores one frame per (segment, slice) pair (PS3.3 C.8.20). Each frame's per-frame functional groups
say which segment it holds (Segment Identification), which image it was derived from (Derivation Image →
Source Image → Referenced SOP Instance UID) and where it lies (Plane Position). ``read_seg`` gathers the
frames into a label map whose ids are the segment numbers and whose class table comes from the Segment
Sequence. When the referenced series is in the folder tree (:mod:`medio.dicom_refs`), the map spans that
whole series in the order :func:`medio.dicom_series.read_series` stacks it, so mask slice ``k`` is image
slice ``k``; otherwise it spans the SEG's own planes, ordered along the slice normal.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medio import _dicom_tags as tags
from medio._axes import check_size
from medio.dicom import _decode, open_dataset
from medio.dicom_refs import SliceGeometry, nearest_slice, referenced_series, reports_damage, slice_heights
from medio.errors import CorruptFile
from medio.types import MedImage, Meta

if TYPE_CHECKING:
    from pydicom.dataset import Dataset

log = logging.getLogger(__name__)

# What inspect lists at most (the agent's context is small); counts are always complete.
MAX_LISTED = 24


@dataclass(frozen=True)
class Segment:
    """One entry of the Segment Sequence (PS3.3 C.8.20.2)."""

    number: int
    label: str
    category: str | None
    type: str | None
    algorithm: str | None


@dataclass(frozen=True)
class Frame:
    """What one frame's functional groups say: its segment, source image and plane position."""

    segment: int
    source_uid: str | None
    position: tuple[float, ...] | None


def _meaning(item: Any, sequence: str) -> str | None:
    codes = item.get(sequence)
    return tags.text(codes[0], "CodeMeaning") if codes else None


def segments_of(path: Path, ds: Dataset) -> list[Segment]:
    """The segment table in file order; ``CorruptFile`` when the SEG has none (PS3.3 C.8.20.2: it is
    mandatory) or a segment has no number.
    """
    items = ds.get("SegmentSequence")
    if not items:
        raise CorruptFile(path, "DICOM SEG without a SegmentSequence: no segment numbers or labels to read")
    out = []
    for k, item in enumerate(items):
        number = tags.first_float(item.get("SegmentNumber"))
        if number is None:
            raise CorruptFile(path, f"DICOM SEG segment item {k + 1} has no SegmentNumber")
        out.append(
            Segment(
                int(number),
                tags.text(item, "SegmentLabel") or f"segment {int(number)}",
                _meaning(item, "SegmentedPropertyCategoryCodeSequence"),
                _meaning(item, "SegmentedPropertyTypeCodeSequence"),
                tags.text(item, "SegmentAlgorithmType"),
            )
        )
    return out


def _first(item: Any, *path: str) -> Any:
    """Follow first items of nested sequences (``_first(group, "A", "B")`` = group.A[0].B[0]), or None."""
    for keyword in path:
        seq = item.get(keyword) if item is not None else None
        if not seq:
            return None
        item = seq[0]
    return item


def frames_of(path: Path, ds: Dataset, segments: list[Segment]) -> list[Frame]:
    """Each frame's segment, source image and position (per-frame groups, then shared ones); ``CorruptFile``
    when a frame names no segment while the SEG has several (a one-segment SEG may omit it).
    """
    n_frames = int(tags.first_float(ds.get("NumberOfFrames")) or 1)
    per_frame = ds.get("PerFrameFunctionalGroupsSequence") or []
    shared = _first(ds, "SharedFunctionalGroupsSequence")
    out = []
    for k in range(n_frames):
        group = per_frame[k] if k < len(per_frame) else None
        ident = _first(group, "SegmentIdentificationSequence") or _first(
            shared, "SegmentIdentificationSequence"
        )
        number = tags.first_float(ident.get("ReferencedSegmentNumber")) if ident is not None else None
        if number is None:
            if len(segments) != 1:
                raise CorruptFile(
                    path, f"DICOM SEG frame {k + 1} names no segment (SegmentIdentificationSequence)"
                )
            number = segments[0].number
        source = _first(group, "DerivationImageSequence", "SourceImageSequence")
        uid = tags.text(source, "ReferencedSOPInstanceUID") if source is not None else None
        plane = _first(group, "PlanePositionSequence") or _first(shared, "PlanePositionSequence")
        position = tags.floats(plane.get("ImagePositionPatient")) if plane is not None else None
        out.append(Frame(int(number), uid, position if position and len(position) == 3 else None))
    return out


def _layout(
    path: Path, ds: Dataset, frames: list[Frame]
) -> tuple[list[int], list[dict[str, Any]], list[SliceGeometry]]:
    """Map every frame to a slice index of the output volume: ``(slice index per frame, slice descriptions,
    the referenced series' geometries or [])``.
    """
    # The Referenced Series Sequence lists the source instances too (PS3.3 C.7.6.1.1.5 / C.8.20.1): frames
    # without a Derivation Image reference still find their series, then their slice by position.
    listed = [
        uid
        for series in ds.get("ReferencedSeriesSequence") or []
        for item in series.get("ReferencedInstanceSequence") or []
        if (uid := tags.text(item, "ReferencedSOPInstanceUID"))
    ]
    geometries, found = referenced_series(path, [*(f.source_uid for f in frames if f.source_uid), *listed])
    if any(g.n_frames > 1 for g in geometries):
        # Frames of an enhanced multi-frame source are not one file per slice: use the SEG's own planes.
        log.info("%s references a multi-frame image; slices follow the SEG's own plane positions", path)
        geometries = []
    if geometries:
        by_uid = {g.sop_instance_uid: z for z, g in enumerate(geometries)}
        along, gap = slice_heights(geometries)
        where = []
        for k, frame in enumerate(frames):
            z = by_uid.get(frame.source_uid or "")
            if z is None and frame.position is not None:
                z = nearest_slice(along, gap, float(np.dot(frame.position, geometries[0].normal)))
            if z is None:
                folder = geometries[0].path.parent
                raise CorruptFile(
                    path, f"DICOM SEG frame {k + 1} lies on no slice of its referenced series ({folder})"
                )
            where.append(z)
        series: list[dict[str, Any]] = [
            {"sop_instance_uid": g.sop_instance_uid, "file": str(g.path)} for g in geometries
        ]
        return where, series, geometries
    # No referenced image in the tree: the SEG's own planes, ordered along the normal (else by first frame).
    iop = tags.orientation(ds, 0)
    own_normal = np.cross(np.asarray(iop[:3]), np.asarray(iop[3:])) if iop else None
    # A plane is its position (several frames of one multi-frame source share a UID), else its source image.
    keys: dict[Any, tuple[float, int, str | None]] = {}
    frame_keys = []
    for k, frame in enumerate(frames):
        key = tuple(round(v, 3) for v in frame.position) if frame.position else (frame.source_uid or k)
        frame_keys.append(key)
        if key not in keys:
            height = (
                float(np.dot(frame.position, own_normal))
                if frame.position and own_normal is not None
                else float(k)
            )
            keys[key] = (height, k, frame.source_uid)
    ordered = sorted(keys, key=lambda key: keys[key][:2])
    index = {key: z for z, key in enumerate(ordered)}
    slices: list[dict[str, Any]] = [{"sop_instance_uid": keys[key][2], "file": None} for key in ordered]
    if found.missing(uid for *_, uid in keys.values() if uid):
        log.debug("%s: referenced images not found under %s", path, found.root)
    return [index[key] for key in frame_keys], slices, []


def _foreground(path: Path, ds: Dataset, pixels: np.ndarray) -> np.ndarray:
    """Frames → boolean masks: BINARY as is, FRACTIONAL at half the maximum value (PS3.3 C.8.20.2.3)."""
    kind = (tags.text(ds, "SegmentationType") or "BINARY").upper()
    if kind == "FRACTIONAL":
        top = tags.first_float(ds.get("MaximumFractionalValue")) or float(np.iinfo(np.uint8).max)
        return np.asarray(pixels >= top / 2.0)
    if kind not in ("BINARY", "LABELMAP"):
        raise CorruptFile(path, f"DICOM SEG has an unknown SegmentationType {kind!r}")
    return np.asarray(pixels != 0)


@reports_damage
def read_seg(path: str | Path) -> MedImage:
    """Read a SEG as a label map: segment numbers as ids on the referenced slices.

    Overlapping segments keep the higher segment number (``header["overlap_pixels"]`` counts such pixels).

    Args:
        path: The SEG file.

    Returns:
        ``(Z, H, W)`` (or ``(H, W)`` for one slice) ``uint8`` ids (``uint16`` above 255); ``meta.header`` has
        ``classes`` (``{"0": "background", "<number>": label}``), ``segments``, ``slice_uids`` and
        ``slice_files`` (the referenced image of each slice; the file ``None`` when not found),
        ``segment_slices`` (``[first, last]`` runs of the slices each segment covers) and
        ``referenced_series_found``.

    Raises:
        CorruptFile: No SegmentSequence, frames naming no segment, truncated or undecodable pixel data.
        UnsupportedTransferSyntax: Compressed frames without a decoder.
    """
    path = Path(path)
    ds, _ = open_dataset(path)
    segments = segments_of(path, ds)
    frames = frames_of(path, ds, segments)
    rows, cols = int(ds.get("Rows") or 0), int(ds.get("Columns") or 0)
    if "PixelData" not in ds or not rows or not cols:
        raise CorruptFile(path, "DICOM SEG without pixel data (no frames to read)")
    check_size(path, (len(frames), rows, cols), "uint8")
    pixels = _decode(path, ds, None).reshape(len(frames), rows, cols)
    masks = _foreground(path, ds, pixels)
    where, slices, geometries = _layout(path, ds, frames)
    if geometries and (geometries[0].rows, geometries[0].columns) != (rows, cols):
        raise CorruptFile(
            path,
            f"DICOM SEG frames are {cols}x{rows} but the referenced images are "
            f"{geometries[0].columns}x{geometries[0].rows}",
        )
    top = max(s.number for s in segments)
    labels = np.zeros((len(slices), rows, cols), dtype=np.uint8 if top <= 255 else np.uint16)
    labelmap_values = (tags.text(ds, "SegmentationType") or "").upper() == "LABELMAP"
    overlap = 0
    for k in sorted(range(len(frames)), key=lambda k: frames[k].segment):
        z, number = where[k], frames[k].segment
        overlap += int(np.count_nonzero(masks[k] & (labels[z] != 0)))
        # Label Map Segmentation (PS3.3 C.8.20.2.13) stores the segment numbers as the pixel values.
        labels[z][masks[k]] = pixels[k][masks[k]] if labelmap_values else number
    covered: dict[int, list[int]] = {}
    for plane in np.flatnonzero(labels.reshape(len(slices), -1).any(axis=1)):
        for value in np.unique(labels[plane]):
            if value:
                covered.setdefault(int(value), []).append(int(plane))
    names = {s.number: s.label for s in segments}
    header: dict[str, Any] = tags.header_subset(ds)
    header.update(
        {
            "segmentation_type": tags.text(ds, "SegmentationType"),
            "classes": {"0": "background", **{str(n): label for n, label in sorted(names.items())}},
            "segments": [_segment_facts(s, frames) for s in segments],
            "slice_uids": [s["sop_instance_uid"] for s in slices][:2000],
            "slice_files": [s["file"] for s in slices][:2000],
            "segment_slices": {str(n): _runs(zs) for n, zs in sorted(covered.items())},
            "overlap_pixels": overlap,
            "referenced_series_found": bool(geometries),
        }
    )
    first = geometries[0] if geometries else None
    array = labels[0] if len(slices) == 1 else labels
    spacing = tags.pixel_spacing(ds) or (first.spacing if first else None)
    meta = Meta(
        format="dicom_seg",
        path=str(path),
        axes="YX" if array.ndim == 2 else "ZYX",
        spacing=None
        if spacing is None
        else (tuple(spacing) if array.ndim == 2 else (_gap(geometries, ds), *spacing)),
        origin=first.position if first else (frames[0].position if frames else None),
        direction=tags.direction_matrix(first.orientation if first else tags.orientation(ds, 0)),
        modality="SEG",
        photometric="MONOCHROME2",
        n_frames=len(frames),
        header=header,
    )
    return MedImage(array, meta)


def _runs(values: list[int]) -> list[list[int]]:
    """Sorted slice indices as ``[first, last]`` runs (bounded output for long volumes)."""
    runs: list[list[int]] = []
    for v in sorted(values):
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return runs


def _gap(geometries: list[SliceGeometry], ds: Dataset) -> float:
    if len(geometries) > 1:
        return slice_heights(geometries)[1] or 0.0
    return tags.slice_thickness(ds) or 1.0


def _segment_facts(segment: Segment, frames: list[Frame]) -> dict[str, Any]:
    return {**asdict(segment), "frames": sum(f.segment == segment.number for f in frames)}


@reports_damage
def summarize_seg(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: ``segments`` (number, label, category, type, frames), ``referenced_images`` (the
    first :data:`MAX_LISTED`, with the ``file`` found for each), counts, and the usual DICOM ``header``, from
    the headers; ``CorruptFile`` for no SegmentSequence or frames naming no segment.
    """
    from medio.dicom_refs import find_instances

    path = Path(path)
    ds, _ = open_dataset(path, stop_before_pixels=True)
    segments = segments_of(path, ds)
    frames = frames_of(path, ds, segments)
    uids = list(dict.fromkeys(f.source_uid for f in frames if f.source_uid))
    found = find_instances(path, uids)
    listed = [
        {"sop_instance_uid": u, "file": str(found.instances[u].path) if u in found.instances else None}
        for u in uids[:MAX_LISTED]
    ]
    n_frames = len(frames)
    return {
        "kind": "DICOM SEG (labelled segments on referenced slices; render gives the label map)",
        "shape": [n_frames, int(ds.get("Rows") or 0), int(ds.get("Columns") or 0)],
        "n_frames": n_frames,
        "modality": tags.text(ds, "Modality"),
        "segmentation_type": tags.text(ds, "SegmentationType"),
        "segments": [_segment_facts(s, frames) for s in segments[:MAX_LISTED]],
        "n_segments": len(segments),
        "classes": {"0": "background", **{str(s.number): s.label for s in segments[:MAX_LISTED]}},
        "referenced_images": listed,
        "n_referenced_images": len(uids),
        "n_referenced_images_found": sum(u in found.instances for u in uids),
        "header": tags.header_subset(ds),
    }

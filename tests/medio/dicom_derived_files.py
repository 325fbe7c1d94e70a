"""Writers of small DICOM files for the derived-object tests: a CT series and the SEG, RTSTRUCT and SR
objects that reference it, built element by element with pydicom (PS3.3 A.51, A.19, A.35)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.sequence import Sequence as DicomSequence
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

CT_IMAGE = "1.2.840.10008.5.1.4.1.1.2"
SEG_STORAGE = "1.2.840.10008.5.1.4.1.1.66.4"
RTSTRUCT_STORAGE = "1.2.840.10008.5.1.4.1.1.481.3"
COMPREHENSIVE_SR = "1.2.840.10008.5.1.4.1.1.88.33"

ROWS, COLUMNS = 16, 20
PIXEL_SPACING = (0.5, 0.8)  # (between rows, between columns) in mm
ORIGIN = (-10.0, -20.0, 0.0)
SLICE_GAP = 2.5


@dataclass
class Slice:
    """One written CT slice."""

    path: Path
    uid: str
    z: float


@dataclass
class CtSeries:
    """A written CT series (slices in position order) and its shared UIDs."""

    slices: list[Slice]
    study_uid: str
    series_uid: str
    frame_of_reference_uid: str


def _file(ds: Dataset, sop_class: str, path: Path) -> Path:
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = sop_class
    meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds.file_meta = meta
    ds.SOPClassUID = sop_class
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)
    return path


def _patient(ds: Dataset, series: CtSeries | None) -> None:
    ds.PatientID = "P-001"
    ds.StudyInstanceUID = series.study_uid if series else generate_uid()
    ds.SeriesInstanceUID = generate_uid()
    ds.SOPInstanceUID = generate_uid()
    if series is not None:
        ds.FrameOfReferenceUID = series.frame_of_reference_uid


def write_ct_series(folder: Path, n: int = 4, *, reverse_names: bool = True) -> CtSeries:
    """Write ``n`` axial CT slices ``folder/IM<k>.dcm`` (names in reverse z order when ``reverse_names``)."""
    series = CtSeries([], generate_uid(), generate_uid(), generate_uid())
    for k in range(n):
        ds = Dataset()
        ds.PatientID = "P-001"
        ds.StudyInstanceUID = series.study_uid
        ds.SeriesInstanceUID = series.series_uid
        ds.FrameOfReferenceUID = series.frame_of_reference_uid
        ds.SOPInstanceUID = generate_uid()
        ds.Modality = "CT"
        ds.InstanceNumber = k + 1
        z = ORIGIN[2] + k * SLICE_GAP
        ds.ImagePositionPatient = [ORIGIN[0], ORIGIN[1], z]
        ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
        ds.PixelSpacing = list(PIXEL_SPACING)
        ds.SliceThickness = SLICE_GAP
        ds.RescaleSlope, ds.RescaleIntercept = 1, -1024
        pixels = np.full((ROWS, COLUMNS), 1000 + 10 * k, dtype=np.uint16)
        ds.set_pixel_data(pixels, "MONOCHROME2", 16)
        name = f"IM{(n - 1 - k) if reverse_names else k}.dcm"
        path = _file(ds, CT_IMAGE, folder / name)
        series.slices.append(Slice(path, ds.SOPInstanceUID, z))
    return series


def _code(value: str, scheme: str, meaning: str) -> Dataset:
    item = Dataset()
    item.CodeValue, item.CodingSchemeDesignator, item.CodeMeaning = value, scheme, meaning
    return item


def write_seg(
    path: Path,
    series: CtSeries,
    frames: Sequence[tuple[int, int, np.ndarray]],
    *,
    labels: Mapping[int, str] | None = None,
    fractional: bool = False,
    with_segments: bool = True,
    truncate: bool = False,
    derivation: bool = True,
) -> Path:
    """Write a SEG whose frames are ``(segment_number, slice_index, mask)`` on the series' slices.

    BINARY frames are bit-packed (PS3.5 8.1.1, BitsAllocated 1); FRACTIONAL frames are 8-bit (255 = 1.0).
    Without ``derivation`` the frames name no source image; the series is listed in ReferencedSeriesSequence.
    """
    from pydicom.pixels import pack_bits

    ds = Dataset()
    _patient(ds, series)
    ds.Modality = "SEG"
    ds.SeriesDescription = "tumour segmentation"
    ds.SegmentationType = "FRACTIONAL" if fractional else "BINARY"
    labels = labels or {number: f"segment {number}" for number, _, _ in frames}
    if with_segments:
        segments = []
        for number, label in sorted(labels.items()):
            item = Dataset()
            item.SegmentNumber = number
            item.SegmentLabel = label
            item.SegmentAlgorithmType = "MANUAL"
            item.SegmentedPropertyCategoryCodeSequence = DicomSequence(
                [_code("49755003", "SCT", "Morphologically Altered Structure")]
            )
            item.SegmentedPropertyTypeCodeSequence = DicomSequence([_code("108369006", "SCT", label)])
            segments.append(item)
        ds.SegmentSequence = DicomSequence(segments)
    shared = Dataset()
    orientation = Dataset()
    orientation.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
    measures = Dataset()
    measures.PixelSpacing = list(PIXEL_SPACING)
    measures.SliceThickness = SLICE_GAP
    shared.PlaneOrientationSequence = DicomSequence([orientation])
    shared.PixelMeasuresSequence = DicomSequence([measures])
    ds.SharedFunctionalGroupsSequence = DicomSequence([shared])
    per_frame = []
    for number, index, _mask in frames:
        ref = series.slices[index]
        group = Dataset()
        ident = Dataset()
        ident.ReferencedSegmentNumber = number
        group.SegmentIdentificationSequence = DicomSequence([ident])
        source = Dataset()
        source.ReferencedSOPClassUID = CT_IMAGE
        source.ReferencedSOPInstanceUID = ref.uid
        derivation = Dataset()
        derivation.SourceImageSequence = DicomSequence([source])
        if derivation:
            group.DerivationImageSequence = DicomSequence([derivation])
        plane = Dataset()
        plane.ImagePositionPatient = [ORIGIN[0], ORIGIN[1], ref.z]
        group.PlanePositionSequence = DicomSequence([plane])
        per_frame.append(group)
    ds.PerFrameFunctionalGroupsSequence = DicomSequence(per_frame)
    instances = []
    for piece in series.slices:
        item = Dataset()
        item.ReferencedSOPClassUID = CT_IMAGE
        item.ReferencedSOPInstanceUID = piece.uid
        instances.append(item)
    referenced = Dataset()
    referenced.SeriesInstanceUID = series.series_uid
    referenced.ReferencedInstanceSequence = DicomSequence(instances)
    ds.ReferencedSeriesSequence = DicomSequence([referenced])
    ds.NumberOfFrames = len(frames)
    ds.Rows, ds.Columns = ROWS, COLUMNS
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.PixelRepresentation = 0
    stack = np.stack([m for _, _, m in frames])
    if fractional:
        ds.BitsAllocated = ds.BitsStored = 8
        ds.HighBit = 7
        ds.MaximumFractionalValue = 255
        ds.SegmentationFractionalType = "PROBABILITY"
        data = np.asarray(stack, dtype=np.uint8).tobytes()
    else:
        ds.BitsAllocated = ds.BitsStored = 1
        ds.HighBit = 0
        data = pack_bits(np.asarray(stack, dtype=np.uint8).ravel())
    if truncate:
        data = data[: len(data) // 3]
        data += b"\x00" * (len(data) % 2)
    ds.PixelData = data
    return _file(ds, SEG_STORAGE, path)


def write_rtstruct(
    path: Path,
    series: CtSeries,
    rois: Mapping[str, Sequence[tuple[int, Sequence[tuple[float, float]]]]],
    *,
    missing_image_uid: str | None = None,
    image_refs: bool = True,
) -> Path:
    """Write an RTSTRUCT with closed planar contours ``{roi_name: [(slice_index, [(x_mm, y_mm), ...])]}``.

    ``missing_image_uid`` makes the first contour reference an image that exists nowhere; without
    ``image_refs`` no image is named at all, only the series (the contours then lie at their z).
    """
    ds = Dataset()
    _patient(ds, series)
    ds.Modality = "RTSTRUCT"
    ds.StructureSetLabel = "contours"
    contour_images = []
    for piece in series.slices:
        item = Dataset()
        item.ReferencedSOPClassUID = CT_IMAGE
        item.ReferencedSOPInstanceUID = piece.uid
        contour_images.append(item)
    ref_series = Dataset()
    ref_series.SeriesInstanceUID = series.series_uid
    if image_refs:
        ref_series.ContourImageSequence = DicomSequence(contour_images)
    ref_study = Dataset()
    ref_study.ReferencedSOPInstanceUID = series.study_uid
    ref_study.RTReferencedSeriesSequence = DicomSequence([ref_series])
    frame_ref = Dataset()
    frame_ref.FrameOfReferenceUID = series.frame_of_reference_uid
    frame_ref.RTReferencedStudySequence = DicomSequence([ref_study])
    ds.ReferencedFrameOfReferenceSequence = DicomSequence([frame_ref])
    structure_set, roi_contours, observations = [], [], []
    first = True
    for number, (name, contours) in enumerate(rois.items(), start=1):
        roi = Dataset()
        roi.ROINumber = number
        roi.ROIName = name
        roi.ReferencedFrameOfReferenceUID = series.frame_of_reference_uid
        structure_set.append(roi)
        items = []
        for index, points in contours:
            piece = series.slices[index]
            contour = Dataset()
            image = Dataset()
            image.ReferencedSOPClassUID = CT_IMAGE
            image.ReferencedSOPInstanceUID = missing_image_uid if first and missing_image_uid else piece.uid
            first = False
            if image_refs:
                contour.ContourImageSequence = DicomSequence([image])
            contour.ContourGeometricType = "CLOSED_PLANAR"
            contour.NumberOfContourPoints = len(points)
            contour.ContourData = [v for x, y in points for v in (x, y, piece.z)]
            items.append(contour)
        roi_contour = Dataset()
        roi_contour.ReferencedROINumber = number
        roi_contour.ROIDisplayColor = [255, 0, 0]
        roi_contour.ContourSequence = DicomSequence(items)
        roi_contours.append(roi_contour)
        observation = Dataset()
        observation.ObservationNumber = number
        observation.ReferencedROINumber = number
        observation.RTROIInterpretedType = "ORGAN"
        observations.append(observation)
    ds.StructureSetROISequence = DicomSequence(structure_set)
    ds.ROIContourSequence = DicomSequence(roi_contours)
    ds.RTROIObservationsSequence = DicomSequence(observations)
    return _file(ds, RTSTRUCT_STORAGE, path)


def _content(relationship: str, value_type: str, concept: Dataset, **values: Any) -> Dataset:
    item = Dataset()
    item.RelationshipType = relationship
    item.ValueType = value_type
    item.ConceptNameCodeSequence = DicomSequence([concept])
    for keyword, value in values.items():
        setattr(item, keyword, value)
    return item


def write_sr(
    path: Path,
    image: Slice | None,
    *,
    box: tuple[float, float, float, float] = (4.0, 3.0, 6.0, 5.0),
    diameter_mm: float = 12.5,
    empty: bool = False,
    series: CtSeries | None = None,
    segmentation: Slice | None = None,
    in_3d: bool = False,
) -> Path:
    """Write a Comprehensive SR: a measurement group with a nodule diameter and a SCOORD box on ``image``.

    ``box`` is ``(x, y, w, h)`` in image pixels, written as a closed POLYLINE of (column, row) points (PS3.3
    C.18.6.1.2). ``empty`` writes a document without a content tree. ``segmentation`` (a SEG file and its
    UID) is referenced from the group the way TID 1411 does ("Referenced Segment"), without a region.
    ``in_3d`` draws the box as a SCOORD3D polygon in patient mm on ``image``'s plane, naming no image; the
    evidence sequence then lists the series (PS3.3 C.17.2.3).
    """
    ds = Dataset()
    _patient(ds, series)
    ds.Modality = "SR"
    ds.ValueType = "CONTAINER"
    ds.ContinuityOfContent = "SEPARATE"
    ds.ConceptNameCodeSequence = DicomSequence([_code("126000", "DCM", "Imaging Measurement Report")])
    ds.CompletionFlag = "COMPLETE"
    ds.VerificationFlag = "UNVERIFIED"
    if empty:
        return _file(ds, COMPREHENSIVE_SR, path)
    x, y, w, h = box
    polyline = [x, y, x + w, y, x + w, y + h, x, y + h, x, y]
    region = _content(
        "CONTAINS",
        "SCOORD",
        _code("111030", "DCM", "Image Region"),
        GraphicType="POLYLINE",
        GraphicData=polyline,
    )
    if in_3d and image is not None and series is not None:
        # Box corners in pixel-corner coordinates → mm (pixel centres are at +0.5).
        corners = [(x, y), (x + w, y), (x + w, y + h), (x, y + h), (x, y)]
        mm = [
            v
            for cx, cy in corners
            for v in (
                ORIGIN[0] + (cx - 0.5) * PIXEL_SPACING[1],
                ORIGIN[1] + (cy - 0.5) * PIXEL_SPACING[0],
                image.z,
            )
        ]
        region = _content(
            "CONTAINS",
            "SCOORD3D",
            _code("111030", "DCM", "Image Region"),
            GraphicType="POLYGON",
            GraphicData=mm,
            ReferencedFrameOfReferenceUID=series.frame_of_reference_uid,
        )
        listed = []
        for piece in series.slices:
            item = Dataset()
            item.ReferencedSOPClassUID = CT_IMAGE
            item.ReferencedSOPInstanceUID = piece.uid
            listed.append(item)
        ref_series = Dataset()
        ref_series.SeriesInstanceUID = series.series_uid
        ref_series.ReferencedSOPSequence = DicomSequence(listed)
        evidence = Dataset()
        evidence.StudyInstanceUID = series.study_uid
        evidence.ReferencedSeriesSequence = DicomSequence([ref_series])
        ds.CurrentRequestedProcedureEvidenceSequence = DicomSequence([evidence])
    elif image is not None:
        ref = Dataset()
        ref.ReferencedSOPClassUID = CT_IMAGE
        ref.ReferencedSOPInstanceUID = image.uid
        region.ContentSequence = DicomSequence(
            [
                _content(
                    "SELECTED FROM", "IMAGE", _code("260753009", "SCT", "Source"), ReferencedSOPSequence=[ref]
                )
            ]
        )
    units = _code("mm", "UCUM", "millimeter")
    measured = Dataset()
    measured.NumericValue = diameter_mm
    measured.MeasurementUnitsCodeSequence = DicomSequence([units])
    diameter = _content("CONTAINS", "NUM", _code("81827009", "SCT", "Diameter"))
    diameter.MeasuredValueSequence = DicomSequence([measured])
    group = _content(
        "CONTAINS",
        "CONTAINER",
        _code("125007", "DCM", "Measurement Group"),
        ContinuityOfContent="SEPARATE",
    )
    if segmentation is not None:
        ref = Dataset()
        ref.ReferencedSOPClassUID = SEG_STORAGE
        ref.ReferencedSOPInstanceUID = segmentation.uid
        ref.ReferencedSegmentNumber = 1
        region = _content(
            "CONTAINS", "IMAGE", _code("121191", "DCM", "Referenced Segment"), ReferencedSOPSequence=[ref]
        )
    group.ContentSequence = DicomSequence(
        [
            _content(
                "HAS OBS CONTEXT", "TEXT", _code("112039", "DCM", "Tracking Identifier"), TextValue="nodule 1"
            ),
            _content(
                "CONTAINS",
                "CODE",
                _code("121071", "DCM", "Finding"),
                ConceptCodeSequence=[_code("27925004", "SCT", "Nodule")],
            ),
            diameter,
            region,
        ]
    )
    ds.ContentSequence = DicomSequence([group])
    return _file(ds, COMPREHENSIVE_SR, path)

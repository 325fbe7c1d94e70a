"""What a realfiles dataset is: its catalogue entry, the samples its builder lists, and the builder registry.

A builder copies real files (from :mod:`testbed.realfiles.sources`) into ``<dataset>/data/`` in a layout of
its own, writes synthetic labels or masks beside them, and returns one :class:`RealSample` per manifest line.
Geometry (image size, slice, mask pixels) is never written by hand: :mod:`testbed.realfiles.suite`
derives it by reading every sample through ``medio``, so the ground truth follows the conventions the
scorer and the agents use.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.synth.spec import DatasetSpec, RegisteredDataset, register

__all__ = ["REGISTRY", "RealContext", "RealSample", "realfiles_dataset"]


@dataclass
class RealSample:
    """One manifest line of a realfiles dataset; all paths are relative to the dataset root.

    Args:
        manifest_path: The path the manifest lists (``data/...``).
        subject_id: The id a reader of the folder can find (DICOM PatientID, folder name, table key).
        label: Class index into ``DatasetSpec.classes`` (classification).
        read_path: What ``medio.read`` opens when it differs from the manifest path (a series folder).
        read: Extra ``medio.read`` keyword arguments (``frame``, ``volume``).
        mask_path: Label volume/image of a segmentation sample (same grid as the image).
        modality: Per-sample modality when it differs from the dataset's.
        extra: Additional ``expected_extra`` entries (``label_file``, ``mask_file``, ...).
        oracle_extra: Keys a perfect answer adds to identify the sample (source gate).
        source_stem: Ground-truth ``source_stem`` override (when the file name does not identify the sample).
        origin: Where the bytes came from (package and file), for the provenance table.
        expected_failure: Why the sample cannot be decoded (``None`` for a decodable sample). Such a sample
            stays in the manifest but not in the ground truth: the expected behaviour is "no output".
    """

    manifest_path: str
    subject_id: str
    label: int | None = None
    read_path: str | None = None
    read: dict[str, Any] = field(default_factory=dict)
    mask_path: str | None = None
    modality: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    oracle_extra: dict[str, Any] = field(default_factory=dict)
    source_stem: str | None = None
    origin: str = ""
    expected_failure: str | None = None

    @classmethod
    def with_mask(cls, manifest_path: str, subject_id: str, mask_path: str, origin: str) -> RealSample:
        """A segmentation sample whose label map ``mask_path`` is its ``label_file`` and ``mask_file``."""
        extra = {"label_file": mask_path, "mask_file": mask_path}
        return cls(manifest_path, subject_id, mask_path=mask_path, extra=extra, origin=origin)


@dataclass
class RealContext:
    """What a builder gets: the dataset folder and helpers that copy real files into it.

    Args:
        root: The dataset folder (``<OUT>/<name>``); files go under ``root / "data"``.
    """

    root: Path
    copied: list[tuple[str, str]] = field(default_factory=list)

    def path(self, rel: str) -> Path:
        """Absolute path of ``rel`` (``data/...``) with its parent folders created."""
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def copy(self, src: Path, rel: str) -> str:
        """Copy ``src`` byte for byte to ``rel``; returns ``rel``."""
        shutil.copyfile(src, self.path(rel))
        self.copied.append((rel, str(src)))
        return rel

    def copy_dicom_unless(self, failure: str | None, src: Path, rel: str, patient_id: str) -> str:
        """`copy_dicom`, or `copy` for a file expected to fail: a damaged file is not rewritten."""
        return self.copy(src, rel) if failure else self.copy_dicom(src, rel, patient_id)

    def write_table(self, rel: str, rows: Sequence[Sequence[str]], sep: str = ",") -> None:
        """Write ``rows`` as a UTF-8 text table, one line per row, cells joined by ``sep``."""
        self.path(rel).write_text("".join(sep.join(r) + "\n" for r in rows), encoding="utf-8")

    def copy_dicom(self, src: Path, rel: str, patient_id: str, **tags: Any) -> str:
        """Copy a DICOM file, setting PatientID/PatientName (and ``tags``) to agree with the layout.

        Study, series and instance UIDs are replaced by reproducible ones. The pixel data element is written
        back unchanged in the file's own transfer syntax (checked), so the pixels stay the original's; only
        identifying header fields change.

        Args:
            src: The real file.
            rel: Destination (``data/...``).
            patient_id: PatientID and PatientName to write.
            **tags: Other top-level keywords to set (e.g. ``PhotometricInterpretation``).

        Returns:
            ``rel``.

        Raises:
            RuntimeError: The rewritten file's pixel data differs from the source's.
        """
        import pydicom
        from pydicom.uid import generate_uid

        ds = pydicom.dcmread(src)
        before = ds.get("PixelData")
        ds.PatientID = patient_id
        ds.PatientName = patient_id
        # pydicom's test files were derived from a few originals and share study/series UIDs; two patients
        # never share a series, so each copy gets its own UIDs (derived from the destination: reproducible).
        for keyword in ("StudyInstanceUID", "SeriesInstanceUID", "SOPInstanceUID"):
            if keyword in ds:
                setattr(ds, keyword, generate_uid(entropy_srcs=[keyword, patient_id, rel]))
        if "SOPInstanceUID" in ds and "MediaStorageSOPInstanceUID" in ds.file_meta:
            ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        for keyword, value in tags.items():
            setattr(ds, keyword, value)
        buf = io.BytesIO()
        ds.save_as(buf)
        if pydicom.dcmread(io.BytesIO(buf.getvalue())).get("PixelData") != before:
            raise RuntimeError(f"rewriting the header of {src} changed its pixel data")
        self.path(rel).write_bytes(buf.getvalue())
        self.copied.append((rel, str(src)))
        return rel


RealBuilder = Callable[[RealContext], list[RealSample]]


REGISTRY: dict[str, RegisteredDataset[RealBuilder]] = {}


def realfiles_dataset(spec: DatasetSpec) -> Callable[[RealBuilder], RealBuilder]:
    """Register ``spec`` with the decorated builder in the realfiles suite (``synth.spec.register``).

    Raises:
        ValueError: When a dataset of that name is already registered.
    """
    return register(REGISTRY, spec, "realfiles dataset")

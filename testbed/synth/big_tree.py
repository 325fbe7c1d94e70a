"""A dataset of real size: N small DICOM files in a four-level patient / study / series / instance tree.

One real MDS-Bench dataset holds 18,658 DICOM files under such a tree (issue 30); this builder writes one of
any size, so the time and memory an agent spends on the folder, not on the samples, can be measured:

    data/BrainMR/<PatientID>/<StudyDate>-<StudyDescription>-<n>/<SeriesNumber>.000000-<SeriesDescription>-<n>/
        1-<InstanceNumber>.dcm

(the layout the NBIA Data Retriever writes for TCIA collections), plus ``clinical.csv`` (the label table,
joined by PatientID, with empty cells as exported) and a ``README.txt``. Each patient has two studies
(baseline, follow-up) of four MR series (T1, T2, FLAIR, DWI); the instances of a series are the slices of
one small phantom volume. The manifest lists a few dozen samples: the middle FLAIR slice of the baseline study
of evenly spread patients, labelled ``control`` or ``lesion`` by the table.

Writing 20,000 files through pydicom one data set at a time takes minutes on a loaded machine, so each series
is written once by pydicom as a template and its instances are byte copies with the per-instance values
(SOP Instance UID, Instance Number, Image Position, Slice Location, pixels) patched in place at the offsets
pydicom reports; every value is written at a fixed width (leading zeros are valid in IS and DS, PS3.5 §6.2),
so every file stays a valid Explicit VR Little Endian Part-10 file.

    medstrat synth OUT --files 20000 [--samples 24]
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pydicom
from pydicom.dataelem import RawDataElement
from pydicom.tag import BaseTag, Tag
from pydicom.uid import UID

from testbed.synth import phantoms as ph
from testbed.synth import write_dicom as dcm
from testbed.synth.spec import BuildContext, DatasetSpec, SynthSample
from testbed.synth.suite import BuiltDataset, write_dataset

__all__ = ["BIG_TREE", "DEFAULT_FILES", "DEFAULT_SAMPLES", "build_big_tree"]

DEFAULT_FILES = 20_000
DEFAULT_SAMPLES = 24
#: Files per patient when the tree is large: 2 studies x 4 series x 50 slices.
_FILES_PER_PATIENT = 400
_SIZE = 32
_SERIES = (("T1 SE", 3.0), ("T2 TSE", 3.0), ("FLAIR", 3.0), ("DWI b1000", 5.0))
_STUDIES = (("20190314", "MR BRAIN BASELINE"), ("20200412", "MR BRAIN FOLLOW-UP"))
_MANIFEST_SERIES = 2  # FLAIR
_SOP_UID = Tag(0x0008, 0x0018)
_MEDIA_SOP_UID = Tag(0x0002, 0x0003)
_INSTANCE = Tag(0x0020, 0x0013)
_POSITION = Tag(0x0020, 0x0032)
_LOCATION = Tag(0x0020, 0x1041)
_PIXELS = Tag(0x7FE0, 0x0010)

BIG_TREE = DatasetSpec(
    name="synth-big-dicom-tree",
    fmt="DICOM tree",
    task="classification",
    dimension="3D",
    modality="MR",
    layout="BrainMR/<patient>/<study>/<series>/1-NNN.dcm (four levels, NBIA); clinical.csv by PatientID",
    traps=(
        "tens of thousands of files",
        "every series names its slices 1-001.dcm ...",
        "label table with empty cells",
    ),
    classes=("control", "lesion"),
    anatomy="Brain (Head)",
    leaf_task="brain_lesion_classification",
)


def build_big_tree(
    out: str | Path, *, files: int = DEFAULT_FILES, samples: int = DEFAULT_SAMPLES, seed: int = 0
) -> BuiltDataset:
    """Write `BIG_TREE` with ``files`` DICOM files and ``samples`` manifest lines under ``out``.

    Args:
        out: Benchmark root; the dataset goes to ``out/synth-big-dicom-tree``.
        files: DICOM files in the tree (exactly; at least 8 per manifest sample).
        samples: Manifest samples (one patient each).
        seed: Seed of the phantoms and labels (same seed, same bytes).

    Returns:
        The built dataset.

    Raises:
        ValueError: ``samples`` is below 1 or ``files`` below ``8 * samples``.
    """
    if samples < 1 or files < 8 * samples:
        raise ValueError(f"--files must be at least 8 per sample (got {files} files for {samples} samples)")
    patients = max(samples, round(files / _FILES_PER_PATIENT))

    def build(ctx: BuildContext) -> list[SynthSample]:
        return _write_tree(ctx, files, patients)

    return write_dataset(Path(out), BIG_TREE, build, samples, seed)


def _write_tree(ctx: BuildContext, files: int, patients: int) -> list[SynthSample]:
    n_series = patients * len(_STUDIES) * len(_SERIES)
    base, extra = divmod(files, n_series)
    labels = ctx.rng.integers(0, 2, patients)
    chosen = {round(k * patients / ctx.n) for k in range(ctx.n)}
    rows = ["PatientID,Age,Sex,Group,Notes"]
    samples: list[SynthSample] = []
    series_no = 0
    for p in range(patients):
        pid = f"BRAINMR-{p + 1:04d}"
        group = BIG_TREE.classes[int(labels[p])]
        age = "" if p % 7 == 3 else str(30 + (p * 13) % 45)  # exports leave unknown ages empty
        rows.append(f"{pid},{age},{'FM'[p % 2]},{group},{'follow-up' if p % 5 == 0 else ''}")
        for s, (date, description) in enumerate(_STUDIES):
            # NBIA names a study folder MM-DD-YYYY-<description>-<short id>.
            tag = description.replace(" ", "")
            study = f"data/BrainMR/{pid}/{date[4:6]}-{date[6:]}-{date[:4]}-{tag}-{31 + p}"
            for r, (series_name, thickness) in enumerate(_SERIES):
                count = base + (1 if series_no < extra else 0)
                series_no += 1
                number = 100 * (s + 1) + r + 1
                folder = ctx.path(
                    f"{study}/{number}.000000-{series_name.replace(' ', '_')}-{series_no % 97}/x"
                )
                lesion = group == "lesion" and series_name == "FLAIR"
                volume = _phantom(ctx.rng, count, lesion)
                series = _Series(pid, date, description, f"{pid}:{date}:{r}", series_name, number, thickness)
                _write_series(folder.parent, volume, series)
                if p in chosen and s == 0 and r == _MANIFEST_SERIES:
                    # The manifest names one slice of the series (the series is the sample, as in the
                    # bundled CT series); its stem 1-NNN recurs in every series, and the reference's greedy
                    # matching in index order still pairs each sample with its own annotation.
                    series_rel = folder.parent.relative_to(ctx.root).as_posix()
                    samples.append(
                        SynthSample.stack(
                            f"{series_rel}/1-{count // 2 + 1:03d}.dcm",
                            pid,
                            (count, _SIZE, _SIZE),
                            read_path=series_rel,
                            label=int(labels[p]),
                            oracle_extra={"case_id": pid, "source_sample_dir": series_rel},
                            spacing=(7.5, 7.5, thickness),
                        )
                    )
    (ctx.data / "BrainMR" / "clinical.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (ctx.data / "README.txt").write_text(
        "# Brain MR follow-up collection\n\nOne folder per patient, then study, series and slice files.\n"
        "clinical.csv: Group is control or lesion (FLAIR hyperintensities).\n",
        encoding="utf-8",
    )
    return samples


def _phantom(rng: np.random.Generator, depth: int, lesion: bool) -> np.ndarray:
    """``(depth, 32, 32)`` uint16 slices of a head: an ellipse of brain, a bright spot on lesion FLAIRs."""
    head = ph.ellipse((_SIZE, _SIZE), (_SIZE / 2, _SIZE / 2), (_SIZE * 0.42, _SIZE * 0.36)).astype(np.float64)
    z = np.linspace(-1.0, 1.0, depth)[:, None, None]
    vol = head[None] * (600.0 + 300.0 * np.sqrt(np.clip(1.0 - z**2, 0.0, 1.0)))
    if lesion:
        spot = ph.ellipse((_SIZE, _SIZE), (_SIZE * 0.4, _SIZE * 0.6), (3.0, 3.0))
        vol = vol + spot[None] * 500.0
    vol += rng.normal(0.0, 15.0, vol.shape)
    return np.asarray(np.clip(np.rint(vol), 0, 4095), dtype=np.uint16)


@dataclass(frozen=True)
class _Series:
    """What the headers of one series say (its instances differ only in the patched values)."""

    pid: str
    study_date: str
    study_description: str
    key: str
    description: str
    number: int
    thickness: float


def _write_series(folder: Path, volume: np.ndarray, series: _Series) -> None:
    """One series: a pydicom template, then one patched byte copy per slice (module docstring)."""
    template, where = _template(volume.shape[1:], series)
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(volume.shape[0]):
        blob = bytearray(template)
        instance_uid = _instance_uid(series.key, k + 1)
        z = _ds(k * series.thickness - volume.shape[0] * series.thickness / 2)
        for tag, value in (
            (_MEDIA_SOP_UID, instance_uid),
            (_SOP_UID, instance_uid),
            (_INSTANCE, f"{k + 1:06d}".encode()),
            (_POSITION, b"-0060.000\\-0060.000\\" + z),
            (_LOCATION, z),
            (_PIXELS, volume[k].tobytes()),
        ):
            start, length = where[tag]
            if len(value) != length:  # a broken fixed width would silently corrupt the file
                raise RuntimeError(f"{tag}: {len(value)} bytes for a {length}-byte value")
            blob[start : start + length] = value
        (folder / f"1-{k + 1:03d}.dcm").write_bytes(blob)


def _instance_uid(series_key: str, k: int) -> bytes:
    # Fixed width: the instance number is offset to six digits; a UID is NUL-padded to even length
    # (PS3.5 §9.1).
    uid = f"{dcm.uid(series_key)}.{100000 + k}"
    return (uid + "\0" * (len(uid) % 2)).encode()


def _ds(value: float) -> bytes:
    """A fixed-width (10-byte, even) Decimal String: sign, zero-padded digits, three decimals."""
    return f"{value:+010.3f}".encode()


def _template(shape: tuple[int, ...], series: _Series) -> tuple[bytes, dict[BaseTag, tuple[int, int]]]:
    """The first slice's bytes and, per patched element, ``(value offset, value length)``."""
    ds = dcm._base(series.pid, "MR", f"{series.pid}:{series.study_date}", series.key, f"{series.key}:1")
    uid = UID(_instance_uid(series.key, 1).rstrip(b"\0").decode())
    ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID = uid
    ds.StudyDate = ds.ContentDate = series.study_date
    ds.PatientAge, ds.BodyPartExamined = "045Y", "BRAIN"
    ds.StudyDescription = series.study_description
    ds.SeriesDescription, ds.SeriesNumber = series.description, series.number
    ds.ProtocolName = f"BRAIN {series.description}"
    ds.InstanceNumber = "000001"
    ds.ImagePositionPatient = ["-0060.000", "-0060.000", _ds(0.0).decode()]
    ds.ImageOrientationPatient = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    ds.SliceLocation = _ds(0.0).decode()
    ds.SliceThickness = series.thickness
    ds.PixelSpacing = [7.5, 7.5]
    ds.MagneticFieldStrength = 3.0
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.Rows, ds.Columns = int(shape[0]), int(shape[1])
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    ds.PixelData = bytes(2 * int(shape[0]) * int(shape[1]))
    buffer = io.BytesIO()
    ds.save_as(buffer, enforce_file_format=True)
    blob = buffer.getvalue()
    parsed = pydicom.dcmread(io.BytesIO(blob))
    where = {tag: _value_span(parsed, tag) for tag in (_SOP_UID, _INSTANCE, _POSITION, _LOCATION, _PIXELS)}
    where[_MEDIA_SOP_UID] = _value_span(parsed.file_meta, _MEDIA_SOP_UID)
    return blob, where


def _value_span(ds: pydicom.Dataset, tag: BaseTag) -> tuple[int, int]:
    raw = ds.get_item(tag)
    if not isinstance(raw, RawDataElement):  # an element pydicom already converted has lost its offset
        raise RuntimeError(f"no file offset for {tag}")
    return int(raw.value_tell), int(raw.length)

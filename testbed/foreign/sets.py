"""The foreign suite's datasets: pixels from scikit-image's and matplotlib's bundled sample data, laid out the
way imaging communities lay out their data (nnU-Net raw folders, BIDS and BIDS-derivatives, per-patient DICOM
trees, parallel mask trees, label tables keyed by paths, UIDs or participant + session).

These were written after the rules baseline's general rules, from the communities' published conventions
(nnU-Net's ``dataset.json``, the BIDS specification's ``dataset_description.json``, ``participants.tsv`` and
``*_dseg.tsv``, DICOM PS3.3's identifiers), never from what the baseline happens to read. Labels and masks are
ours (derived from the real pixels by thresholds); every volume or tile is cut from the real images.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from testbed.foreign.sources import matplotlib_mri_slice, skimage_image
from testbed.realfiles.spec import RealContext, RealSample
from testbed.synth.spec import DatasetSpec, RegisteredDataset, register
from testbed.synth.write_dicom import write_image
from testbed.synth.write_files import write_nifti, write_pillow, write_tiff

__all__ = ["FOREIGN_REGISTRY", "FOREIGN_TITLES", "foreign_dataset"]

ForeignBuilder = Callable[[RealContext], list[RealSample]]

FOREIGN_REGISTRY: dict[str, RegisteredDataset[ForeignBuilder]] = {}
#: The dataset name the documentation gives (README title, dataset.json, dataset_description.json); the
#: ground truth's ``dataset_name`` (the folder id when the documentation names none).
FOREIGN_TITLES: dict[str, str] = {}


def foreign_dataset(
    spec: DatasetSpec, title: str | None = None
) -> Callable[[ForeignBuilder], ForeignBuilder]:
    """Register a foreign dataset; ``title`` is the name its documentation gives it (None: the folder id)."""
    FOREIGN_TITLES[spec.name] = title or spec.name
    return register(FOREIGN_REGISTRY, spec, "foreign dataset")


@dataclass(frozen=True)
class _Tile:
    row: int
    col: int
    size: int


def _grey(pixels: np.ndarray) -> np.ndarray:
    if pixels.ndim == 3:
        return np.asarray(pixels[..., :3].astype(np.float64) @ [0.299, 0.587, 0.114], dtype=np.float64)
    return pixels.astype(np.float64)


def _crop(pixels: np.ndarray, tile: _Tile) -> np.ndarray:
    y, x = tile.row * tile.size, tile.col * tile.size
    return np.ascontiguousarray(pixels[y : y + tile.size, x : x + tile.size])


def _text(ctx: RealContext, rel: str, text: str, encoding: str = "utf-8") -> str:
    ctx.path(rel).write_bytes(text.encode(encoding))
    return rel


def _json(ctx: RealContext, rel: str, doc: object) -> str:
    return _text(ctx, rel, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------------------------------- nnU-Net
@foreign_dataset(
    DatasetSpec(
        name="fx-fundus-nnunet",
        fmt="PNG (nnU-Net raw)",
        task="segmentation",
        dimension="2D",
        modality="Fundus",
        layout="nnU-Net raw: DatasetXXX_Name/imagesTr/<case>_0000.png + labelsTr/<case>.png + dataset.json",
        traps=(
            "channel suffix _0000 on the images only (the label has the bare case id)",
            "dataset.json names the dataset and its labels ({'background': 0, 'vessel': 1})",
            "imagesTs/ cases without labels beside the training cases",
        ),
        classes=("background", "vessel"),
        anatomy="Retina (Eye)",
        leaf_task="retina_segmentation",
    ),
    title="Retina Vessel Tiles",
)
def fundus_nnunet(ctx: RealContext) -> list[RealSample]:
    """Tiles of scikit-image's fundus photograph, vessels = the darkest quarter of the field of view."""
    rgb, origin = skimage_image("retina.jpg")
    green = rgb[..., 1]
    base = "data/Dataset042_RetinaVessel"
    tiles = [_Tile(2, 2, 192), _Tile(2, 4, 192), _Tile(3, 3, 192), _Tile(4, 2, 192), _Tile(4, 4, 192)]
    samples = []
    for i, tile in enumerate(tiles):
        case = f"retina_{i:03d}"
        img = _crop(green, tile)
        fov = img > 20
        mask = (fov & (img < np.percentile(img[fov], 25))).astype(np.uint8)
        rel = f"{base}/imagesTr/{case}_0000.png"
        mask_rel = f"{base}/labelsTr/{case}.png"
        write_pillow(ctx.path(rel), img)
        write_pillow(ctx.path(mask_rel), mask)
        samples.append(RealSample.with_mask(rel, case, mask_rel, origin))
    for i, tile in enumerate([_Tile(3, 2, 192), _Tile(3, 4, 192)]):
        write_pillow(ctx.path(f"{base}/imagesTs/retina_{100 + i:03d}_0000.png"), _crop(green, tile))
    _json(
        ctx,
        f"{base}/dataset.json",
        {
            "name": "Retina Vessel Tiles",
            "description": "Green-channel fundus tiles with vessel label maps",
            "channel_names": {"0": "fundus"},
            "labels": {"background": 0, "vessel": 1},
            "numTraining": len(samples),
            "file_ending": ".png",
        },
    )
    return samples


# ------------------------------------------------------------------------------------ parallel mask tree
@foreign_dataset(
    DatasetSpec(
        name="fx-ihc-parallel-masks",
        fmt="TIFF (RGB) + PNG masks",
        task="segmentation",
        dimension="2D",
        modality="Histopathology",
        layout="slides/<slide>/tile_rR_cC.tif with a parallel masks/<slide>/ tree of the same file names",
        traps=(
            "tile names share their digits (tile_r0_c1 / tile_r1_c0): only the exact stem pairs a mask",
            "README title names the dataset; README legend gives the mask values",
        ),
        classes=("background", "stained nucleus"),
        anatomy="Cell (Microscopic)",
        leaf_task="cell_segmentation",
    ),
    title="IHC Nuclei Tiles",
)
def ihc_parallel_masks(ctx: RealContext) -> list[RealSample]:
    """Tiles of scikit-image's immunohistochemistry image; masks = DAB-brown pixels."""
    rgb, origin = skimage_image("ihc.png")
    samples = []
    for slide, offset in (("S01", 0), ("S02", 2)):
        for r, c in ((0, 0), (0, 1), (1, 0)):
            tile = _Tile(r + offset, c + offset, 128)
            img = _crop(rgb, tile)
            f = img.astype(np.int16)
            mask = ((f[..., 0] - f[..., 2] > 15) & (_grey(img) < 170)).astype(np.uint8)
            name = f"tile_r{r}_c{c}"
            rel = f"data/slides/{slide}/{name}.tif"
            mask_rel = f"data/masks/{slide}/{name}.png"
            write_tiff(ctx.path(rel), img)
            write_pillow(ctx.path(mask_rel), mask)
            samples.append(RealSample.with_mask(rel, slide, mask_rel, origin))
    _text(
        ctx,
        "data/README.md",
        "# IHC Nuclei Tiles\n\n"
        "Immunohistochemistry (DAB) histology tiles cut from two slide scans, saved as TIFF.\n"
        "masks/ mirrors slides/: each tile's mask has the tile's own file name (PNG).\n"
        "Mask values: 0 = background, 1 = stained nucleus.\n",
    )
    return samples


# ---------------------------------------------------------------------------------------------- NRRD exports
def _mri_variant(k: int) -> np.ndarray:
    slice_, _ = matplotlib_mri_slice()
    out = np.rot90(slice_, k % 4)
    return np.ascontiguousarray(out[:, ::-1] if k >= 4 else out)


_NRRD_DATE = re.compile(rb"# on \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\(GMT\)\.\n")


def _fix_nrrd_date(path: Path) -> None:
    """pynrrd stamps the wall-clock time in a header comment; a fixed one keeps the bytes reproducible."""
    raw = path.read_bytes()
    head, sep, rest = raw.partition(b"\n\n")
    path.write_bytes(
        _NRRD_DATE.sub(b"# on 1970-01-01 00:00:00(GMT).\n", head + b"\n", count=1)[:-1] + sep + rest
    )


@foreign_dataset(
    DatasetSpec(
        name="fx-mri-nrrd-exports",
        fmt="NRRD (bzip2, gzip, detached .nhdr)",
        task="classification",
        dimension="2D",
        modality="MRI",
        layout="exports/<station>/ files; labels.json keyed by the path relative to data/",
        traps=(
            "bzip2 NRRD (SimpleITK's NrrdIO has no bzip2)",
            "detached .nhdr headers with .raw.gz / .raw.bz2 data files beside them",
            "station folders without digits look like class folders",
            "labels keyed by the path relative to data/, named in the README",
            "the subject is in a participant column of the label table",
        ),
        classes=("clean", "motion artifact"),
        anatomy="Brain (Head)",
        leaf_task="brain_classification",
    ),
    title="Brain MRI NRRD Exports",
)
def mri_nrrd_exports(ctx: RealContext) -> list[RealSample]:
    """matplotlib's MR slice, rotated/flipped, written as NRRD in the encodings a viewer exports."""
    import nrrd

    plan = [
        ("stationA", "scan_a.nrrd", "bzip2", False, 0),
        ("stationA", "scan_b.nhdr", "gzip", True, 1),
        ("stationB", "scan_c.nrrd", "bzip2", False, 0),
        ("stationB", "scan_d.nhdr", "bzip2", True, 1),
        ("stationB", "scan_e.nrrd", "gzip", False, 1),
        ("stationA", "scan_f.nrrd", "bzip2", False, 0),
    ]
    labels: dict[str, dict[str, str]] = {}
    samples = []
    for i, (station, name, encoding, detached, label) in enumerate(plan):
        rel = f"data/exports/{station}/{name}"
        header = {"encoding": encoding, "spacings": [0.9, 0.9]}
        nrrd.write(str(ctx.path(rel)), _mri_variant(i), header, detached_header=detached, index_order="C")
        _fix_nrrd_date(ctx.path(rel))
        participant = f"P{i // 2 + 1:02d}"
        labels[rel[len("data/") :]] = {
            "label": ("clean", "motion artifact")[label],
            "participant_id": participant,
        }
        samples.append(
            RealSample(rel, participant, label=label, origin="matplotlib:sample_data/s1045.ima.gz")
        )
    _json(ctx, "data/labels.json", labels)
    _text(
        ctx,
        "data/README.txt",
        "Brain MRI NRRD Exports\n======================\n\n"
        "Axial MR slices exported from two viewer stations as NRRD (bzip2-compressed, or a detached .nhdr\n"
        "header beside its data file).\n"
        "Labels: labels.json maps each file's path (relative to data/) to its label.\n",
    )
    return samples


# ---------------------------------------------------------------------------------------------- BIDS
def _volume(k: int, z: int, size: int, t: int = 1) -> np.ndarray:
    """A (T, Z, Y, X) stack of crops of the MR slice (each slice a shifted window of the real pixels)."""
    slice_, _ = matplotlib_mri_slice()
    vols = []
    for tt in range(t):
        vol = [
            slice_[40 + 6 * zz + 2 * k : 40 + 6 * zz + 2 * k + size, 50 + 3 * tt : 50 + 3 * tt + size]
            for zz in range(z)
        ]
        vols.append(np.stack(vol).astype(np.int16))
    return np.stack(vols)


@foreign_dataset(
    DatasetSpec(
        name="fx-bids-func-4d",
        fmt="NIfTI 4D (BIDS func)",
        task="classification",
        dimension="3D",
        modality="MRI",
        layout="BIDS: sub-XX/ses-Y/func/*_bold.nii.gz + sidecars; phenotype table by participant + session",
        traps=(
            "4D volumes with JSON sidecars (the sample is volume 0, middle slice): not segmentation",
            "the label depends on participant and session (phenotype/diagnosis.tsv), not on a folder",
            "dataset_description.json names the dataset",
        ),
        classes=("stable", "progressed"),
        anatomy="Brain (Head)",
        leaf_task="brain_classification",
    ),
    title="Resting State Pilot",
)
def bids_func_4d(ctx: RealContext) -> list[RealSample]:
    """Short 4D runs cut from matplotlib's MR slice in a BIDS tree with sessions."""
    visits = [("01", "1", 0), ("01", "2", 1), ("02", "1", 0), ("02", "2", 0), ("03", "1", 1)]
    rows = ["participant_id\tsession_id\tdiagnosis"]
    samples = []
    for k, (sub, ses, label) in enumerate(visits):
        stem = f"sub-{sub}_ses-{ses}_task-rest_bold"
        rel = f"data/sub-{sub}/ses-{ses}/func/{stem}.nii.gz"
        write_nifti(ctx.path(rel), _volume(k, 5, 64, t=3), (3.0, 3.0, 4.0, 2.0))
        _json(ctx, rel.replace(".nii.gz", ".json"), {"RepetitionTime": 2.0, "TaskName": "rest"})
        rows.append(f"sub-{sub}\tses-{ses}\t{('stable', 'progressed')[label]}")
        samples.append(
            RealSample(rel, f"sub-{sub}", label=label, origin="matplotlib:sample_data/s1045.ima.gz")
        )
    _text(
        ctx,
        "data/participants.tsv",
        "participant_id\tage\n" + "".join(f"sub-0{i}\t{30 + i}\n" for i in (1, 2, 3)),
    )
    _text(ctx, "data/phenotype/diagnosis.tsv", "\n".join(rows) + "\n")
    _json(ctx, "data/dataset_description.json", {"Name": "Resting State Pilot", "BIDSVersion": "1.8.0"})
    _text(
        ctx,
        "data/README",
        "Pilot resting-state runs. Diagnoses per participant and session: phenotype/diagnosis.tsv\n",
    )
    return samples


@foreign_dataset(
    DatasetSpec(
        name="fx-bids-derivatives-dseg",
        fmt="NIfTI (BIDS + derivatives)",
        task="segmentation",
        dimension="3D",
        modality="MRI",
        layout="BIDS: sub-XX/anat/*_T1w.nii.gz; derivatives/<pipeline>/sub-XX/anat/*_dseg.nii.gz + dseg.tsv",
        traps=(
            "label volumes named by the BIDS _dseg suffix in a derivatives tree (no 'mask'/'label' word)",
            "class names in dseg.tsv (index / name), one of them non-ASCII",
            "two dataset_description.json files: the raw one names the dataset, the derivative's a pipeline",
        ),
        classes=("background", "matière grise", "matière blanche"),
        anatomy="Brain (Head)",
        leaf_task="brain_segmentation",
    ),
    title="Tissue Classes Pilot",
)
def bids_derivatives_dseg(ctx: RealContext) -> list[RealSample]:
    """T1w volumes cut from matplotlib's MR slice, tissue classes by intensity thresholds."""
    samples = []
    for k in range(4):
        sub = f"sub-{k + 1:02d}"
        vol = _volume(k, 6, 96)[0]
        rel = f"data/{sub}/anat/{sub}_T1w.nii.gz"
        write_nifti(ctx.path(rel), vol, (1.0, 1.0, 3.0))
        lo, hi = np.percentile(vol, [45, 80])
        seg = np.where(vol > hi, 2, np.where(vol > lo, 1, 0)).astype(np.uint8)
        mask_rel = f"data/derivatives/tissue/{sub}/anat/{sub}_dseg.nii.gz"
        write_nifti(ctx.path(mask_rel), seg, (1.0, 1.0, 3.0))
        samples.append(RealSample.with_mask(rel, sub, mask_rel, "matplotlib:sample_data/s1045.ima.gz"))
    _text(
        ctx,
        "data/derivatives/tissue/dseg.tsv",
        "index\tname\tabbreviation\n1\tmatière grise\tGM\n2\tmatière blanche\tWM\n",
    )
    _json(
        ctx,
        "data/derivatives/tissue/dataset_description.json",
        {"Name": "tissue", "DatasetType": "derivative", "GeneratedBy": [{"Name": "threshold"}]},
    )
    _json(ctx, "data/dataset_description.json", {"Name": "Tissue Classes Pilot", "BIDSVersion": "1.8.0"})
    _text(
        ctx,
        "data/participants.tsv",
        "participant_id\tage\n" + "".join(f"sub-{k:02d}\t{40 + k}\n" for k in (1, 2, 3, 4)),
    )
    return samples


# ---------------------------------------------------------------------------------------------- DICOM trees
def _stored(pixels: np.ndarray, size: int) -> np.ndarray:
    grey = _grey(pixels)
    step = max(1, min(grey.shape) // size)
    return np.ascontiguousarray((grey[::step, ::step][:size, :size] * 16).astype(np.uint16))


@foreign_dataset(
    DatasetSpec(
        name="fx-rtimage-sop-labels",
        fmt="DICOM RT Image",
        task="classification",
        dimension="2D",
        modality="RTIMAGE",
        layout="<patient folder>/<date>/<series folder>/IM0001.dcm; qa/outcomes.csv keyed by SOPInstanceUID",
        traps=(
            "Modality RTIMAGE (a portal image, not CT)",
            "PatientID differs from the anonymised folder name",
            "the QA table is keyed by SOPInstanceUID, cp1252-encoded, with a spaced, mixed-case header",
            "every file is IM0001.dcm",
        ),
        classes=("aligned", "décalé"),
        anatomy="NA",
        leaf_task="classification",
    ),
    title="Portal Image QA",
)
def rtimage_sop_labels(ctx: RealContext) -> list[RealSample]:
    """scikit-image's phantom, camera, coins and moon images as 16-bit RT Image objects."""
    import pydicom

    sources = ["phantom.png", "camera.png", "coins.png", "moon.png", "phantom.png"]
    rows = ["Patient;SOP Instance UID ;QA Outcome"]
    samples = []
    for i, name in enumerate(sources):
        pixels, origin = skimage_image(name)
        pid = f"RT-{i + 1:04d}"
        rel = f"data/PAT_{chr(65 + i)}/2020010{i + 1}/RTIMAGE_{i + 1}/IM0001.dcm"
        stored = _stored(pixels if i != 4 else pixels[::-1], 128)
        write_image(ctx.path(rel), stored, patient_id=pid, modality="RTIMAGE", series_key=f"rt:{pid}")
        sop = str(pydicom.dcmread(ctx.path(rel), stop_before_pixels=True).SOPInstanceUID)
        label = i % 2
        rows.append(f"{pid};{sop};{('aligned', 'décalé')[label]}")
        samples.append(
            RealSample(
                rel, pid, label=label, source_stem=pid.lower(), oracle_extra={"case_id": pid}, origin=origin
            )
        )
    _text(ctx, "data/qa/outcomes.csv", "\r\n".join(rows) + "\r\n", encoding="cp1252")
    _text(
        ctx,
        "data/README.md",
        "# Portal Image QA\n\nMV portal images (RT Image objects) from the linac, one folder per patient.\n"
        "The QA outcome of each image is in qa/outcomes.csv, keyed by SOPInstanceUID.\n",
    )
    return samples


@foreign_dataset(
    DatasetSpec(
        name="fx-us-study-labels",
        fmt="DICOM (ultrasound)",
        task="classification",
        dimension="2D",
        modality="Ultrasound",
        layout="<patient name>/<study description>/US000001.dcm; labels.json keyed by StudyInstanceUID",
        traps=(
            "labels joined by StudyInstanceUID (a header value, not a path part)",
            "no box or mask file anywhere: a detection candidate with an empty box list has no support",
            "the README has no title (the folder id is the name)",
        ),
        classes=("normal", "nodule"),
        anatomy="Thyroid (Neck)",
        leaf_task="thyroid_classification",
    ),
)
def us_study_labels(ctx: RealContext) -> list[RealSample]:
    """scikit-image's moon, coins and cell images as ultrasound DICOM objects, one study per patient."""
    import pydicom

    plan = [("moon.png", 0), ("coins.png", 1), ("cell.png", 0), ("camera.png", 1), ("moon.png", 1)]
    records = []
    samples = []
    for i, (name, label) in enumerate(plan):
        pixels, origin = skimage_image(name)
        pid = f"US-{i + 3:04d}"
        rel = f"data/Doe_{chr(65 + i)}/THYROID US/US{i + 1:06d}.dcm"
        stored = _stored(pixels if i != 4 else pixels[:, ::-1], 160)
        write_image(ctx.path(rel), stored, patient_id=pid, modality="US", series_key=f"us:{pid}")
        study = str(pydicom.dcmread(ctx.path(rel), stop_before_pixels=True).StudyInstanceUID)
        records.append({"StudyInstanceUID": study, "Finding": ("normal", "nodule")[label]})
        samples.append(RealSample(rel, pid, label=label, origin=origin))
    _json(ctx, "data/labels.json", records)
    _text(
        ctx,
        "data/README.txt",
        "Thyroid ultrasound studies.\nlabels.json: one finding per study (StudyInstanceUID).\n",
    )
    return samples


# ------------------------------------------------------------------------------------ microscopy TIFF
@foreign_dataset(
    DatasetSpec(
        name="fx-tiff-stations",
        fmt="16-bit TIFF",
        task="classification",
        dimension="2D",
        modality="Microscopy",
        layout="<station>/tile_NN.tif; annotations/tile_labels.csv keyed by the path relative to data/",
        traps=(
            "microscope station folders without digits look like class folders",
            "the label table's header has spaces, mixed case and a UTF-8 BOM",
            "nothing but the file format says microscopy",
        ),
        classes=("interphase", "mitosis"),
        anatomy="Cell (Microscopic)",
        leaf_task="cell_classification",
    ),
)
def tiff_stations(ctx: RealContext) -> list[RealSample]:
    """16-bit tiles of scikit-image's cell image under two station folders."""
    pixels, origin = skimage_image("cell.png")
    rows = [" Relative Path , Phenotype "]
    samples = []
    for i in range(6):
        station = ("stationA", "stationB")[i % 2]
        tile = _Tile(i // 3, i % 3, 160)
        rel = f"data/{station}/tile_{i + 1:02d}.tif"
        write_tiff(ctx.path(rel), (_crop(pixels, tile).astype(np.uint16) * 257))
        label = (0, 1, 1, 0, 0, 1)[i]
        rows.append(f"{rel[len('data/') :]},{('interphase', 'mitosis')[label]}")
        samples.append(RealSample(rel, f"tile_{i + 1:02d}", label=label, origin=origin))
    _text(ctx, "data/annotations/tile_labels.csv", "\n".join(rows) + "\n", encoding="utf-8-sig")
    return samples

"""Realfiles datasets made of pydicom's bundled test files.

Every image's pixels are pydicom's; identifying header fields (PatientID/PatientName and the UIDs) are
rewritten so the header agrees with the folder layout. Labels are synthetic and live where real datasets keep
them (a CSV, class folders, a JSON table, file names).
Decoys (RT structure sets, plans, doses, SEG, SR, waveforms, DICOMDIR files) are copied byte for byte.
"""

from __future__ import annotations

import json

from testbed.realfiles.sources import pydicom_file, pydicom_tree_file
from testbed.realfiles.spec import RealContext, RealSample, realfiles_dataset
from testbed.synth.spec import DatasetSpec

_JPEG_LS = "JPEG-LS needs a decoder plugin (pylibjpeg-libjpeg or GDCM) that a plain install lacks"
_JPEG_LOSSLESS = "JPEG Lossless (process 14) needs a decoder plugin that a plain install lacks"
_JPEG_12BIT = "12-bit JPEG Extended needs a decoder plugin that a plain install lacks"
_TRUNCATED = "the pixel data is truncated"
_J2K_DELIMITER = "a sequence delimiter inside the JPEG 2000 fragment corrupts the codestream header"


@realfiles_dataset(
    DatasetSpec(
        name="rf-mr-transfer-syntaxes",
        fmt="DICOM single file",
        task="classification",
        dimension="2D",
        modality="MRI",
        layout="nested patients/<id>/<study>/ folders; labels.csv joined by patient_id",
        traps=(
            "one MR slice in seven transfer syntaxes (explicit/implicit little endian, big endian, RLE, "
            "JPEG 2000 lossless, padded)",
            "JPEG-LS file without a decoder (expected clean failure)",
            "truncated pixel data (expected clean failure)",
        ),
        classes=("normal", "motion artifact"),
        anatomy="Brain (Head)",
        leaf_task="mri_quality_classification",
    )
)
def mr_transfer_syntaxes(ctx: RealContext) -> list[RealSample]:
    """MR_small in every transfer syntax pydicom ships and two undecodable files."""
    files = [
        ("MR_small.dcm", 0, None),
        ("MR_small_implicit.dcm", 1, None),
        ("MR_small_bigendian.dcm", 0, None),
        ("MR_small_expb.dcm", 1, None),
        ("MR_small_RLE.dcm", 0, None),
        ("MR_small_jp2klossless.dcm", 1, None),
        ("MR_small_jpeg_ls_lossless.dcm", 0, _JPEG_LS),
        ("MR_small_padded.dcm", 0, None),
        ("examples_overlay.dcm", 1, None),
        ("MR_truncated.dcm", 1, _TRUNCATED),
    ]
    classes = ("normal", "motion artifact")
    samples, rows = [], [("patient_id", "finding", "scanner")]
    for i, (name, label, failure) in enumerate(files):
        pid = f"MRP-{101 + i}"
        rel = f"data/patients/{pid}/study_{2019 + i % 3}0{1 + i % 9}/{name}"
        ctx.copy_dicom_unless(failure, pydicom_file(name), rel, pid)
        rows.append((pid, classes[label], "1.5T" if i % 2 else "3T"))
        samples.append(RealSample(rel, pid, label=label, origin=f"pydicom:{name}", expected_failure=failure))
    ctx.write_table("data/labels.csv", rows)
    return samples


@realfiles_dataset(
    DatasetSpec(
        name="rf-ct-rt-decoys",
        fmt="DICOM single file",
        task="classification",
        dimension="2D",
        modality="CT",
        layout="class folders of patient folders; the CT image shares its folder with RT/SEG/SR/ECG objects",
        traps=(
            "RT structure set, plan and dose, SEG, SR and waveform objects beside each image",
            "an RT dose grid is a readable image but not the sample",
            "JPEG 2000 lossy and lossless CT with 13/14 stored bits",
            "files named CT.<id>.dcm / RD.<id>.dcm like a treatment-planning export",
        ),
        classes=("normal", "abnormal"),
        anatomy="Head (Head)",
        leaf_task="ct_abnormality_classification",
    )
)
def ct_rt_decoys(ctx: RealContext) -> list[RealSample]:
    """CT slices in patient folders beside RT/SEG/SR/waveform decoys; the class is the top folder."""
    cases = [  # (class, pydicom file, decoys beside it)
        ("normal", "CT_small.dcm", ["rtstruct.dcm", "rtdose.dcm"]),
        ("abnormal", "693_J2KI.dcm", ["rtplan.dcm", "liver_1frame.dcm"]),
        ("abnormal", "J2K_pixelrep_mismatch.dcm", ["rtdose_rle.dcm", "test-SR.dcm"]),
        ("normal", "dicomdirtests/77654033/CT2/17106", ["liver_expb_1frame.dcm", "waveform_ecg.dcm"]),
        ("normal", "dicomdirtests/98892001/CT5N/2062", ["rtdose_expb_1frame.dcm", "reportsi.dcm"]),
    ]
    prefix = {
        "rtstruct": "RS",
        "rtplan": "RP",
        "rtdose": "RD",
        "liver": "SEG",
        "test-SR": "SR",
        "reportsi": "SR",
        "waveform": "ECG",
    }
    classes = ("normal", "abnormal")
    samples = []
    for i, (cls, name, decoys) in enumerate(cases):
        pid = f"CTP-{201 + i}"
        folder = f"data/{cls}/{pid}"
        src = pydicom_tree_file(name) if "/" in name else pydicom_file(name)
        rel = ctx.copy_dicom(src, f"{folder}/CT.{pid}.dcm", pid)
        for decoy in decoys:
            tag = next(v for k, v in prefix.items() if decoy.startswith(k))
            ctx.copy(pydicom_file(decoy), f"{folder}/{tag}.{pid}.{decoy.removesuffix('.dcm')}.dcm")
        samples.append(
            RealSample(
                rel,
                pid,
                label=classes.index(cls),
                oracle_extra={"source_sample_dir": folder},
                origin=f"pydicom:{name}",
            )
        )
    return samples


@realfiles_dataset(
    DatasetSpec(
        name="rf-sc-colour-dicom",
        fmt="DICOM single file (colour)",
        task="classification",
        dimension="2D",
        modality="OT",
        layout="flat export/ folder; labels.csv keyed by file name",
        traps=(
            "RGB, YBR_FULL and YBR_FULL_422 photometric interpretations",
            "RGB with 16 and 32 bits per sample (scaled, not cast)",
            "JPEG baseline, RLE, JPEG 2000 and deflated transfer syntaxes; a big-endian 3x3 image",
            "a two-frame file (frame 0 is the sample)",
            "JPEG Lossless without a decoder (expected clean failure)",
            "'+' in file names",
        ),
        classes=("normal", "abnormal"),
        anatomy="Unknown (Unknown)",
        leaf_task="secondary_capture_classification",
    )
)
def sc_colour(ctx: RealContext) -> list[RealSample]:
    """Secondary-capture colour test images in one flat folder with a file-name label table."""
    files = [
        ("SC_rgb_jpeg_dcmtk.dcm", 0, None, {}),
        ("SC_rgb_dcmtk_+eb+cr.dcm", 1, None, {}),
        ("SC_rgb_rle.dcm", 0, None, {}),
        ("SC_rgb_rle_16bit.dcm", 1, None, {}),
        ("SC_rgb_rle_32bit.dcm", 0, None, {}),
        ("SC_rgb_rle_2frame.dcm", 1, None, {"frame": 0}),
        ("SC_rgb_gdcm_KY.dcm", 0, None, {}),
        ("SC_ybr_full_422_uncompressed.dcm", 1, None, {}),
        ("SC_rgb_jpeg_gdcm.dcm", 0, _JPEG_LOSSLESS, {}),
        ("SC_rgb_small_odd_big_endian.dcm", 1, None, {}),
        ("image_dfl.dcm", 0, None, {}),
    ]
    classes = ("normal", "abnormal")
    samples, rows = [], [("file", "label")]
    for i, (name, label, failure, read) in enumerate(files):
        pid = f"SC-{301 + i}"
        rel = f"data/export/{name}"
        ctx.copy_dicom_unless(failure, pydicom_file(name), rel, pid)
        rows.append((name, classes[label]))
        samples.append(
            RealSample(rel, pid, label=label, read=read, origin=f"pydicom:{name}", expected_failure=failure)
        )
    ctx.write_table("data/labels.csv", rows)
    return samples


@realfiles_dataset(
    DatasetSpec(
        name="rf-us-colour-dicom",
        fmt="DICOM single file (colour)",
        task="classification",
        dimension="2D",
        modality="Ultrasound",
        layout="studies/<patient>/ folders; labels in a JSON table keyed by patient",
        traps=(
            "PALETTE COLOR (lookup tables applied)",
            "30-frame YBR_FULL_422 JPEG cine (frame 0 is the sample)",
            "RGB big endian; JPEG 2000 YBR_RCT",
        ),
        classes=("normal", "abnormal"),
        anatomy="Abdomen (Abdomen)",
        leaf_task="ultrasound_classification",
    )
)
def us_colour(ctx: RealContext) -> list[RealSample]:
    """Colour ultrasound objects, one patient folder each; labels in ``labels.json``."""
    files = [
        ("ExplVR_BigEnd.dcm", 0, {}),
        ("examples_palette.dcm", 1, {}),
        ("examples_rgb_color.dcm", 0, {}),
        ("examples_ybr_color.dcm", 1, {"frame": 0}),
        ("examples_jpeg2k.dcm", 1, {}),
    ]
    classes = ("normal", "abnormal")
    samples, table = [], {}
    for i, (name, label, read) in enumerate(files):
        pid = f"USP-{401 + i}"
        rel = ctx.copy_dicom(pydicom_file(name), f"data/studies/{pid}/{name}", pid)
        table[pid] = {"diagnosis": classes[label], "operator": f"op{1 + i % 2}"}
        samples.append(RealSample(rel, pid, label=label, read=read, origin=f"pydicom:{name}"))
    ctx.path("data/labels.json").write_text(json.dumps(table, indent=2, sort_keys=True), encoding="utf-8")
    return samples


@realfiles_dataset(
    DatasetSpec(
        name="rf-nm-jpeg-dicom",
        fmt="DICOM single file (JPEG)",
        task="classification",
        dimension="2D",
        modality="Nuclear medicine",
        layout="flat scans/ folder; the class is a word in the file name",
        traps=(
            "JPEG 2000 single-frame multi-frame objects (NumberOfFrames = 1)",
            "12-bit JPEG Extended without a decoder (expected clean failure, two files)",
            "a JPEG 2000 fragment with an embedded sequence delimiter (a bogus huge image size; expected "
            "clean failure, never a decompression-bomb traceback)",
            "label encoded in the file name",
        ),
        classes=("normal", "abnormal"),
        anatomy="Whole body (Whole body)",
        leaf_task="bone_scan_classification",
    )
)
def nm_jpeg(ctx: RealContext) -> list[RealSample]:
    """Whole-body NM scans in JPEG 2000 and 12-bit JPEG Extended; the label is in the file name."""
    files = [
        ("JPEG2000.dcm", 0, None),
        ("JPGExtended.dcm", 1, _JPEG_12BIT),
        ("JPEG2000-embedded-sequence-delimiter.dcm", 1, _J2K_DELIMITER),
        ("JPEG-lossy.dcm", 0, _JPEG_12BIT),
    ]
    classes = ("normal", "abnormal")
    samples = []
    for i, (name, label, failure) in enumerate(files):
        pid = f"NMP-{501 + i}"
        rel = f"data/scans/{pid}_{classes[label]}.dcm"
        ctx.copy_dicom_unless(failure, pydicom_file(name), rel, pid)
        samples.append(RealSample(rel, pid, label=label, origin=f"pydicom:{name}", expected_failure=failure))
    return samples


_TREE = "dicomdirtests"
_TREE_FILES = [
    "DICOMDIR",
    "77654033/CR1/6154",
    "77654033/CR2/6247",
    "77654033/CR3/6278",
    "77654033/CT2/17106",
    "77654033/CT2/17136",
    "77654033/CT2/17166",
    "77654033/CT2/17196",
    "98892001/CT2N/6293",
    "98892001/CT2N/6924",
    "98892001/CT5N/2062",
    "98892001/CT5N/2392",
    "98892001/CT5N/2693",
    "98892001/CT5N/3023",
    "98892001/CT5N/3353",
    "98892003/MR700/4467",
    "98892003/MR700/4528",
    "98892003/MR700/4558",
    "98892003/MR700/4588",
    "98892003/MR700/4618",
    "98892003/MR700/4648",
    "98892003/MR700/4678",
]


@realfiles_dataset(
    DatasetSpec(
        name="rf-dicomdir-series",
        fmt="DICOM series (DICOMDIR tree)",
        task="classification",
        dimension="3D",
        modality="CT",
        layout="a DICOMDIR media tree: <patient>/<series>/<instance> files without extensions",
        traps=(
            "file names without extension",
            "the DICOMDIR index file and single-image CR series in the same tree",
            "a series with one slice far from the others",
            "folders of single-image series beside the listed ones (CR, two orthogonal CT localizers, a "
            "radial MR localizer whose slices all differ in orientation)",
        ),
        classes=("normal", "abnormal"),
        anatomy="Head (Head)",
        leaf_task="series_classification",
    )
)
def dicomdir_series(ctx: RealContext) -> list[RealSample]:
    """pydicom's DICOMDIR test tree copied verbatim; each listed file stands for its whole series folder."""
    for rel in _TREE_FILES:
        ctx.copy(pydicom_tree_file(f"{_TREE}/{rel}"), f"data/media/{rel}")
    series = [
        ("77654033/CT2/17106", "77654033", 0, None),
        ("98892001/CT5N/2062", "98890234", 1, None),
    ]
    labels = [("series_folder", "label")]
    samples = []
    for rel, pid, label, modality in series:
        folder = rel.rsplit("/", 1)[0]
        labels.append((folder, ("normal", "abnormal")[label]))
        samples.append(
            RealSample(
                f"data/media/{rel}",
                pid,
                label=label,
                read_path=f"data/media/{folder}",
                modality=modality,
                oracle_extra={"source_sample_dir": f"data/media/{folder}"},
                origin=f"pydicom:{_TREE}/{folder}",
            )
        )
    ctx.write_table("data/series_labels.csv", labels)
    return samples


@realfiles_dataset(
    DatasetSpec(
        name="rf-cr-monochrome1",
        fmt="DICOM single file",
        task="classification",
        dimension="2D",
        modality="X-ray",
        layout="per-patient folders; labels.csv joined by patient_id",
        traps=(
            "MONOCHROME1: minimum is white (pydicom's computed radiographs)",
            "16x16 images",
        ),
        classes=("normal", "abnormal"),
        anatomy="Chest (Thorax)",
        leaf_task="radiograph_classification",
    )
)
def cr_monochrome1(ctx: RealContext) -> list[RealSample]:
    """pydicom's MONOCHROME1 computed radiographs, one patient folder each."""
    files = [("77654033/CR1/6154", 0), ("77654033/CR2/6247", 1), ("77654033/CR3/6278", 1)]
    rows = [("patient_id", "label")]
    samples = []
    for i, (rel, label) in enumerate(files):
        pid = f"CRP-{601 + i}"
        dst = ctx.copy_dicom(
            pydicom_tree_file(f"{_TREE}/{rel}"),
            f"data/{pid}/{rel.rsplit('/', 1)[1]}.dcm",
            pid,
        )
        rows.append((pid, ("normal", "abnormal")[label]))
        samples.append(
            RealSample(
                dst,
                pid,
                label=label,
                origin=f"pydicom:{_TREE}/{rel}",
            )
        )
    ctx.write_table("data/labels.csv", rows)
    return samples

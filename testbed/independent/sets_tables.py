"""Independent datasets whose labels live in a table: Kaggle competition, cohort tree with a demographics
sheet, and a study list keyed by accession number.

The labels of the two MR sets are study labels an annotator can only take from the table (they are not
visible in the pixels), which is how such cohorts are distributed.
"""

from __future__ import annotations

import hashlib

import numpy as np

from testbed.independent.sources import digits, mni_volume
from testbed.independent.spec import IndependentSample, independent_dataset
from testbed.realfiles.spec import RealContext
from testbed.synth.spec import DatasetSpec
from testbed.synth.write_dicom import write_image
from testbed.synth.write_files import write_h5, write_pillow, write_text


@independent_dataset(
    DatasetSpec(
        name="digit-scans-competition",
        fmt="PNG",
        task="classification",
        dimension="2D",
        modality="Optical scan",
        layout="Kaggle: train.csv (image_id,label), train_images/<image_id>.png, test_images/, "
        "sample_submission.csv",
        traps=("hashed file names", "labels only in train.csv", "unlabelled test_images"),
        classes=tuple(str(d) for d in range(10)),
        anatomy="NA (Handwriting)",
        leaf_task="digit classification",
    ),
    title="Optical Digit Scans",
)
def digit_scans(ctx: RealContext) -> list[IndependentSample]:
    """Eight labelled scans (4x nearest upscaling to 32 x 32) and three test scans."""
    images, labels, origin = digits()
    rows, samples = ["image_id,label"], []
    for n, i in enumerate((0, 11, 22, 35, 48, 57, 66, 79, 90, 101, 112)):
        pixels = (np.kron(images[i], np.ones((4, 4), dtype=np.uint8)) * 15).astype(np.uint8)
        image_id = hashlib.sha1(f"digit-{i}".encode()).hexdigest()[:12]
        if n < 8:
            rel = f"data/train_images/{image_id}.png"
            write_pillow(ctx.path(rel), pixels)
            rows.append(f"{image_id},{int(labels[i])}")
            samples.append(IndependentSample(rel, image_id, label=int(labels[i]), origin=f"{origin} row {i}"))
        else:
            write_pillow(ctx.path(f"data/test_images/{image_id}.png"), pixels)
    write_text(ctx.path("data/train.csv"), "\n".join(rows) + "\n")
    write_text(ctx.path("data/sample_submission.csv"), "image_id,label\n")
    write_text(
        ctx.path("data/README.md"),
        "# Optical Digit Scans\n\nOptical scans of handwritten digits (modality: optical scan), 32 x 32 "
        "grey PNGs. `train.csv` gives the digit (0-9) of each `train_images/<image_id>.png`; predict the "
        "`test_images`.\n",
    )
    return samples


_CDR_CLASSES = ("nondemented", "very mild dementia", "mild dementia")
_COHORT = (  # (subject, sex, age, CDR class index, axial slice)
    ("OAS1_0003", "F", 73, 2, 70),
    ("OAS1_0004", "M", 28, 0, 76),
    ("OAS1_0010", "M", 74, 1, 82),
    ("OAS1_0011", "F", 52, 0, 88),
    ("OAS1_0015", "M", 76, 1, 94),
    ("OAS1_0021", "F", 80, 2, 100),
)


@independent_dataset(
    DatasetSpec(
        name="cohort-mr-sessions",
        fmt="DICOM (one slice per session)",
        task="classification",
        dimension="2D",
        modality="MRI",
        layout="per-subject tree <ID>_MR1/RAW/mpr-1.dcm + cross-sectional demographics CSV keyed by ID",
        traps=("label is the clinical rating in the sheet", "session suffix on the folder"),
        classes=_CDR_CLASSES,
        anatomy="Brain (Head)",
        leaf_task="dementia rating classification",
    ),
    title="Cross-sectional MRI cohort",
)
def cohort_sessions(ctx: RealContext) -> list[IndependentSample]:
    """Six sessions; each a 1 mm axial slice written as a real MR DICOM with the subject as PatientID."""
    t1, _ = mni_volume("t1")
    rows = ["ID,M/F,Hand,Age,CDR"]
    cdr = ("0", "0.5", "1")
    samples = []
    for subject, sex, age, label, z in _COHORT:
        rel = f"data/{subject}_MR1/RAW/mpr-1.dcm"
        write_image(
            ctx.path(rel),
            np.ascontiguousarray(np.flipud(t1[z])).astype(np.uint16),
            patient_id=subject,
            modality="MR",
            series_key=f"{subject}-mpr-1",
            series_description="MPRAGE",
        )
        rows.append(f"{subject}_MR1,{sex},R,{age},{cdr[label]}")
        samples.append(IndependentSample(rel, subject, label=label, origin=f"nilearn: MNI T1 slice {z}"))
    write_text(ctx.path("data/cross-sectional.csv"), "\n".join(rows) + "\n")
    write_text(
        ctx.path("data/README.md"),
        "# Cross-sectional MRI cohort\n\nOne T1-weighted MPRAGE slice per session (`<ID>_MR1/RAW`). "
        "`cross-sectional.csv` gives sex, age and the Clinical Dementia Rating per session: CDR 0 = "
        "nondemented, 0.5 = very mild dementia, 1 = mild dementia.\n",
    )
    return samples


_STUDIES = (  # (accession, patient, finding index, coronal slice)
    ("ACC20260114", "P-0192", 0, 100),
    ("ACC20260187", "P-0035", 1, 110),
    ("ACC20260203", "P-0192", 1, 120),
    ("ACC20260255", "P-0611", 0, 130),
    ("ACC20260309", "P-0478", 0, 140),
    ("ACC20260342", "P-0035", 1, 150),
)


@independent_dataset(
    DatasetSpec(
        name="accession-studies-h5",
        fmt="HDF5 (one study per file)",
        task="classification",
        dimension="2D",
        modality="MRI",
        layout="studies/<AccessionNumber>.h5 (dataset /image, attrs PatientID, Modality) + findings.csv",
        traps=("table keyed by accession number", "a patient with two studies", "subject only in attrs"),
        classes=("no finding", "finding"),
        anatomy="Brain (Head)",
        leaf_task="study-level finding classification",
    ),
    title="Accession-keyed MR studies",
)
def accession_studies(ctx: RealContext) -> list[IndependentSample]:
    """Six coronal slices, one HDF5 per accession; the finding and the patient come from table and attrs."""
    t1, _ = mni_volume("t1")
    classes = ("no finding", "finding")
    rows = ["AccessionNumber,StudyDate,Finding"]
    samples = []
    for n, (accession, patient, label, y) in enumerate(_STUDIES):
        rel = f"data/studies/{accession}.h5"
        coronal = np.ascontiguousarray(np.flipud(t1[:, y, :]))
        write_h5(ctx.path(rel), {"image": coronal}, attrs={"PatientID": patient, "Modality": "MR"})
        rows.append(f"{accession},202601{10 + n:02d},{classes[label]}")
        samples.append(IndependentSample(rel, patient, label=label, origin=f"nilearn: MNI T1 coronal {y}"))
    write_text(ctx.path("data/findings.csv"), "\n".join(rows) + "\n")
    write_text(
        ctx.path("data/README.md"),
        "# Accession-keyed MR studies\n\nOne coronal T1-weighted MR slice per study, "
        "`studies/<AccessionNumber>.h5` (dataset `image`; attributes `PatientID`, `Modality`). "
        "`findings.csv` labels each accession `no finding` or `finding`.\n",
    )
    return samples

"""Realfiles datasets made of nibabel's bundled test files (``nibabel/tests/data``).

The image files are copied byte for byte. Segmentation masks are synthetic but derived from the real voxels:
volume 0 thresholded at its 70th percentile, written as a NIfTI-1 label volume on the image's own grid (same
affine), so any reader that orients the image orients the mask the same way.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from testbed.realfiles.sources import nibabel_file
from testbed.realfiles.spec import RealContext, RealSample, realfiles_dataset
from testbed.synth.spec import DatasetSpec


def write_threshold_mask(src: Path, dst: Path, percentile: float = 70.0) -> None:
    """Write a 0/1 label volume: volume 0 of ``src`` above its ``percentile``-th intensity (NaN = 0).

    Args:
        src: A NIfTI image (3D or 4D, any byte order).
        dst: ``.nii.gz`` destination (gzip mtime 0, so the bytes are reproducible).
        percentile: Threshold percentile of the volume's voxels.
    """
    import nibabel as nib

    img = nib.load(str(src))
    data = np.asarray(img.dataobj, dtype=np.float64)  # type: ignore[attr-defined]
    while data.ndim > 3:
        data = data[..., 0]
    # Real volumes hold NaN outside the resampled field of view (resampled_anat_moved.nii): background.
    finite = np.isfinite(data)
    mask = (finite & (np.where(finite, data, -np.inf) > np.nanpercentile(data, percentile))).astype(np.uint8)
    out = nib.Nifti1Image(mask, img.affine)  # type: ignore[attr-defined,no-untyped-call]
    out.header.set_xyzt_units("mm")  # type: ignore[no-untyped-call]
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(gzip.compress(out.to_bytes(), compresslevel=1, mtime=0))


@realfiles_dataset(
    DatasetSpec(
        name="rf-nifti-bids-seg",
        fmt="NIfTI (.nii, .nii.gz, NIfTI-2, 4D)",
        task="segmentation",
        dimension="3D",
        modality="MRI",
        layout="BIDS: sub-XX/anat|func/ images; derivatives/masks/sub-XX/... label volumes",
        traps=(
            "big-endian NIfTI-1 (int16 and float32)",
            "a reoriented, resampled volume (non-diagonal affine); NaN voxels outside the field of view",
            "4D volumes (the sample is volume 0) in func/",
            "a NIfTI-2 file",
            "masks in a derivatives tree, named with BIDS entities (_desc-brain_mask)",
        ),
        classes=("background", "brain"),
        anatomy="Brain (Head)",
        leaf_task="brain_segmentation",
    )
)
def nifti_bids_seg(ctx: RealContext) -> list[RealSample]:
    """nibabel's NIfTI test volumes in a BIDS tree with threshold masks in ``derivatives/``."""
    files = [
        ("anatomical.nii", "anat", "T1w", ".nii"),
        ("reoriented_anat_moved.nii", "anat", "T1w", ".nii"),
        ("resampled_anat_moved.nii", "anat", "T2w", ".nii"),
        ("example4d.nii.gz", "func", "bold", ".nii.gz"),
        ("example_nifti2.nii.gz", "func", "bold", ".nii.gz"),
        ("functional.nii", "func", "bold", ".nii"),
        ("standard.nii.gz", "anat", "T1w", ".nii.gz"),
    ]
    samples = []
    for i, (name, kind, suffix, ext) in enumerate(files):
        sub = f"sub-{i + 1:02d}"
        src = nibabel_file(name)
        rel = ctx.copy(src, f"data/{sub}/{kind}/{sub}_{suffix}{ext}")
        mask_rel = f"data/derivatives/masks/{sub}/{kind}/{sub}_desc-brain_mask.nii.gz"
        write_threshold_mask(src, ctx.path(mask_rel))
        samples.append(RealSample.with_mask(rel, sub, mask_rel, f"nibabel:{name}"))
    return samples


@realfiles_dataset(
    DatasetSpec(
        name="rf-minc-volumes",
        fmt="MINC1 / MINC2 (.mnc)",
        task="classification",
        dimension="3D",
        modality="MRI",
        layout="site folders of subject folders; participants.tsv joined by participant_id",
        traps=(
            "MINC1 (NetCDF) and MINC2 (HDF5) under one extension",
            "4D MINC files (the sample is volume 0)",
            "files without valid_range/scaling attributes and with per-slice scaling",
            "tab-separated label table",
        ),
        classes=("control", "patient"),
        anatomy="Brain (Head)",
        leaf_task="brain_mri_classification",
    )
)
def minc_volumes(ctx: RealContext) -> list[RealSample]:
    """nibabel's MINC test volumes, one subject folder each, labelled by a BIDS-style participants table."""
    files = [
        ("tiny.mnc", 0),
        ("minc1_1_scale.mnc", 1),
        ("minc1-no-att.mnc", 0),
        ("minc1_4d.mnc", 1),
        ("small.mnc", 0),
        ("minc2_1_scale.mnc", 1),
        ("minc2-no-att.mnc", 1),
        ("minc2_4d.mnc", 0),
        ("minc2-4d-d.mnc", 1),
    ]
    classes = ("control", "patient")
    rows = [("participant_id", "group", "age")]
    samples = []
    for i, (name, label) in enumerate(files):
        sid = f"MNC-{101 + i}"
        site = "site-A" if i % 2 == 0 else "site-B"
        rel = ctx.copy(nibabel_file(name), f"data/{site}/{sid}/{name}")
        rows.append((sid, classes[label], str(30 + 3 * i)))
        samples.append(RealSample(rel, sid, label=label, origin=f"nibabel:{name}"))
    ctx.write_table("data/participants.tsv", rows, "\t")
    ctx.path("data/README.txt").write_text(
        "Brain MRI volumes in MINC format (MINC1 and MINC2) from two sites.\n"
        "participants.tsv: group (control or patient) and age of each participant.\n",
        encoding="utf-8",
    )
    return samples


@realfiles_dataset(
    DatasetSpec(
        name="rf-neuro-formats",
        fmt="MGH, PAR/REC, AFNI BRIK/HEAD, ECAT",
        task="classification",
        dimension="3D",
        modality="MRI",
        layout="class folders; header/data pairs side by side (.PAR + .REC, +orig.HEAD + +orig.BRIK.gz)",
        traps=(
            "the manifest lists the header of a header/data pair (.PAR, .HEAD)",
            "4D PAR/REC, AFNI and MGH files (the sample is volume 0)",
            "an ECAT PET volume among MR files (per-sample modality)",
            "a truncated PAR/REC pair (expected clean failure)",
            "an AFNI header declaring several data types, with no BRIK (expected clean failure)",
        ),
        classes=("normal", "abnormal"),
        anatomy="Brain (Head)",
        leaf_task="neuroimaging_classification",
    )
)
def neuro_formats(ctx: RealContext) -> list[RealSample]:
    """MGH, PAR/REC, AFNI and ECAT files from nibabel's test data in class folders."""
    cases: list[tuple[list[str], int, str | None, str | None]] = [
        (["test.mgz"], 0, None, None),
        (["phantom_EPI_asc_CLEAR_2_1.PAR", "phantom_EPI_asc_CLEAR_2_1.REC"], 1, None, None),
        (["example4d+orig.HEAD", "example4d+orig.BRIK.gz"], 0, None, None),
        (["tinypet.v"], 1, "PET", None),
        (["phantom_varscale.PAR", "phantom_varscale.REC"], 0, None, None),
        (["scaled+tlrc.HEAD", "scaled+tlrc.BRIK"], 1, None, None),
        (
            ["phantom_truncated.PAR", "phantom_truncated.REC"],
            1,
            None,
            "the REC data are shorter than the PAR header says",
        ),
        (["bad_datatype+orig.HEAD"], 0, None, "the AFNI header declares several data types and has no BRIK"),
    ]
    classes = ("normal", "abnormal")
    samples = []
    for i, (names, label, modality, failure) in enumerate(cases):
        sid = f"NRO-{701 + i}"
        folder = f"data/{classes[label]}/{sid}"
        rels = [ctx.copy(nibabel_file(n), f"{folder}/{n}") for n in names]
        samples.append(
            RealSample(
                rels[0],
                sid,
                label=label,
                modality=modality,
                origin="nibabel:" + "+".join(names),
                expected_failure=failure,
            )
        )
    ctx.path("data/README.txt").write_text(
        "Brain MRI volumes exported from several scanners and packages (FreeSurfer MGH,\n"
        "Philips PAR/REC, AFNI), and one PET volume in ECAT format.\n"
        "Each subject folder sits in its class folder (normal, abnormal).\n",
        encoding="utf-8",
    )
    return samples

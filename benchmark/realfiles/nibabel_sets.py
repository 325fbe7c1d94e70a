"""Realfiles datasets made of nibabel's bundled test files (``nibabel/tests/data``).

The image files are copied byte for byte. Segmentation masks are synthetic but derived from the real voxels:
volume 0 thresholded at its 70th percentile, written as a NIfTI-1 label volume on the image's own grid (same
affine), so any reader that orients the image orients the mask the same way.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from benchmark.realfiles.sources import nibabel_file
from benchmark.realfiles.spec import RealContext, RealSample, realfiles_dataset
from benchmark.synth.spec import DatasetSpec


def write_threshold_mask(src: Path, dst: Path, percentile: float = 70.0) -> None:
    """Write a 0/1 label volume: volume 0 of ``src`` above its ``percentile``-th intensity.

    Args:
        src: A NIfTI image (3D or 4D, any byte order).
        dst: ``.nii.gz`` destination (gzip mtime 0, so the bytes are reproducible).
        percentile: Threshold percentile of the volume's voxels.
    """
    import nibabel as nib

    img = nib.load(str(src))  # type: ignore[attr-defined]
    data = np.asarray(img.dataobj, dtype=np.float64)  # type: ignore[attr-defined]
    while data.ndim > 3:
        data = data[..., 0]
    mask = (data > np.percentile(data, percentile)).astype(np.uint8)
    out = nib.Nifti1Image(mask, img.affine)  # type: ignore[attr-defined,no-untyped-call]
    out.header.set_xyzt_units("mm")  # type: ignore[no-untyped-call]
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(gzip.compress(out.to_bytes(), compresslevel=1, mtime=0))  # type: ignore[no-untyped-call]


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
            "a reoriented, resampled volume (non-diagonal affine)",
            "4D volumes (the sample is volume 0) in func/",
            "a NIfTI-2 file",
            "masks in a derivatives tree, named with BIDS entities (_desc-brain_mask)",
        ),
        classes=("background", "tissue"),
        anatomy="Brain (Head)",
        leaf_task="brain_tissue_segmentation",
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
        samples.append(
            RealSample(
                rel,
                sub,
                mask_path=mask_rel,
                extra={"label_file": mask_rel, "mask_file": mask_rel},
                origin=f"nibabel:{name}",
            )
        )
    return samples

"""Volume datasets: NIfTI (.nii, .nii.gz, 4D), MetaImage (.mha, .mhd + .raw) and NRRD."""

from __future__ import annotations

import numpy as np

from testbed.synth import phantoms as ph
from testbed.synth import write_files as wf
from testbed.synth.spec import BuildContext, DatasetSpec, SynthSample, dataset


@dataset(
    DatasetSpec(
        name="synth-brain-mr-nifti",
        fmt="NIfTI .nii.gz",
        task="segmentation",
        dimension="3D",
        modality="MRI",
        layout="imagesTr/ and labelsTr/ siblings",
        traps=("mask file name does not match its image", "MR arbitrary units", "nested lesion labels"),
        classes=("background", "edema", "tumor core"),
        anatomy="Brain (Head)",
        leaf_task="brain_tumor_segmentation",
    )
)
def brain_mr(ctx: BuildContext) -> list[SynthSample]:
    """T1-like MR volumes with a two-label tumour; masks are named ``lesion_<n>_annot``."""
    samples = []
    for i in range(ctx.n):
        num = 17 + 3 * i
        img, labels = ph.mr_volume(ctx.rng, (28, 64, 64), n_lesion_labels=2)
        rel = f"data/imagesTr/BrTumor_{num:03d}.nii.gz"
        mask_rel = f"data/labelsTr/lesion_{num:03d}_annot.nii.gz"
        wf.write_nifti(ctx.path(rel), np.asarray(img, dtype=np.float32), (1.0, 1.0, 1.5))
        wf.write_nifti(ctx.path(mask_rel), labels, (1.0, 1.0, 1.5))
        samples.append(
            SynthSample.segmentation(rel, f"BrTumor_{num:03d}", labels, mask_rel, spacing=(1.0, 1.0, 1.5))
        )
    return samples


@dataset(
    DatasetSpec(
        name="synth-kidney-ct-nifti",
        fmt="NIfTI .nii",
        task="segmentation",
        dimension="3D",
        modality="CT",
        layout="nested per case (case_XXXXX/imaging.nii + segmentation.nii)",
        traps=(
            "manifest lists the label volume, as in KiTS",
            "every source file is segmentation.nii",
            "image and label share one folder",
        ),
        classes=("background", "kidney", "kidney tumor"),
        anatomy="Kidney (Abdomen)",
        leaf_task="kidney_tumor_segmentation",
    )
)
def kidney_ct(ctx: BuildContext) -> list[SynthSample]:
    """KiTS-like cases; the manifest names ``segmentation.nii`` and the image is ``imaging.nii`` beside it."""
    samples = []
    for i in range(ctx.n):
        case = f"case_{120 + 11 * i:05d}"
        hu, labels = ph.ct_volume(ctx.rng, (20, 64, 64), organ_hu=150.0)
        folder = f"data/dataset/{case}"
        wf.write_nifti(
            ctx.path(f"{folder}/imaging.nii"), np.asarray(np.rint(hu), dtype=np.int16), (0.9, 0.9, 3.0)
        )
        wf.write_nifti(ctx.path(f"{folder}/segmentation.nii"), labels, (0.9, 0.9, 3.0))
        rel = f"{folder}/segmentation.nii"
        s = SynthSample.segmentation(
            rel,
            case,
            labels,
            rel,
            spacing=(0.9, 0.9, 3.0),
            read_path=f"{folder}/imaging.nii",
            source_stem=case,
            oracle_extra={"source_sample_dir": folder},
        )
        s.extra["seg_file"] = rel
        samples.append(s)
    return samples


@dataset(
    DatasetSpec(
        name="synth-cardiac-cine-4d",
        fmt="NIfTI 4D",
        task="classification",
        dimension="3D",
        modality="MRI",
        layout="nested per patient; group codes in a CSV",
        traps=(
            "4D volume (sample = first time point)",
            "README holds the class mapping of the numeric codes",
            "labels joined by patient id",
        ),
        classes=("normal", "dilated cardiomyopathy", "hypertrophic cardiomyopathy"),
        anatomy="Heart (Chest)",
        leaf_task="cardiac_pathology_classification",
    )
)
def cardiac_4d(ctx: BuildContext) -> list[SynthSample]:
    """Cine MR as ``(X, Y, Z, T)`` NIfTI; ``Info.csv`` has codes, ``README.md`` maps codes to names."""
    samples = []
    rows = ["patient,height_cm,weight_kg,group_code"]
    for i in range(ctx.n):
        pid = f"patient{31 + 4 * i:03d}"
        label = int(ctx.rng.integers(0, 3))
        t, z, h, w = 5, 10, 64, 64
        cine = np.zeros((t, z, h, w))
        for ti in range(t):
            r = (10.0 + 5.0 * (label == 1)) * (1.0 - 0.15 * np.sin(np.pi * ti / t))
            wall = 4.0 + 4.0 * (label == 2)
            outer = ph.ellipsoid((z, h, w), (z / 2, h / 2, w / 2), (z * 0.6, r + wall, r + wall))
            inner = ph.ellipsoid((z, h, w), (z / 2, h / 2, w / 2), (z * 0.6, r, r))
            cine[ti][outer] = 300.0
            cine[ti][inner] = 700.0
        cine += 80.0 + ph.texture(ctx.rng, cine.shape, 1.0, 20.0)
        rel = f"data/training/{pid}/{pid}_4d.nii.gz"
        wf.write_nifti(
            ctx.path(rel), np.asarray(np.clip(cine, 0, None), dtype=np.int16), (1.4, 1.4, 8.0, 0.03)
        )
        rows.append(f"{pid},{160 + i},{60 + 2 * i},{label}")
        samples.append(
            SynthSample.stack(rel, pid, (z, h, w), label=label, read={"volume": 0}, spacing=(1.4, 1.4, 8.0))
        )
    wf.write_text(ctx.path("data/training/Info.csv"), "\n".join(rows) + "\n")
    wf.write_text(
        ctx.path("data/README.md"),
        # A README title names the dataset (the convention documented datasets follow: issue 24); the heading
        # was "Cine MR", a description that disagreed with the ground truth's dataset name.
        "# synth-cardiac-cine-4d\n\nCine MR.\ngroup_code: 0 = normal, 1 = dilated cardiomyopathy, "
        "2 = hypertrophic cardiomyopathy.\nVolumes are 4D (x, y, z, t); t = 0 is end-diastole.\n",
    )
    return samples


@dataset(
    DatasetSpec(
        name="synth-prostate-mha",
        fmt="MetaImage .mha",
        task="segmentation",
        dimension="3D",
        modality="MRI",
        layout="images/ and masks/ siblings",
        traps=("mask name differs (_gland)", "anisotropic spacing"),
        classes=("background", "prostate"),
        anatomy="Prostate (Pelvis)",
        leaf_task="prostate_segmentation",
    )
)
def prostate_mha(ctx: BuildContext) -> list[SynthSample]:
    """T2-weighted-like prostate volumes as ``.mha`` with gland masks."""
    samples = []
    for i in range(ctx.n):
        sid = f"ProstateX-{4 + 9 * i:04d}"
        z, h, w = 20, 64, 64
        img = 200.0 + ph.texture(ctx.rng, (z, h, w), 2.0, 40.0)
        gland = ph.ellipsoid((z, h, w), (z * ctx.rng.uniform(0.4, 0.6), h * 0.55, w * 0.5), (z * 0.3, 11, 14))
        img[gland] += 350.0
        labels = gland.astype(np.uint8)
        rel = f"data/images/{sid}_t2w.mha"
        mask_rel = f"data/masks/{sid}_gland.mha"
        wf.write_itk(ctx.path(rel), np.asarray(np.clip(img, 0, None), dtype=np.int16), (0.5, 0.5, 3.0))
        wf.write_itk(ctx.path(mask_rel), labels, (0.5, 0.5, 3.0))
        samples.append(SynthSample.segmentation(rel, sid, labels, mask_rel, spacing=(0.5, 0.5, 3.0)))
    return samples


@dataset(
    DatasetSpec(
        name="synth-lung-nodule-mhd",
        fmt="MetaImage .mhd + .raw",
        task="detection",
        dimension="3D",
        modality="CT",
        layout="subset folders of .mhd/.raw pairs; one annotation CSV",
        traps=(
            "nodule centres in world mm (needs origin and spacing)",
            "diameter instead of a box",
            ".raw payload beside the header",
        ),
        classes=("nodule",),
        anatomy="Lung (Chest)",
        leaf_task="lung_nodule_detection",
    )
)
def lung_nodule_mhd(ctx: BuildContext) -> list[SynthSample]:
    """LUNA-like scans: ``annotations.csv`` gives world coordinates; the nodule sits on the middle slice."""
    samples = []
    rows = ["seriesuid,coordX,coordY,coordZ,diameter_mm"]
    spacing = (0.7, 0.7, 2.5)
    for i in range(ctx.n):
        uid = f"1.3.6.1.4.1.14519.5.2.1.6279.6001.{int(ctx.rng.integers(10**11, 10**12))}"
        z, h, w = 16, 96, 96
        origin = (-180.0 + i, -160.0 - 2 * i, -300.0 + 5 * i)
        hu = np.full((z, h, w), -1000.0)
        hu[ph.ellipsoid((z, h, w), (z / 2, h / 2, w / 2), (z * 2, h * 0.45, w * 0.47))] = 40.0
        for cx in (0.3, 0.7):
            hu[ph.ellipsoid((z, h, w), (z / 2, h / 2, w * cx), (z * 2, h * 0.33, w * 0.17))] = -850.0
        cy, cx = (
            float(ctx.rng.uniform(35, 60)),
            float(ctx.rng.choice([ctx.rng.uniform(22, 30), ctx.rng.uniform(66, 74)])),
        )
        radius_px = float(ctx.rng.uniform(3.5, 6.0))
        nodule = ph.ellipsoid(
            (z, h, w), (z // 2, cy, cx), (radius_px * spacing[0] / spacing[2] + 0.6, radius_px, radius_px)
        )
        hu[nodule] = 30.0
        hu += ph.texture(ctx.rng, hu.shape, 1.0, 15.0)
        rel = f"data/subset{i % 2}/{uid}.mhd"
        wf.write_itk(ctx.path(rel), np.asarray(np.rint(hu), dtype=np.int16), spacing, origin)
        world = (origin[0] + cx * spacing[0], origin[1] + cy * spacing[1], origin[2] + (z // 2) * spacing[2])
        rows.append(f"{uid},{world[0]:.4f},{world[1]:.4f},{world[2]:.4f},{2 * radius_px * spacing[0]:.4f}")
        box = ph.bbox(nodule[z // 2])
        samples.append(
            SynthSample.detection(
                rel,
                uid,
                (w, h),
                [box],
                "nodule",
                "data/annotations.csv",
                volume_shape=(z, h, w),
                spacing=spacing,
                slice_index=z // 2,
            )
        )
    wf.write_text(ctx.path("data/annotations.csv"), "\n".join(rows) + "\n")
    return samples


@dataset(
    DatasetSpec(
        name="synth-abdomen-nrrd",
        fmt="NRRD",
        task="segmentation",
        dimension="3D",
        modality="CT",
        layout="flat; image and .seg.nrrd label side by side",
        traps=(
            ".nrrd extension is not stripped by the scorer's stem rule",
            "label volume with a double extension",
        ),
        classes=("background", "spleen"),
        anatomy="Spleen (Abdomen)",
        leaf_task="spleen_segmentation",
    )
)
def abdomen_nrrd(ctx: BuildContext) -> list[SynthSample]:
    """CT volumes as NRRD with ``.seg.nrrd`` label volumes beside them."""
    samples = []
    for i in range(ctx.n):
        sid = f"abd_{3 + 5 * i:03d}"
        hu, labels = ph.ct_volume(ctx.rng, (16, 64, 64), organ_hu=50.0, lesion=False)
        rel = f"data/volumes/{sid}_ct.nrrd"
        mask_rel = f"data/volumes/{sid}_spleen.seg.nrrd"
        wf.write_itk(ctx.path(rel), np.asarray(np.rint(hu), dtype=np.int16), (0.8, 0.8, 4.0))
        wf.write_itk(ctx.path(mask_rel), labels, (0.8, 0.8, 4.0))
        samples.append(SynthSample.segmentation(rel, sid, labels, mask_rel, spacing=(0.8, 0.8, 4.0)))
    return samples

"""Array-container datasets: .npy, .npz (by key and by record index), .h5, .mat v5 / v7.3, parquet."""

from __future__ import annotations

import numpy as np

from testbed.synth import phantoms as ph
from testbed.synth import write_files as wf
from testbed.synth.spec import BuildContext, DatasetSpec, SynthSample, dataset


@dataset(
    DatasetSpec(
        name="synth-fundus-npy",
        fmt="NumPy .npy",
        task="segmentation",
        dimension="2D",
        modality="Fundus",
        layout="images/ and masks/ siblings of .npy arrays",
        traps=("RGB array in (H, W, C) order", "masks are arrays, not images"),
        classes=("background", "optic disc", "optic cup"),
        anatomy="Retina (Eye)",
        leaf_task="optic_disc_cup_segmentation",
    )
)
def fundus_npy(ctx: BuildContext) -> list[SynthSample]:
    """Fundus photographs as uint8 ``(H, W, 3)`` arrays; disc/cup label maps as ``.npy``."""
    samples = []
    h, w = 96, 96
    for i in range(ctx.n):
        sid = f"fundus_{12 + 5 * i:03d}"
        img = ph.rgb((170, 70, 30), (h, w)) + ph.texture(ctx.rng, (h, w), 4.0, 10.0)[..., None]
        img[~ph.ellipse((h, w), (h / 2, w / 2), (h * 0.48, w * 0.48))] = 0.0
        cy, cx = h / 2 + ctx.rng.uniform(-8, 8), w * ctx.rng.choice([0.32, 0.68])
        disc = ph.ellipse((h, w), (cy, cx), (11, 10))
        cup = ph.ellipse((h, w), (cy, cx), (5, 4.5))
        labels = np.zeros((h, w), dtype=np.uint8)
        labels[disc], labels[cup] = 1, 2
        img[disc], img[cup] = (240, 190, 120), (255, 235, 190)
        rel = f"data/images/{sid}.npy"
        mask_rel = f"data/masks/{sid}_disc_cup.npy"
        wf.write_npy(ctx.path(rel), ph.to_uint8(img))
        wf.write_npy(ctx.path(mask_rel), labels)
        samples.append(SynthSample.segmentation(rel, sid, labels, mask_rel))
    return samples


@dataset(
    DatasetSpec(
        name="synth-spine-npz",
        fmt="NumPy .npz (by key)",
        task="segmentation",
        dimension="3D",
        modality="MRI",
        layout="one .npz per subject with image/label/spacing keys",
        traps=("image and mask in one container, chosen by key", "several vertebrae per volume"),
        classes=("background", "vertebra"),
        anatomy="Spine (Back)",
        leaf_task="vertebra_segmentation",
    )
)
def spine_npz(ctx: BuildContext) -> list[SynthSample]:
    """Sagittal-ish spine MR volumes; ``image``, ``label`` and ``spacing`` live in one ``.npz``."""
    samples = []
    for i in range(ctx.n):
        sid = f"spine_{19 + 2 * i:03d}"
        z, h, w = 14, 96, 64
        img = 150.0 + ph.texture(ctx.rng, (z, h, w), 1.5, 25.0)
        labels = np.zeros((z, h, w), dtype=np.uint8)
        zc = z * ctx.rng.uniform(0.4, 0.6)
        for k in range(4):
            body = ph.ellipsoid((z, h, w), (zc, 14 + 22 * k, w / 2), (z * 0.3, 8, 14))
            img[body] += 450.0
            labels[body] = 1
        rel = f"data/subjects/{sid}.npz"
        wf.write_npz(
            ctx.path(rel),
            {
                "image": np.asarray(img, dtype=np.float32),
                "label": labels,
                "spacing": np.asarray([1.0, 1.0, 3.3]),
            },
        )
        samples.append(
            SynthSample.segmentation(rel, sid, labels, rel, spacing=(1.0, 1.0, 3.3), read={"key": "image"})
        )
    return samples


@dataset(
    DatasetSpec(
        name="synth-organ-npz-shards",
        fmt="NumPy .npz (by index)",
        task="classification",
        dimension="2D",
        modality="CT",
        layout="shards of stacked records; records.csv maps case ids to shard and row",
        traps=(
            "several manifest lines share one file",
            "record chosen by index (records.csv / manifest order)",
            "the case id, not the file name, identifies the sample",
        ),
        classes=("liver", "kidney", "spleen"),
        anatomy="Abdomen (Abdomen)",
        leaf_task="organ_classification",
    )
)
def organ_shards(ctx: BuildContext) -> list[SynthSample]:
    """MedMNIST-like shards: ``images`` ``(K, H, W)``, ``labels`` ``(K,)`` and ``case_ids``;
    4 records per shard."""
    per = 4
    samples = []
    rows = ["case_id,shard,index,label"]
    for s in range((ctx.n + per - 1) // per):
        imgs, labs, ids = [], [], []
        for k in range(per):
            i = s * per + k
            label = int(ctx.rng.integers(0, 3))
            crop = 90.0 + ph.texture(ctx.rng, (64, 64), 1.5, 18.0)
            crop[ph.ellipse((64, 64), (32, 32), [(24, 20), (18, 10), (14, 16)][label])] += [40, 110, 20][
                label
            ]
            imgs.append(ph.to_uint8(crop))
            labs.append(label)
            ids.append(f"organ-{500 + 9 * i}")
            rows.append(f"{ids[-1]},shard_{s:02d}.npz,{k},{label}")
            if i < ctx.n:
                samples.append(
                    SynthSample(
                        f"data/organ_shards/shard_{s:02d}.npz",
                        ids[-1],
                        (64, 64),
                        label=label,
                        read={"key": "images", "index": k},
                        source_stem=ids[-1],
                        oracle_extra={"sample_id": ids[-1], "record_index": k},
                    )
                )
        wf.write_npz(
            ctx.path(f"data/organ_shards/shard_{s:02d}.npz"),
            {
                "images": np.stack(imgs),
                "labels": np.asarray(labs, dtype=np.int64),
                "case_ids": np.asarray(ids),
            },
        )
    wf.write_text(ctx.path("data/records.csv"), "\n".join(rows) + "\n")
    wf.write_text(ctx.path("data/README.txt"), "labels: 0 = liver, 1 = kidney, 2 = spleen\n")
    return samples


@dataset(
    DatasetSpec(
        name="synth-glioma-h5",
        fmt="HDF5 .h5",
        task="segmentation",
        dimension="2D",
        modality="MRI",
        layout="flat; image and mask datasets in one .h5 per slice",
        traps=("image and mask in one file", "float32 MR intensities"),
        classes=("background", "edema", "tumor core"),
        anatomy="Brain (Head)",
        leaf_task="glioma_segmentation",
    )
)
def glioma_h5(ctx: BuildContext) -> list[SynthSample]:
    """Axial MR slices with ``/image`` and ``/mask`` in one HDF5 file."""
    samples = []
    for i in range(ctx.n):
        sid = f"glioma_{12 + 3 * i:03d}_z{40 + i}"
        vol, labels = ph.mr_volume(ctx.rng, (9, 96, 96), n_lesion_labels=2)
        k = ph.largest_slice(labels)  # the stored 2D slice is the lesion's largest cross-section
        rel = f"data/h5/{sid}.h5"
        wf.write_h5(
            ctx.path(rel),
            {"image": np.asarray(vol[k], dtype=np.float32), "mask": labels[k]},
            {"patient": sid[:10]},
        )
        samples.append(SynthSample.segmentation(rel, sid, labels[k], rel, read={"key": "image"}))
    return samples


@dataset(
    DatasetSpec(
        name="synth-elastography-mat",
        fmt="MATLAB .mat v5",
        task="classification",
        dimension="2D",
        modality="Ultrasound",
        layout="per-patient folders; diagnosis CSV joined by patient id",
        traps=(
            "several arrays per file (Bmode is the image; displacement/velocity are maps)",
            "labels joined by patient id",
        ),
        classes=("benign", "malignant"),
        anatomy="Breast (Chest)",
        leaf_task="breast_lesion_classification",
    )
)
def elastography_mat(ctx: BuildContext) -> list[SynthSample]:
    """B-mode plus elastography maps in MAT v5; ``diagnosis.csv`` holds the histology result."""
    rows = ["patient,histology,age"]
    samples = []
    for i in range(ctx.n):
        pid = f"PT-{4 + 3 * i:04d}"
        label = int(ctx.rng.integers(0, 2))
        bmode = 50.0 + np.abs(ph.texture(ctx.rng, (80, 96), 0.6, 40.0))
        les = ph.ellipse((80, 96), (40, 48), (14, 20 - 6 * label), 0.3 * label)
        bmode[les] *= 0.35
        stiff = np.where(les, 5.0 + 40.0 * label, 2.0)
        rel = f"data/elastography/{pid}/{pid}_scan.mat"
        wf.write_mat5(
            ctx.path(rel),
            {"Bmode": ph.to_uint8(bmode), "displacement": stiff * 0.01, "velocity": stiff * 0.2},
        )
        rows.append(f"{pid},{['benign', 'malignant'][label]},{40 + i}")
        samples.append(SynthSample(rel, pid, (96, 80), label=label, read={"key": "Bmode"}))
    wf.write_text(ctx.path("data/diagnosis.csv"), "\n".join(rows) + "\n")
    return samples


@dataset(
    DatasetSpec(
        name="synth-knee-mr-mat73",
        fmt="MATLAB .mat v7.3",
        task="classification",
        dimension="2D",
        modality="MRI",
        layout="flat; labels in a JSON table",
        traps=("v7.3 is HDF5 with a MATLAB header (scipy cannot read it)", "column-major storage"),
        classes=("intact meniscus", "meniscal tear"),
        anatomy="Knee (Lower limb)",
        leaf_task="meniscus_classification",
    )
)
def knee_mat73(ctx: BuildContext) -> list[SynthSample]:
    """Reconstructed knee slices as MAT v7.3 (``recon`` is square, so the transposition is harmless)."""
    table = {}
    samples = []
    for i in range(ctx.n):
        sid = f"knee_recon_{12 + 7 * i:03d}"
        label = int(ctx.rng.integers(0, 2))
        img = 0.1 + np.abs(ph.texture(ctx.rng, (80, 80), 1.5, 0.05))
        img[ph.ellipse((80, 80), (28, 40), (14, 30))] = 0.8
        img[ph.ellipse((80, 80), (55, 40), (14, 26))] = 0.75
        men = ph.ellipse((80, 80), (42, 40), (3, 22))
        img[men] = 0.05
        if label:
            img[41:44, 38:42] = 0.7
        rel = f"data/recon/{sid}.mat"
        wf.write_mat73(ctx.path(rel), {"recon": np.asarray(img, dtype=np.float64)})
        table[f"{sid}.mat"] = {"label": label, "label_name": ["intact meniscus", "meniscal tear"][label]}
        samples.append(SynthSample(rel, sid, (80, 80), label=label, read={"key": "recon"}))
    wf.write_json(ctx.path("data/labels.json"), table)
    return samples


@dataset(
    DatasetSpec(
        name="synth-pneumonia-parquet",
        fmt="Parquet (PNG bytes)",
        task="classification",
        dimension="2D",
        modality="X-ray",
        layout="one parquet row per record; a .mat preview beside each",
        traps=(
            "image bytes inside a table column",
            "decoy .mat beside the .parquet that holds the record",
            "label and label_name columns",
        ),
        classes=("normal", "pneumonia"),
        anatomy="Lung (Chest)",
        leaf_task="pneumonia_classification",
    )
)
def pneumonia_parquet(ctx: BuildContext) -> list[SynthSample]:
    """Chest X-rays stored as PNG bytes in a parquet column, each with a decoy ``.mat`` preview."""
    samples = []
    for i in range(ctx.n):
        sid = f"rec_{80 + 6 * i:04d}"
        label = int(ctx.rng.integers(0, 2))
        img = 170.0 + ph.texture(ctx.rng, (96, 96), 2.0, 10.0)
        for cx in (0.3, 0.7):
            img[ph.ellipse((96, 96), (46, 96 * cx), (32, 16))] = 45.0
        if label:
            img[ph.ellipse((96, 96), (58, 30), (10, 9))] = 140.0
        pixels = ph.to_uint8(img)
        rel = f"data/records/{sid}.parquet"
        wf.write_parquet(
            ctx.path(rel),
            {
                "image": [wf.png_bytes(pixels)],
                "label": [label],
                "label_name": [["normal", "pneumonia"][label]],
                "patient_id": [sid],
            },
        )
        wf.write_mat5(ctx.path(f"data/records/{sid}.mat"), {"preview": pixels[::3, ::3]})
        samples.append(SynthSample(rel, sid, (96, 96), label=label, read={"key": "image", "index": 0}))
    return samples

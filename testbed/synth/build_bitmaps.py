"""Bitmap datasets: 16-bit and multi-page TIFF, JPEG, PNG (class folders, COCO), BMP + YOLO, 16-bit PGM."""

from __future__ import annotations

from typing import Any

import numpy as np

from testbed.synth import phantoms as ph
from testbed.synth import write_files as wf
from testbed.synth.spec import BuildContext, DatasetSpec, SynthSample, dataset


def _cells(ctx: BuildContext, shape: tuple[int, int], n: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """A 16-bit fluorescence field with ``n`` nuclei (background ~800, nuclei ~9000-20000)."""
    objs = ph.scene2d(ctx.rng, shape, n, (4.0, 9.0), margin=3)
    img = 800.0 + ph.texture(ctx.rng, shape, 2.0, 120.0)
    for obj in objs:
        img[obj] += ctx.rng.uniform(9000, 20000)
    return img, objs


@dataset(
    DatasetSpec(
        name="synth-nuclei-tiff16",
        fmt="16-bit TIFF",
        task="segmentation",
        dimension="2D",
        modality="Microscopy",
        layout="raw/ images, annotations/ masks with other names",
        traps=(
            "16-bit intensities need windowing",
            "mask name does not match the image (NNNN_nuclei_labels.png)",
        ),
        classes=("background", "nucleus"),
        anatomy="Cell nucleus (Cell)",
        leaf_task="nucleus_segmentation",
    )
)
def nuclei_tiff(ctx: BuildContext) -> list[SynthSample]:
    """Fluorescence fields as uint16 TIFF; binary nucleus masks as PNG under different names."""
    samples = []
    for i in range(ctx.n):
        num = 7 + 6 * i
        img, objs = _cells(ctx, (96, 128), 8)
        labels = np.zeros((96, 128), dtype=np.uint8)
        for obj in objs:
            labels[obj] = 1
        rel = f"data/raw/img_{num:04d}.tif"
        mask_rel = f"data/annotations/{num:04d}_nuclei_labels.png"
        wf.write_tiff(ctx.path(rel), np.asarray(np.clip(img, 0, 65535), dtype=np.uint16))
        wf.write_pillow(ctx.path(mask_rel), labels * 255)
        samples.append(
            SynthSample.segmentation(rel, f"img_{num:04d}", labels, mask_rel, spacing=(0.65, 0.65))
        )
    return samples


@dataset(
    DatasetSpec(
        name="synth-confocal-stack-tiff",
        fmt="multi-page TIFF",
        task="classification",
        dimension="3D",
        modality="Microscopy",
        layout="flat; the class is part of the file name",
        traps=("label encoded in the file name", "multi-page stack is a volume (middle page)"),
        classes=("interphase", "mitotic", "apoptotic"),
        anatomy="Cell (Cell)",
        leaf_task="cell_phase_classification",
    )
)
def confocal_stack(ctx: BuildContext) -> list[SynthSample]:
    """Z-stacks of one cell, one TIFF page per slice; ``cell_<n>_<class>.tif``."""
    names = ("interphase", "mitotic", "apoptotic")
    samples = []
    for i in range(ctx.n):
        label = int(ctx.rng.integers(0, 3))
        z, h, w = 12, 64, 64
        vol = 500.0 + ph.texture(ctx.rng, (z, h, w), 1.5, 80.0)
        radii = [(z * 0.4, 20, 20), (z * 0.3, 12, 24), (z * 0.25, 9, 9)][label]
        vol[ph.ellipsoid((z, h, w), (z / 2, h / 2, w / 2), radii)] += 12000.0
        rel = f"data/stacks/cell_{40 + 3 * i:03d}_{names[label]}.tif"
        wf.write_tiff(ctx.path(rel), np.asarray(np.clip(vol, 0, 65535), dtype=np.uint16), pages=True)
        samples.append(
            SynthSample.stack(rel, f"cell_{40 + 3 * i:03d}", (z, h, w), label=label, spacing=(0.1, 0.1, 0.3))
        )
    return samples


@dataset(
    DatasetSpec(
        name="synth-dermoscopy-jpg",
        fmt="JPEG (RGB)",
        task="classification",
        dimension="2D",
        modality="Dermoscopy",
        layout="images/ + thumbnails/ + metadata.csv",
        traps=(
            "several plausible label columns (dx, diagnosis, benign_malignant)",
            "thumbnail decoys",
            "labels joined by image id",
        ),
        classes=("melanocytic nevus", "melanoma", "benign keratosis"),
        anatomy="Skin (Integument)",
        leaf_task="skin_lesion_classification",
    )
)
def dermoscopy(ctx: BuildContext) -> list[SynthSample]:
    """RGB dermoscopy images; ``diagnosis`` is the label, the other columns are plausible distractors."""
    codes = ("nv", "mel", "bkl")
    names = ("melanocytic nevus", "melanoma", "benign keratosis")
    rows = ["image_id,patient_id,dx,dx_type,diagnosis,benign_malignant,anatom_site"]
    samples = []
    for i in range(ctx.n):
        label = int(ctx.rng.integers(0, 3))
        img_id = f"ISIC_{24306 + 37 * i:07d}"
        img = ph.rgb((222, 180, 160), (96, 128)) + ph.texture(ctx.rng, (96, 128), 3.0, 8.0)[..., None]
        les = ph.ellipse(
            (96, 128),
            (48 + ctx.rng.uniform(-8, 8), 64 + ctx.rng.uniform(-10, 10)),
            (22 + 4 * label, 28),
            ctx.rng.uniform(0, np.pi),
        )
        img[les] = [(150, 100, 70), (70, 40, 30), (170, 140, 100)][label]
        img += ph.texture(ctx.rng, (96, 128, 3), 1.0, 4.0)
        rel = f"data/images/{img_id}.jpg"
        wf.write_pillow(ctx.path(rel), ph.to_uint8(img))
        wf.write_pillow(ctx.path(f"data/thumbnails/{img_id}_thumb.jpg"), ph.to_uint8(img[::4, ::4]))
        rows.append(
            f"{img_id},IP_{7000 + i},{codes[label]},histo,{names[label]},"
            f"{'malignant' if label == 1 else 'benign'},trunk"
        )
        samples.append(SynthSample(rel, img_id, (128, 96), label=label))
    wf.write_text(ctx.path("data/metadata.csv"), "\n".join(rows) + "\n")
    return samples


@dataset(
    DatasetSpec(
        name="synth-histology-png",
        fmt="PNG (RGB)",
        task="classification",
        dimension="2D",
        modality="Histopathology",
        layout="class-per-folder with spaces and mixed case",
        traps=("class is the folder name", "spaces and mixed case in paths"),
        classes=("Adipose", "Normal Mucosa", "Tumor Epithelium"),
        anatomy="Colon (Abdomen)",
        leaf_task="tissue_type_classification",
    )
)
def histology(ctx: BuildContext) -> list[SynthSample]:
    """H&E-like tiles in ``Kather Tiles/TRAIN/<Class Name>/``."""
    names = ("Adipose", "Normal Mucosa", "Tumor Epithelium")
    codes = ("ADI", "NORM", "TUM")
    samples = []
    for i in range(ctx.n):
        label = i % 3
        img = ph.rgb((235, 200, 225), (64, 64))
        for obj in ph.scene2d(
            ctx.rng, (64, 64), [3, 10, 25][label], [(10, 14), (3, 6), (2, 4)][label], margin=1
        ):
            img[obj] = [(250, 245, 250), (120, 60, 150), (90, 30, 120)][label]
        img += ph.texture(ctx.rng, (64, 64, 3), 1.0, 6.0)
        rel = f"data/Kather Tiles/TRAIN/{names[label]}/{codes[label]}-TCGA {1000 + 17 * i}.png"
        wf.write_pillow(ctx.path(rel), ph.to_uint8(img))
        samples.append(SynthSample(rel, f"TCGA {1000 + 17 * i}", (64, 64), label=label))
    return samples


@dataset(
    DatasetSpec(
        name="synth-thyroid-us-bmp",
        fmt="BMP",
        task="detection",
        dimension="2D",
        modality="Ultrasound",
        layout="images/ and labels/ siblings (YOLO)",
        traps=("YOLO boxes: class cx cy w h normalised to 0..1", "class ids in classes.txt"),
        classes=("nodule",),
        anatomy="Thyroid (Neck)",
        leaf_task="thyroid_nodule_detection",
    )
)
def thyroid_bmp(ctx: BuildContext) -> list[SynthSample]:
    """Grey ultrasound frames as BMP with YOLO label files."""
    samples = []
    h, w = 96, 128
    for i in range(ctx.n):
        sid = f"us_{12 + 4 * i:04d}"
        img = 60.0 + np.abs(ph.texture(ctx.rng, (h, w), 0.7, 35.0))
        objs = ph.scene2d(ctx.rng, (h, w), int(ctx.rng.integers(1, 3)), (7.0, 13.0), margin=8)
        lines, boxes = [], []
        for obj in objs:
            img[obj] *= 0.3
            x, y, bw, bh = ph.bbox(obj)
            boxes.append([x, y, bw, bh])
            lines.append(f"0 {(x + bw / 2) / w:.6f} {(y + bh / 2) / h:.6f} {bw / w:.6f} {bh / h:.6f}")
        rel = f"data/images/{sid}.bmp"
        wf.write_pillow(ctx.path(rel), ph.to_uint8(img))
        wf.write_text(ctx.path(f"data/labels/{sid}.txt"), "\n".join(lines) + "\n")
        samples.append(SynthSample.detection(rel, sid, (w, h), boxes, "nodule", f"data/labels/{sid}.txt"))
    wf.write_text(ctx.path("data/classes.txt"), "nodule\n")
    return samples


@dataset(
    DatasetSpec(
        name="synth-hand-xray-pgm",
        fmt="PGM (16-bit)",
        task="classification",
        dimension="2D",
        modality="X-ray",
        layout="per-patient folders; labels in a TSV joined by patient id",
        traps=("TSV label table", "16-bit PGM", "bone age column is a distractor"),
        classes=("normal", "fracture"),
        anatomy="Hand (Upper limb)",
        leaf_task="fracture_classification",
    )
)
def hand_pgm(ctx: BuildContext) -> list[SynthSample]:
    """Hand radiographs as 16-bit PGM; ``labels.tsv`` holds ``finding`` per patient."""
    rows = ["patient_id\tside\tbone_age_months\tfinding"]
    samples = []
    for i in range(ctx.n):
        pid = f"HX-{31 + 6 * i:04d}"
        label = int(ctx.rng.integers(0, 2))
        img = 3000.0 + ph.texture(ctx.rng, (112, 96), 2.0, 200.0)
        for k in range(4):
            bone = ph.ellipse((112, 96), (56, 22 + 17 * k), (40, 5), 0.05 * (k - 2))
            img[bone] = 42000.0
            if label and k == 2:
                img[54:57, 20 + 17 * k : 25 + 17 * k] = 6000.0
        rel = f"data/pgm/{pid}/{pid}_left.pgm"
        wf.write_pillow(ctx.path(rel), np.asarray(np.clip(img, 0, 65535), dtype=np.uint16))
        rows.append(f"{pid}\tleft\t{100 + 5 * i}\t{['normal', 'fracture'][label]}")
        samples.append(SynthSample(rel, pid, (96, 112), label=label))
    wf.write_text(ctx.path("data/labels.tsv"), "\n".join(rows) + "\n")
    return samples


@dataset(
    DatasetSpec(
        name="synth-polyp-coco-png",
        fmt="PNG + COCO JSON",
        task="detection",
        dimension="2D",
        modality="Endoscopy",
        layout="frames/ + one COCO instances file",
        traps=("COCO image ids differ from file order", "boxes keyed by image id, not file name"),
        classes=("polyp",),
        anatomy="Colon (Abdomen)",
        leaf_task="polyp_detection",
    )
)
def polyp_coco(ctx: BuildContext) -> list[SynthSample]:
    """Colonoscopy frames with polyps; ``annotations/instances.json`` is COCO."""
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    samples = []
    h, w = 96, 128
    for i in range(ctx.n):
        name = f"polyp_{210 + 3 * i:04d}.png"
        img = ph.rgb((190, 80, 70), (h, w)) + ph.texture(ctx.rng, (h, w), 4.0, 15.0)[..., None]
        boxes = []
        for obj in ph.scene2d(ctx.rng, (h, w), int(ctx.rng.integers(1, 3)), (8.0, 15.0), margin=6):
            img[obj] = (230, 150, 120)
            boxes.append(ph.bbox(obj))
        image_id = 5000 + 13 * (ctx.n - i)
        images.append({"id": image_id, "file_name": name, "width": w, "height": h})
        wf.add_coco_boxes(annotations, image_id, boxes, [1] * len(boxes))
        rel = f"data/frames/{name}"
        wf.write_pillow(ctx.path(rel), ph.to_uint8(img))
        samples.append(
            SynthSample.detection(rel, name[:-4], (w, h), boxes, "polyp", "data/annotations/instances.json")
        )
    wf.write_json(
        ctx.path("data/annotations/instances.json"),
        {
            "images": images,
            "annotations": annotations,
            "categories": [{"id": 1, "name": "polyp", "supercategory": "lesion"}],
        },
    )
    return samples

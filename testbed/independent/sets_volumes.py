"""Independent datasets from the MNI ICBM152 template: Decathlon, COCO, ImageFolder and TransUNet layouts.

Each layout follows the convention of the community that uses it (the files and key names their loaders
expect), not a layout chosen for this project. Labels come from the template's own tissue maps: a voxel is
grey (white) matter where that probability map is at least one half and above the other.
"""

from __future__ import annotations

import json

import numpy as np

from testbed.independent.sources import mni_volume
from testbed.independent.spec import IndependentSample, independent_dataset
from testbed.realfiles.spec import RealContext
from testbed.synth.spec import DatasetSpec
from testbed.synth.write_files import (
    add_coco_boxes,
    write_nifti,
    write_npz,
    write_pillow,
    write_text,
    write_tiff,
)

_TISSUE = ("background", "grey matter", "white matter")
_MIDLINE_X = 98  # voxel column of x = 0 mm in the template's affine (x increases to the subject's right)


def _tissue(gm: np.ndarray, wm: np.ndarray) -> np.ndarray:
    """0 background, 1 grey matter, 2 white matter (probability >= 0.5 and the larger of the two)."""
    labels = np.zeros(gm.shape, dtype=np.uint8)
    labels[(gm >= 128) & (gm >= wm)] = 1
    labels[(wm >= 128) & (wm > gm)] = 2
    return labels


def _json(obj: object) -> str:
    return json.dumps(obj, indent=4) + "\n"


@independent_dataset(
    DatasetSpec(
        name="task11-braintissue",
        fmt="NIfTI (.nii.gz) volumes",
        task="segmentation",
        dimension="3D",
        modality="MRI",
        layout="Medical Segmentation Decathlon: dataset.json, imagesTr/, labelsTr/, imagesTs/",
        traps=("labels named in dataset.json only", "unlabelled imagesTs", "2 mm crops of one template"),
        classes=_TISSUE,
        anatomy="Brain (Head)",
        leaf_task="tissue segmentation",
    ),
    title="BrainTissue",
)
def msd_brain_tissue(ctx: RealContext) -> list[IndependentSample]:
    """Five labelled and two unlabelled 2 mm crops, with intensities rescaled as different scanners would."""
    t1, _ = mni_volume("t1")
    labels = _tissue(mni_volume("gm")[0], mni_volume("wm")[0])[::2, ::2, ::2]
    t1 = t1[::2, ::2, ::2]
    training, test, samples = [], [], []
    for i in range(7):
        z0 = 12 + 7 * i
        image = (t1[z0 : z0 + 40].astype(np.int16) * (2 + i) + 50 * i).astype(np.int16)
        case = f"brain_{i + 1:03d}"
        if i < 5:
            img_rel, lab_rel = f"imagesTr/{case}.nii.gz", f"labelsTr/{case}.nii.gz"
            write_nifti(ctx.path(f"data/{img_rel}"), image, (2.0, 2.0, 2.0))
            write_nifti(ctx.path(f"data/{lab_rel}"), labels[z0 : z0 + 40], (2.0, 2.0, 2.0))
            training.append({"image": f"./{img_rel}", "label": f"./{lab_rel}"})
            samples.append(
                IndependentSample(
                    manifest_path=f"data/{img_rel}",
                    subject_id=case,
                    mask_path=f"data/{lab_rel}",
                    extra={"mask_file": f"data/{lab_rel}"},
                    origin="nilearn: MNI ICBM152 2009a T1 + GM/WM maps",
                )
            )
        else:
            write_nifti(ctx.path(f"data/imagesTs/{case}.nii.gz"), image, (2.0, 2.0, 2.0))
            test.append(f"./imagesTs/{case}.nii.gz")
    doc = {
        "name": "BrainTissue",
        "description": "Grey and white matter of the adult brain on T1-weighted MRI",
        "reference": "MNI ICBM152 non-linear symmetric 2009a atlas",
        "licence": "see the atlas licence",
        "release": "1.0 2026",
        "tensorImageSize": "3D",
        "modality": {"0": "T1w"},
        "labels": {str(i): name for i, name in enumerate(_TISSUE)},
        "numTraining": len(training),
        "numTest": len(test),
        "training": training,
        "test": test,
    }
    write_text(ctx.path("data/dataset.json"), _json(doc))
    return samples


def _boxes(tissue: np.ndarray) -> tuple[list[list[int]], list[int]]:
    """COCO boxes of the brain tissue left and right of the midline (class 0 left, 1 right)."""
    boxes, labels = [], []
    for label, cols in ((0, slice(0, _MIDLINE_X)), (1, slice(_MIDLINE_X, tissue.shape[1]))):
        ys, xs = np.nonzero(tissue[:, cols])
        if ys.size:
            x0 = int(xs.min()) + (cols.start or 0)
            boxes.append([x0, int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)])
            labels.append(label)
    return boxes, labels


@independent_dataset(
    DatasetSpec(
        name="coco-hemispheres",
        fmt="PNG slices + COCO JSON",
        task="detection",
        dimension="2D",
        modality="MRI",
        layout="COCO: train2017/<12-digit id>.png, annotations/instances_train2017.json",
        traps=("boxes and class names only in the COCO JSON", "category ids start at 1"),
        classes=("left hemisphere", "right hemisphere"),
        anatomy="Brain (Head)",
        leaf_task="hemisphere detection",
    ),
    title="Brain hemispheres (COCO)",
)
def coco_hemispheres(ctx: RealContext) -> list[IndependentSample]:
    """Six axial slices, anterior up; a box per hemisphere around its tissue."""
    t1, _ = mni_volume("t1")
    tissue = _tissue(mni_volume("gm")[0], mni_volume("wm")[0]) > 0
    images: list[dict[str, object]] = []
    annotations: list[dict[str, object]] = []
    samples: list[IndependentSample] = []
    for i, z in enumerate(range(55, 115, 10)):
        pixels, mask = np.flipud(t1[z]), np.flipud(tissue[z])
        image_id = 100 + 7 * i
        name = f"{image_id:012d}.png"
        write_pillow(ctx.path(f"data/train2017/{name}"), np.ascontiguousarray(pixels))
        images.append(
            {"id": image_id, "file_name": name, "width": pixels.shape[1], "height": pixels.shape[0]}
        )
        boxes, labels = _boxes(mask)
        add_coco_boxes(annotations, image_id, boxes, [label + 1 for label in labels])
        samples.append(
            IndependentSample(
                manifest_path=f"data/train2017/{name}",
                subject_id=f"{image_id:012d}",
                boxes=boxes,
                box_labels=labels,
                extra={"bbox_file": "data/annotations/instances_train2017.json"},
                origin="nilearn: MNI ICBM152 2009a T1 axial slice",
            )
        )
    doc = {
        "info": {"description": "Brain hemispheres (COCO)", "version": "1.0", "year": 2026},
        "licenses": [],
        "images": images,
        "annotations": annotations,
        "categories": [
            {"id": 1, "name": "left hemisphere", "supercategory": "brain"},
            {"id": 2, "name": "right hemisphere", "supercategory": "brain"},
        ],
    }
    write_text(ctx.path("data/annotations/instances_train2017.json"), json.dumps(doc))
    return samples


_PATCH_CLASSES = ("grey matter", "white matter", "non-brain")


def _patch_class(tissue: np.ndarray, gm: np.ndarray, wm: np.ndarray) -> int | None:
    """The class of a patch from its 8 x 8 centre: at least 3/4 of one tissue, or no tissue at all."""
    centre = tissue[12:20, 12:20]
    if (centre == 1).mean() >= 0.75:
        return 0
    if (centre == 2).mean() >= 0.75:
        return 1
    if int(gm[12:20, 12:20].max()) + int(wm[12:20, 12:20].max()) < 13:
        return 2
    return None


@independent_dataset(
    DatasetSpec(
        name="tissue-patches",
        fmt="TIFF patches",
        task="classification",
        dimension="2D",
        modality="MRI",
        layout="ImageFolder: train/<wnid-style folder id>/<patch>.tif + class_index.json",
        traps=("folder ids are codes, names in class_index.json",),
        classes=_PATCH_CLASSES,
        anatomy="Brain (Head)",
        leaf_task="tissue patch classification",
    ),
    title="MNI tissue patches",
)
def tissue_patches(ctx: RealContext) -> list[IndependentSample]:
    """Nine 32 x 32 patches of one axial slice, three per class, found by a fixed raster scan."""
    t1, _ = mni_volume("t1")
    gm, wm = mni_volume("gm")[0][85], mni_volume("wm")[0][85]
    tissue = _tissue(gm, wm)
    codes = ("t0001", "t0002", "t0003")
    index = {str(i): [codes[i], name] for i, name in enumerate(_PATCH_CLASSES)}
    write_text(ctx.path("data/class_index.json"), json.dumps(index))
    found: dict[int, list[tuple[int, int]]] = {0: [], 1: [], 2: []}
    for y in range(0, t1.shape[1] - 32, 12):
        for x in range(0, t1.shape[2] - 32, 12):
            c = _patch_class(
                tissue[y : y + 32, x : x + 32], gm[y : y + 32, x : x + 32], wm[y : y + 32, x : x + 32]
            )
            if c is not None and len(found[c]) < 3:
                found[c].append((y, x))
    samples = []
    for c in range(3):
        for k, (y, x) in enumerate(found[c]):
            rel = f"data/train/{codes[c]}/{codes[c]}_{y:03d}_{x:03d}.tif"
            write_tiff(ctx.path(rel), np.ascontiguousarray(t1[85, y : y + 32, x : x + 32]))
            samples.append(
                IndependentSample(
                    manifest_path=rel,
                    subject_id=f"{codes[c]}_{y:03d}_{x:03d}",
                    label=c,
                    origin=f"nilearn: MNI ICBM152 2009a T1 slice 85 patch {k}",
                )
            )
    return samples


@independent_dataset(
    DatasetSpec(
        name="synapse-style-npz",
        fmt="NumPy .npz slices (image, label)",
        task="segmentation",
        dimension="2D",
        modality="MRI",
        layout="TransUNet Synapse: train_npz/case<NNNN>_slice<NNN>.npz + lists/train.txt",
        traps=("image and label in one archive", "classes only in the README"),
        classes=_TISSUE,
        anatomy="Brain (Head)",
        leaf_task="tissue segmentation",
    ),
    title="Brain tissue slices (TransUNet format)",
)
def synapse_npz(ctx: RealContext) -> list[IndependentSample]:
    """Six axial slices: float32 images in [0, 1], uint8 tissue labels, as TransUNet's loader expects."""
    t1, _ = mni_volume("t1")
    tissue = _tissue(mni_volume("gm")[0], mni_volume("wm")[0])
    names, samples = [], []
    for i, z in enumerate(range(60, 120, 10)):
        name = f"case{i + 1:04d}_slice{z:03d}"
        rel = f"data/train_npz/{name}.npz"
        write_npz(ctx.path(rel), {"image": (t1[z] / 255.0).astype(np.float32), "label": tissue[z]})
        names.append(name)
        samples.append(
            IndependentSample(
                manifest_path=rel,
                subject_id=f"case{i + 1:04d}",
                read={"key": "image"},
                mask_path=rel,
                mask_read={"key": "label"},
                extra={"mask_file": rel},
                origin=f"nilearn: MNI ICBM152 2009a T1 + GM/WM slice {z}",
            )
        )
    write_text(ctx.path("data/lists/train.txt"), "".join(f"{n}\n" for n in names))
    write_text(
        ctx.path("data/README.md"),
        "# Brain tissue slices (TransUNet format)\n\nT1-weighted MRI, axial slices. Each `train_npz/*.npz` "
        "holds `image` (float32, 0-1) and `label` (uint8): 0 background, 1 grey matter, 2 white matter.\n",
    )
    return samples

"""DICOM datasets: a CT series folder beside a distractor series, MONOCHROME1 radiographs, multi-frame."""

from __future__ import annotations

import numpy as np

from testbed.synth import phantoms as ph
from testbed.synth import write_dicom as dcm
from testbed.synth import write_files as wf
from testbed.synth.spec import BuildContext, DatasetSpec, SynthSample, dataset


@dataset(
    DatasetSpec(
        name="synth-ct-liver-series",
        fmt="DICOM series",
        task="segmentation",
        dimension="3D",
        modality="CT",
        layout="nested per patient/study/series; mask NIfTI in a sibling folder",
        traps=(
            "two series in one study (localizer + target)",
            "every source file is IM0001.dcm",
            "preview PNG decoy",
            "HU via RescaleIntercept -1024",
            "spaces in series folder names",
        ),
        classes=("background", "liver", "liver tumor"),
        anatomy="Liver (Abdomen)",
        leaf_task="liver_tumor_segmentation",
    )
)
def ct_liver_series(ctx: BuildContext) -> list[SynthSample]:
    """Portal-venous CT series (target) beside a two-slice localizer; the manifest names
    the first target slice."""
    samples = []
    spacing = (0.8, 0.8, 2.5)
    for i in range(ctx.n):
        pid = f"LIVER-{101 + 7 * i:03d}"
        hu, labels = ph.ct_volume(ctx.rng, (24, 64, 64), organ_hu=62.0)
        study = f"data/Patients/{pid}/Study_20200101"
        target = f"{study}/Series_2 CT portal venous"
        stored = np.asarray(np.clip(np.rint(hu + 1024.0), 0, 4095), dtype=np.uint16)
        dcm.write_series(
            ctx.path(f"{target}/x").parent,
            stored,
            patient_id=pid,
            modality="CT",
            series_key=f"{pid}:portal",
            spacing=spacing,
            intercept=-1024.0,
            description="CT portal venous",
            body_part="ABDOMEN",
        )
        scout = np.asarray(np.clip(np.rint(hu[::12, ::2, :] + 1024.0), 0, 4095), dtype=np.uint16)
        dcm.write_series(
            ctx.path(f"{study}/Series_1 Localizer/x").parent,
            scout,
            patient_id=pid,
            modality="CT",
            series_key=f"{pid}:scout",
            spacing=(0.8, 1.6, 30.0),
            intercept=-1024.0,
            description="Localizer",
            body_part="ABDOMEN",
        )
        wf.write_pillow(ctx.path(f"{study}/preview.png"), ph.to_uint8((hu[12] + 160.0) / 400.0 * 255.0))
        mask_rel = f"data/Patients/{pid}/segmentation/{pid}_liver_seg.nii.gz"
        wf.write_nifti(ctx.path(mask_rel), labels, spacing)
        oracle_extra = {"case_id": pid, "source_sample_dir": target}
        samples.append(
            SynthSample.segmentation(
                f"{target}/IM0001.dcm",
                pid,
                labels,
                mask_rel,
                spacing=spacing,
                read_path=target,
                source_stem=pid,
                oracle_extra=oracle_extra,
            )
        )
    return samples


@dataset(
    DatasetSpec(
        name="synth-chest-xray-dicom",
        fmt="DICOM single file",
        task="detection",
        dimension="2D",
        modality="X-ray",
        layout="flat image folder; box table joined by patientId",
        traps=(
            "MONOCHROME1 (inverted grey scale)",
            "corner boxes x_min,y_min,x_max,y_max (exclusive max)",
            "TAB-separated manifest",
            "several rows per patient",
        ),
        classes=("Lung Opacity",),
        anatomy="Lung (Chest)",
        leaf_task="lung_opacity_detection",
        tab_manifest=True,
    )
)
def chest_xray_dicom(ctx: BuildContext) -> list[SynthSample]:
    """Computed radiographs stored as MONOCHROME1 with opacity boxes in a corner-convention CSV."""
    samples = []
    rows = ["patientId,x_min,y_min,x_max,y_max,Target"]
    for _i in range(ctx.n):
        pid = "-".join(
            f"{int(v):0{n}x}" for v, n in zip(ctx.rng.integers(0, 2**31, 5), (8, 4, 4, 4, 12), strict=True)
        )
        h, w = 128, 112
        display = np.full((h, w), 2600.0)
        lungs = [ph.ellipse((h, w), (h * 0.48, w * s), (h * 0.32, w * 0.17)) for s in (0.3, 0.7)]
        for lung in lungs:
            display[lung] = 900.0
        objs = ph.scene2d(ctx.rng, (h, w), int(ctx.rng.integers(1, 3)), (7.0, 12.0), margin=16)
        boxes = []
        for obj in objs:
            display[obj] += 900.0
            x, y, bw, bh = ph.bbox(obj)
            boxes.append([x, y, bw, bh])
            rows.append(f"{pid},{x},{y},{x + bw},{y + bh},1")
        display += ph.texture(ctx.rng, (h, w), 1.5, 60.0)
        stored = np.asarray(np.clip(4095.0 - display, 0, 4095), dtype=np.uint16)  # MONOCHROME1: high = dark
        rel = f"data/stage_2_train_images/{pid}.dcm"
        dcm.write_image(
            ctx.path(rel),
            stored,
            patient_id=pid,
            modality="CR",
            series_key=pid,
            photometric="MONOCHROME1",
            spacing=(0.14, 0.14),
            window=(2048.0, 4096.0),
            body_part="CHEST",
        )
        samples.append(
            SynthSample.detection(
                rel, pid, (w, h), boxes, "Lung Opacity", "data/stage_2_train_labels.csv", spacing=(0.14, 0.14)
            )
        )
    wf.write_text(ctx.path("data/stage_2_train_labels.csv"), "\n".join(rows) + "\n")
    wf.write_text(
        ctx.path("data/README.txt"),
        "Boxes: x_min,y_min are the top-left pixel; x_max,y_max are exclusive.\nTarget 1 = Lung Opacity.\n",
    )
    return samples


@dataset(
    DatasetSpec(
        name="synth-breast-tomo-multiframe",
        fmt="DICOM multi-frame",
        task="classification",
        dimension="3D",
        modality="Mammography",
        layout="per-patient folders, two views each; labels in a JSON table",
        traps=(
            "multi-frame file is a volume",
            "two views per patient, only one listed",
            "label table in JSON",
        ),
        classes=("normal", "benign", "malignant"),
        anatomy="Breast (Chest)",
        leaf_task="breast_lesion_classification",
    )
)
def breast_tomo(ctx: BuildContext) -> list[SynthSample]:
    """Tomosynthesis stacks as one multi-frame file per view; the finding lives in ``labels.json``."""
    samples = []
    table = []
    for i in range(ctx.n):
        pid = f"DBT-{3100 + 13 * i}"
        label = i % 3
        for view in ("LCC", "LMLO"):
            stack = np.full((12, 80, 64), 300.0)
            breast = ph.ellipse((80, 64), (40, 0), (38, 56))
            stack[:, breast] = 1800.0
            if label:
                les = ph.ellipsoid((12, 80, 64), (6, 40, 30), (3, 6 + 2 * label, 6 + 2 * label))
                stack[les] = 2600.0
            stack += ph.texture(ctx.rng, stack.shape, 1.0, 80.0)
            rel = f"data/DBT/{pid}/{pid}_{view}.dcm"
            dcm.write_multiframe(
                ctx.path(rel),
                np.asarray(np.clip(stack, 0, 4095), dtype=np.uint16),
                patient_id=pid,
                modality="MG",
                series_key=f"{pid}:{view}",
                spacing=(0.1, 0.1, 1.0),
                description=f"DBT {view}",
            )
            table.append(
                {
                    "PatientID": pid,
                    "View": view,
                    "File": f"{pid}_{view}.dcm",
                    "finding": ["normal", "benign", "malignant"][label],
                    "BIRADS": [1, 3, 5][label],
                }
            )
        rel = f"data/DBT/{pid}/{pid}_{'LCC' if i % 2 == 0 else 'LMLO'}.dcm"
        samples.append(SynthSample.stack(rel, pid, (12, 80, 64), label=label, spacing=(0.1, 0.1, 1.0)))
    wf.write_json(ctx.path("data/labels.json"), table)
    return samples

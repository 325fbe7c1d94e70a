"""Video datasets: an echocardiography .avi with a frame table, a laparoscopy .mp4 with per-frame masks."""

from __future__ import annotations

import numpy as np

from testbed.synth import phantoms as ph
from testbed.synth import write_files as wf
from testbed.synth.spec import BuildContext, DatasetSpec, SynthSample, dataset


@dataset(
    DatasetSpec(
        name="synth-echo-avi",
        fmt="AVI video (MJPEG)",
        task="classification",
        dimension="video",
        modality="Ultrasound",
        layout="Videos/ + FileList.csv (labels) + FrameTable.csv (the sample frame)",
        traps=("the frame table names the frame", "label column among measurement columns"),
        classes=("normal EF", "reduced EF"),
        anatomy="Heart (Chest)",
        leaf_task="ejection_fraction_classification",
    )
)
def echo_avi(ctx: BuildContext) -> list[SynthSample]:
    """Apical-view echo clips; ``FrameTable.csv`` gives the end-diastolic frame of each clip."""
    files = ["FileName,EF,ESV,EDV,Category,Split"]
    frames_rows = ["FileName,Frame,Phase"]
    samples = []
    t, h, w, fps = 16, 64, 80, 25
    for i in range(ctx.n):
        name = f"EC{int(ctx.rng.integers(0x1000, 0xFFFF)):04X}-{31 + 2 * i:06d}"
        label = int(ctx.rng.integers(0, 2))
        ed = int(ctx.rng.integers(2, t - 2))
        clip = np.zeros((t, h, w, 3))
        sector = ph.ellipse((h, w), (0, w / 2), (h * 1.0, w * 0.55))
        for k in range(t):
            frame = np.zeros((h, w))
            frame[sector] = 70.0
            phase = np.cos(2 * np.pi * (k - ed) / t)
            r = 10.0 + (3.0 if label == 0 else 1.0) * phase
            frame[ph.ellipse((h, w), (h * 0.55, w / 2), (r * 1.6, r))] = 10.0
            frame += np.abs(ph.texture(ctx.rng, (h, w), 0.8, 20.0)) * sector
            clip[k] = frame[..., None]
        rel = f"data/Dataset/A4C/Videos/{name}.avi"
        wf.write_video(ctx.path(rel), ph.to_uint8(clip), fps, "mjpeg")
        ef = 62 - 25 * label + i % 5
        files.append(f"{name},{ef},{30 + i},{80 + i},{['normal EF', 'reduced EF'][label]},TRAIN")
        frames_rows.append(f"{name}.avi,{ed},ED")
        samples.append(
            SynthSample(
                rel,
                name,
                (w, h),
                label=label,
                read={"frame": ed},
                frame_index=ed,
                n_frames=t,
                fps=float(fps),
            )
        )
    wf.write_text(ctx.path("data/Dataset/A4C/FileList.csv"), "\n".join(files) + "\n")
    wf.write_text(ctx.path("data/Dataset/A4C/FrameTable.csv"), "\n".join(frames_rows) + "\n")
    return samples


@dataset(
    DatasetSpec(
        name="synth-laparoscopy-mp4",
        fmt="MP4 video (MPEG-4)",
        task="segmentation",
        dimension="video",
        modality="Endoscopy",
        layout="videos/ + annotations/<video>/ masks + labelled_frames.csv",
        traps=(
            "only one frame per video is annotated (frame table)",
            "mask PNG named by video and frame number",
            "lossy video: masks come from the annotation, not the pixels",
        ),
        classes=("background", "instrument", "gallbladder"),
        anatomy="Gallbladder (Abdomen)",
        leaf_task="surgical_scene_segmentation",
    )
)
def laparoscopy_mp4(ctx: BuildContext) -> list[SynthSample]:
    """Laparoscopic clips with one annotated frame each (label map PNG, ids as in ``classes.json``)."""
    rows = ["video,frame,mask"]
    samples = []
    t, h, w, fps = 12, 96, 128, 25
    for i in range(ctx.n):
        vid = f"lap_case{7 + 2 * i:03d}"
        target = int(ctx.rng.integers(2, t - 2))
        clip = np.zeros((t, h, w, 3))
        organ = ph.ellipse((h, w), (h * 0.65, w * 0.45), (h * 0.22, w * 0.25))
        labels = np.zeros((h, w), dtype=np.uint8)
        for k in range(t):
            frame = ph.rgb((150, 60, 50), (h, w)) + ph.texture(ctx.rng, (h, w), 3.0, 8.0)[..., None]
            frame[organ] = (90, 120, 60)
            tool = np.zeros((h, w), dtype=bool)
            x0 = 10 + 4 * k
            tool[10 : 14 + k, x0 : x0 + 40] = True
            frame[tool] = (200, 200, 210)
            clip[k] = frame
            if k == target:
                labels[organ], labels[tool] = 2, 1
        rel = f"data/videos/{vid}.mp4"
        mask_rel = f"data/annotations/{vid}/{vid}_f{target:03d}_mask.png"
        wf.write_video(ctx.path(rel), ph.to_uint8(clip), fps, "mpeg4")
        wf.write_pillow(ctx.path(mask_rel), labels)
        rows.append(f"{vid}.mp4,{target},{vid}/{vid}_f{target:03d}_mask.png")
        samples.append(
            SynthSample.segmentation(
                rel,
                vid,
                labels,
                mask_rel,
                read={"frame": target},
                frame_index=target,
                n_frames=t,
                fps=float(fps),
            )
        )
    wf.write_text(ctx.path("data/annotations/labelled_frames.csv"), "\n".join(rows) + "\n")
    wf.write_json(
        ctx.path("data/annotations/classes.json"), {"0": "background", "1": "instrument", "2": "gallbladder"}
    )
    return samples

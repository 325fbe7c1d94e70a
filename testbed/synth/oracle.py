"""The oracle run: a perfect prediction built from the ground truth and images rendered from the raw sources.

It follows the conformance oracle's recipe (mdsbench/conformance/README.md, "oracle"): ``record`` from the
expected dataset name and ``images/<i>.png``; ``context.sample`` with the GT subject id,
``"unknown"``/``"NA"`` demographics (never ``null``, SPEC §2.2) and ``extra`` = ``expected_extra`` +
``map_type`` (+ identifying keys where the file name is shared); one spatial branch; one task branch with our
payload conventions (docs/contracts.md). Images are rendered with ``medio`` from the raw file at the GT
slice/frame, so they are what a correct agent would write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmark.answer_shape import dataset_meta, sample_annotation
from testbed.synth.groundtruth import (
    MAP_TYPE,
    class_table,
    classification_block,
    expected_extra,
    schema_variant,
)
from testbed.synth.spec import DatasetSpec, SynthSample


class OracleRenderError(RuntimeError):
    """The rendered oracle image does not have the ground truth's image size."""


def render_sample(root: Path, sample: SynthSample) -> tuple[np.ndarray, dict[str, Any]]:
    """Render the sample's image from its raw source with medio at the GT slice/frame.

    Args:
        root: Dataset folder.
        sample: The sample.

    Returns:
        ``(uint8 pixels, medio render info)``.

    Raises:
        OracleRenderError: When the rendered size differs from ``sample.image_size``.
    """
    import medio

    path = root / (sample.read_path or sample.manifest_path)
    image = medio.read(path, **sample.read)
    shown = medio.render(image, slice_index=sample.slice_index)
    size = (int(shown.pixels.shape[1]), int(shown.pixels.shape[0]))
    if size != tuple(sample.image_size):
        raise OracleRenderError(
            f"{path}: rendered {list(size)} but the ground truth says {list(sample.image_size)}"
        )
    return np.ascontiguousarray(shown.pixels), shown.info


def spatial_block(spec: DatasetSpec, sample: SynthSample) -> dict[str, Any]:
    """The three spatial branches with only the sample's dimension filled."""
    w, h = sample.image_size
    branches: dict[str, Any] = {"common": {}, "three_d": {}, "video": {}}
    if spec.dimension == "3D":
        assert sample.volume_shape is not None
        branches["three_d"] = {
            "pixel_size_px": [w, h],
            "volume_shape_voxels": list(sample.volume_shape),
            "voxel_spacing_mm": list(sample.spacing),
            "slice_axis": 0,
            "slice_index": sample.slice_index,
        }
    elif spec.dimension == "video":
        branches["video"] = {
            "pixel_size_px": [w, h],
            "n_frames": sample.n_frames,
            "fps": sample.fps,
            "frame_index": sample.frame_index,
        }
    else:
        branches["common"] = {
            "pixel_size_px": [w, h],
            "pixel_spacing_mm": list(sample.spacing[:2]),
            "was_resampled": False,
        }
    return branches


def task_block(spec: DatasetSpec, sample: SynthSample, index: int) -> dict[str, Any]:
    """The three task branches with only the dataset's task filled (payloads per docs/contracts.md)."""
    tasks: dict[str, Any] = {"classification": {}, "segmentation": {}, "detection": {}}
    variant = schema_variant(spec)
    table = class_table(spec)
    if spec.task == "classification":
        tasks["classification"] = classification_block(spec, sample)
    elif spec.task == "segmentation":
        assert sample.mask is not None
        payload = {"2d_coco": "coco_2d", "3d_mask": "mask_3d", "video_coco": "video_coco"}[variant]
        tasks["segmentation"] = {
            "schema_variant": variant,
            "classes": table,
            payload: {
                "format": "label_map_png",
                "mask_path": f"masks/{index}.png",
                "label_values": sorted(int(v) for v in np.unique(sample.mask)),
            },
        }
    else:
        tasks["detection"] = {
            "schema_variant": variant,
            "class_names": table,
            "boxes2d": [
                {"bbox": list(b), "category_id": c + 1, "category_name": spec.classes[c]}
                for b, c in zip(sample.boxes, sample.box_labels, strict=True)
            ],
        }
    return tasks


def annotation(spec: DatasetSpec, sample: SynthSample, index: int) -> dict[str, Any]:
    """The per-image JSON of a perfect answer for one sample."""
    extra = {**expected_extra(spec, sample), "map_type": MAP_TYPE[spec.task], **sample.oracle_extra}
    return sample_annotation(
        dataset_name=spec.name,
        index=index,
        subject_id=sample.subject_id,
        modality=sample.modality or spec.modality,
        anatomy=[spec.anatomy],
        extra=extra,
        task=spec.task,
        leaf_task=spec.leaf_task,
        annotation_type=schema_variant(spec),
        dimension=spec.dimension,
        spatial=spatial_block(spec, sample),
        tasks=task_block(spec, sample, index),
        timestamp_utc="2020-01-01T00:00:00Z",
        notes=f"Source file: {sample.manifest_path}",
    )


def data_meta(spec: DatasetSpec, n: int) -> dict[str, Any]:
    """The dataset JSON of a perfect answer (MSV = MSC = MCF = 1, SPEC §3.6)."""
    per_task: dict[str, Any] = {"num_classes": len(spec.classes)}
    if spec.task == "segmentation":
        per_task["include_background"] = True
    if spec.task == "detection":
        per_task["type"] = "bbox"
    return dataset_meta(
        dataset_name=spec.name,
        description=f"Bundled synthetic dataset {spec.name} (oracle metadata)",
        modality_primary=[spec.modality],
        modality_secondary=["NA"],
        anatomy=[spec.anatomy],
        n=n,
        task=spec.task,
        num_classes_per_task={spec.task: per_task},
    )


def write_oracle(
    root: Path, spec: DatasetSpec, samples: list[SynthSample] | dict[int, SynthSample], run_name: str
) -> Path:
    """Write ``VLM/<run_name>/agent1_data_organization/`` for one dataset.

    Args:
        root: Dataset folder.
        spec: Catalogue entry.
        samples: Samples in manifest order, or by manifest index when some indices have no answer (the
            realfiles suite's expected failures: a perfect answer writes nothing for them).
        run_name: Run folder name under ``VLM/``.

    Returns:
        The ``agent1_data_organization`` folder.

    Raises:
        OracleRenderError: When an image cannot be rendered at the ground truth's size.
    """
    from benchmark.layout import OutputLayout

    layout = OutputLayout.for_run(root, run_name)
    items = sorted(samples.items()) if isinstance(samples, dict) else list(enumerate(samples))
    for i, s in items:
        pixels, _ = render_sample(root, s)
        layout.write_image(i, pixels)
        if s.mask is not None:
            layout.write_mask(i, np.asarray(s.mask, dtype=np.uint8))
        layout.write_annotation(i, annotation(spec, s, i))
    layout.write_data_meta(data_meta(spec, len(samples)))
    return layout.root

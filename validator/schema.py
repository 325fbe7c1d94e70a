"""Pydantic v2 models of the per-image annotation and ``data_meta.json`` (SPEC §2, docs/contracts.md).

The models follow the benchmark's shape and add our payload conventions where the public schema is silent
(segmentation label-map PNG + class table, COCO boxes, classification label + class table). Extra keys are
allowed wherever the benchmark allows them (every object except the spatial/tasks containers, whose keys are
fixed so that a ``three_D`` typo is rejected). `json_schema()` exports draft 2020-12 JSON Schema of both
documents; the "exactly one active branch" rules are expressed there as ``oneOf`` so a plain JSON
Schema validator enforces them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, Strict, model_validator

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# A class id is a JSON integer (SPEC §2.2). Strict, because pydantic's lax mode would read "1" as 1 and the
# model would accept what the exported JSON Schema ("type": "integer") rejects; True is no class id either.
ClassId = Annotated[int, Strict()]


class _Open(BaseModel):
    """An object that keeps unknown keys (the benchmark tolerates them)."""

    model_config = ConfigDict(extra="allow")


class Inactive(BaseModel):
    """An inactive branch: exactly ``{}``."""

    model_config = ConfigDict(extra="forbid", title="Inactive")


class Record(_Open):
    """``record``: identifies the output image."""

    schema_version: str = Field(description='Annotation schema version; the benchmark expects "1.0.1".')
    dataset_name: str = Field(description="Dataset name, as in data_meta.json.")
    image_path: str = Field(description='The output image, relative to the output folder: "images/<i>.png".')


class SampleContext(_Open):
    """``context.sample``: who/what the image shows, and the source trace in ``extra``."""

    subject_id: str | None = Field(None, description='Subject/case id when known, else "NA".')
    age_years: float | None = Field(None, description="Age in years; 0 when unknown (benchmark template).")
    sex: str = Field(description='"M"/"F"/... or "unknown"; null is scored as a schema failure (SPEC §2.2).')
    race_ethnicity: str = Field(description='A string, "NA" when unknown (never null).')
    site_id: str = Field(description='A string, "NA" when unknown (never null).')
    modality_primary: str = Field(description='Imaging modality, e.g. "CT", "MRI", "X-ray", "Microscopy".')
    modality_secondary: str | None = Field(None, description='Secondary modality or "NA".')
    anatomical_structure: list[str] | str | None = Field(None, description='["Organ (Region)", ...].')
    modality_special_sample: str | None = Field(None, description='Special sample type or "NA".')
    extra: dict[str, Any] = Field(
        description='Source trace: source_file (relative to the dataset root, "data/..."), '
        "original_filename, subject_id, label_text, class_name, label/mask/seg/bbox file, map_type, "
        "source_stem (the file name without its extension, needed by the official scorer when the "
        "source's extension is not one it strips: P001 for P001.dat; docs/scoring.md), and any other keys."
    )


class TextContext(_Open):
    """``context.text``: accompanying text (not evaluated)."""

    text_id: str | None = None
    text_path: str | None = None
    text_type: str | None = None
    language: str | None = None
    length_chars: int | None = None


class Context(_Open):
    """``context``."""

    sample: SampleContext
    text: TextContext | None = None


class Media(_Open):
    """``media_geometry.media``: the task and dimension of the sample."""

    task_type: Literal["classification", "segmentation", "detection"]
    leaf_task: str | None = Field(None, description="A free, more specific task name.")
    annotation_type: str | None = Field(
        None, description="What the labels are (pixel_mask, bbox, image_level_label, label, ...)."
    )
    dimension: Literal["2D", "3D", "video"] = Field(description='"2D", "3D" or "video".')
    confidence_global: float | None = Field(None, ge=0.0, le=1.0)


class CommonSpatial(_Open):
    """``spatial.common`` (2D)."""

    pixel_size_px: list[int] | None = Field(None, min_length=2, max_length=2, description="[width, height].")
    pixel_spacing_mm: list[float] | None = Field(None, description="[x, y] spacing in mm, when known.")
    was_resampled: bool | None = None


class ThreeDSpatial(_Open):
    """``spatial.three_d`` (3D): the volume and the slice rendered."""

    pixel_size_px: list[int] | None = Field(None, min_length=2, max_length=2, description="[width, height].")
    volume_shape_voxels: list[int] | None = Field(None, description="[z, h, w] (canonical axis order).")
    voxel_spacing_mm: list[float] | None = None
    slice_axis: int | str | None = Field(None, description="Axis sliced (0 = z) or its name.")
    slice_index: int | None = Field(None, description="Index of the rendered slice along slice_axis.")


class VideoSpatial(_Open):
    """``spatial.video``: the clip and the frame rendered."""

    pixel_size_px: list[int] | None = Field(None, min_length=2, max_length=2, description="[width, height].")
    n_frames: int | None = None
    fps: float | None = None
    frame_index: int | None = Field(None, description="Index of the rendered frame.")


def _one_of(names: tuple[str, ...]) -> JsonValue:
    """JSON Schema alternatives: branch ``n`` has keys, every other branch is ``{}``."""
    return [
        {"properties": {m: ({"minProperties": 1} if m == n else {"maxProperties": 0}) for m in names}}
        for n in names
    ]


def _active(values: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if values.get(n)]


SPATIAL_BRANCHES = ("common", "three_d", "video")
TASK_BRANCHES = ("classification", "segmentation", "detection")


class Spatial(BaseModel):
    """``media_geometry.spatial``: exactly one non-empty branch (2D → common, 3D → three_d, video → video)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"oneOf": _one_of(SPATIAL_BRANCHES)})

    common: CommonSpatial
    three_d: ThreeDSpatial
    video: VideoSpatial

    @model_validator(mode="before")
    @classmethod
    def _exactly_one(cls, data: Any) -> Any:
        if isinstance(data, dict):
            active = _active(data, SPATIAL_BRANCHES)
            if len(active) != 1:
                raise ValueError(f"exactly one spatial branch must be non-empty, found {active or 'none'}")
        return data


class MediaGeometry(_Open):
    """``media_geometry``."""

    media: Media
    spatial: Spatial


class Classification(_Open):
    """``tasks.classification``: an image-level label from a class table."""

    schema_variant: Literal["multiclass", "multilabel", "exam_level"]
    class_names: dict[str, str] | None = Field(None, description='Class table {"0": "name", ...}.')
    classes: dict[str, str] | list[str] | None = Field(
        None, description="Alternative name of the class table."
    )
    label: ClassId | list[ClassId] | None = Field(None, description="Class id (a key of the class table).")
    label_name: str | list[str] | None = Field(None, description="class_names[str(label)].")


class LabelMapPayload(_Open):
    """Segmentation payload (ours): a label-map PNG with the image's size, pixel value = class id."""

    format: str | None = Field(None, description='"label_map_png" for our exports.')
    mask_path: str | None = Field(None, description='"masks/<i>.png", relative to the output folder.')
    label_values: list[ClassId] | None = Field(None, description="Class ids present in the mask.")


class Segmentation(_Open):
    """``tasks.segmentation``: a class table and a mask payload."""

    schema_variant: Literal["2d_coco", "3d_mask", "video_coco"]
    classes: dict[str, str] | list[str] | None = Field(None, description='{"0": "background", "1": ...}.')
    coco_2d: LabelMapPayload | None = None
    mask_3d: LabelMapPayload | None = None
    video_coco: LabelMapPayload | None = None


class Box2D(_Open):
    """A COCO box in output-image pixels."""

    bbox: list[float] = Field(min_length=4, max_length=4, description="[x, y, w, h] in output-image pixels.")
    category_id: ClassId
    category_name: str | None = None


class Detection(_Open):
    """``tasks.detection``: a class table and COCO boxes."""

    schema_variant: Literal["2d", "3d", "video"]
    class_names: dict[str, str] | None = Field(None, description='{"1": "lesion", ...}.')
    boxes2d: list[Box2D] | None = None
    boxes3d: list[dict[str, Any]] | None = None
    frame_boxes2d: list[dict[str, Any]] | None = None


class Tasks(BaseModel):
    """``tasks``: all three keys present; exactly one is non-empty, the others are ``{}``."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"oneOf": _one_of(TASK_BRANCHES)})

    classification: Classification | Inactive
    segmentation: Segmentation | Inactive
    detection: Detection | Inactive

    @model_validator(mode="before")
    @classmethod
    def _exactly_one(cls, data: Any) -> Any:
        if isinstance(data, dict):
            active = _active(data, TASK_BRANCHES)
            if len(active) != 1:
                raise ValueError(f"exactly one task branch must be non-empty, found {active or 'none'}")
        return data


class Provenance(_Open):
    """``provenance``: not scored, but notes may carry the source ("Converted from: X")."""

    timestamp_utc: str | None = None
    notes: str | None = None


class Annotation(_Open):
    """The per-image annotation ``standardized_annotations/<i>.json``."""

    model_config = ConfigDict(extra="allow", title="Annotation")

    record: Record
    context: Context
    media_geometry: MediaGeometry
    tasks: Tasks
    provenance: Provenance | None = None


class DataVolume(_Open):
    """``data_volume``: sample counts."""

    total: int
    train: int | None = None
    val: int | None = None
    test: int | None = None
    label: int | None = None


class ValidImageN(_Open):
    """``valid_image_n``: number of output images that open."""

    total: int


class DataMeta(_Open):
    """``data_meta.json`` (schema 1.0.2)."""

    model_config = ConfigDict(extra="allow", title="DataMeta")

    schema_version: str | None = Field(None, description='"1.0.2".')
    dataset_name: str
    release_date: str | None = None
    homepage_url: str | None = None
    organization: list[str] | str | None = None
    challenge_series: str | None = None
    license: str | None = None
    dataset_description: str | None = None
    modality_primary: list[str] = Field(description='e.g. ["CT"].')
    modality_secondary: list[str] | str | None = None
    anatomical_structure: list[str] | str | None = None
    disease: list[str] | str | None = None
    domain: str | None = None
    data_volume: DataVolume
    valid_image_n: ValidImageN
    label_presence: str | None = None
    task_type: list[Literal["classification", "segmentation", "detection"]] = Field(min_length=1)
    num_classes_per_task: dict[str, dict[str, Any]] | None = None


def json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of both documents: ``{"annotation": ..., "data_meta": ...}``."""
    out: dict[str, Any] = {}
    for key, model in (("annotation", Annotation), ("data_meta", DataMeta)):
        schema = model.model_json_schema()
        out[key] = {"$schema": SCHEMA_DIALECT, **schema}
    return out

"""The JSON schemas of the guided mode's answers: plan, slice or frame, mask file, annotation, data_meta.

Each answer of the guided mode is one JSON object under one of these schemas, sent as the parameters of a
forced tool call (or as ``response_format``). Servers that honour them (llama.cpp, vLLM, Ollama, the hosted
APIs) turn the schema into a grammar, so even a small model's answer has the benchmark's shape (SPEC §2):
exactly one spatial and one task branch, the task and dimension its plan chose, ``"NA"``/``"unknown"`` strings
where the scorer refuses null, the record's image path. What the schema fixes is what the framework knows for
a fact (the sample's source file, the size of the image the ``render`` tool wrote, the counts of the written
files) or what the model itself decided in its plan (dataset name, modality, task, dimension, classes); every
other value is the model's: the subject, sex, site, the label or boxes, the slice, the mask file, the
dataset's anatomy, domain and description.

Only the JSON Schema subset llama.cpp's grammar converter reads is used: ``const``, ``enum``, ``anyOf``,
``required``, ``additionalProperties: false``, string ``minLength``/``maxLength`` and array
``minItems``/``maxItems`` (every string and list is bounded: a model that rambles inside a value still ends).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

__all__ = [
    "PLAN_SCHEMA",
    "GuidedPlan",
    "annotation_schema",
    "choice_schema",
    "data_meta_schema",
]

TASKS = ("classification", "segmentation", "detection")
DIMENSIONS = ("2D", "3D", "video")
_MAX_CLASSES = 8


def _text(longest: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": longest}


def _object(properties: Mapping[str, Any]) -> dict[str, Any]:
    """An object with exactly these keys, in this order (the grammar writes them so)."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }


def _const(value: Any) -> dict[str, Any]:
    return {"const": value}


PLAN_SCHEMA: dict[str, Any] = _object(
    {
        "dataset_name": _text(60),
        "modality": _text(30),
        "task_type": {"enum": list(TASKS)},
        "dimension": {"enum": list(DIMENSIONS)},
        "classes": {"type": "array", "items": _text(40), "minItems": 1, "maxItems": _MAX_CLASSES},
    }
)
"""The dataset-level decisions, made once per candidate and fixed in every later answer."""


@dataclass(frozen=True)
class GuidedPlan:
    """The model's dataset-level decisions.

    Attributes:
        dataset_name: The dataset's name.
        modality: Its imaging modality.
        task_type: classification, segmentation or detection.
        dimension: 2D, 3D or video.
        classes: Class names in id order (segmentation: background first).
    """

    dataset_name: str
    modality: str
    task_type: str
    dimension: str
    classes: tuple[str, ...]

    @classmethod
    def of(cls, answer: Mapping[str, Any]) -> GuidedPlan:
        """The plan from an answer (a server that ignored the schema may send anything).

        Args:
            answer: The model's JSON object.

        Returns:
            The plan.

        Raises:
            ValueError: A field is missing or outside the schema.
        """
        try:
            name = str(answer["dataset_name"]).strip()
            modality = str(answer["modality"]).strip()
            task, dim = str(answer["task_type"]), str(answer["dimension"])
            raw = answer["classes"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"the plan lacks {exc}") from None
        if task not in TASKS or dim not in DIMENSIONS:
            raise ValueError(f"task_type {task!r} / dimension {dim!r} outside {TASKS} / {DIMENSIONS}")
        if not isinstance(raw, list) or not raw:
            raise ValueError("classes must be a non-empty list")
        classes: list[str] = []
        for value in raw:
            text = str(value).strip()
            if text and text not in classes:  # a repeated name would make two ids of one class
                classes.append(text)
        if not name or not modality or not classes:
            raise ValueError("dataset_name, modality and classes must not be empty")
        return cls(name, modality, task, dim, tuple(classes[:_MAX_CLASSES]))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able (kept as the candidate's ``plan.json``)."""
        return {
            "guided": True,
            "dataset_name": self.dataset_name,
            "modality": self.modality,
            "task_type": self.task_type,
            "dimension": self.dimension,
            "classes": list(self.classes),
        }

    def class_table(self) -> dict[str, str]:
        """Class id → name: segmentation from 0 (background), detection from 1, classification from 0."""
        start = 1 if self.task_type == "detection" else 0
        return {str(k + start): name for k, name in enumerate(self.classes)}


def choice_schema(name: str, options: Sequence[Any] | str) -> dict[str, Any]:
    """One value: one of ``options``, or of a JSON type (``"integer"``); null is always allowed (the tool's
    default)."""
    if isinstance(options, str):
        return _object({name: {"anyOf": [{"type": options}, {"type": "null"}]}})
    return _object({name: {"enum": [*options, None] if None not in options else list(options)}})


_EMPTY = _const({})
_SPATIAL_KEY = {"2D": "common", "3D": "three_d", "video": "video"}
_SEGMENTATION_VARIANT = {"2D": "2d_coco", "3D": "3d_mask", "video": "video_coco"}
_SEGMENTATION_PAYLOAD = {"2D": "coco_2d", "3D": "mask_3d", "video": "video_coco"}
_DETECTION_VARIANT = {"2D": "2d", "3D": "3d", "video": "video"}


def _spatial(plan: GuidedPlan, rendered: Mapping[str, Any]) -> dict[str, Any]:
    size = list(rendered.get("size") or [])
    branch: dict[str, Any] = {"pixel_size_px": _const(size)} if len(size) == 2 else {}
    if plan.dimension == "3D" and isinstance(rendered.get("slice_index"), int):
        branch["slice_axis"] = _const(int(rendered.get("axis") or 0))
        branch["slice_index"] = _const(rendered["slice_index"])
    if plan.dimension == "video" and isinstance(rendered.get("frame"), int):
        branch["frame_index"] = _const(rendered["frame"])
    if not branch:  # an active branch must not be empty (SPEC §3.3, item 11)
        branch["was_resampled"] = _const(False)
    active = _SPATIAL_KEY[plan.dimension]
    return _object(
        {key: _object(branch) if key == active else _EMPTY for key in ("common", "three_d", "video")}
    )


def _task_branch(plan: GuidedPlan, index: int, mask_written: bool) -> dict[str, Any]:
    table = plan.class_table()
    if plan.task_type == "classification":
        # One alternative per class: the id and its name come together, so they always agree.
        return {
            "anyOf": [
                _object(
                    {
                        "schema_variant": _const("multiclass"),
                        "class_names": _const(table),
                        "label": _const(int(key)),
                        "label_name": _const(name),
                    }
                )
                for key, name in table.items()
            ]
        }
    if plan.task_type == "segmentation":
        fields: dict[str, Any] = {
            "schema_variant": _const(_SEGMENTATION_VARIANT[plan.dimension]),
            "classes": _const(table),
        }
        if mask_written:
            fields[_SEGMENTATION_PAYLOAD[plan.dimension]] = _const(
                {"format": "label_map_png", "mask_path": f"masks/{index}.png"}
            )
        return _object(fields)
    box = _object(
        {
            "bbox": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
            "category_id": {"enum": [int(k) for k in table]},
            "category_name": {"enum": list(table.values())},
        }
    )
    return _object(
        {
            "schema_variant": _const(_DETECTION_VARIANT[plan.dimension]),
            "class_names": _const(table),
            "boxes2d": {"type": "array", "items": box, "minItems": 0, "maxItems": 4},
        }
    )


def annotation_schema(
    plan: GuidedPlan,
    index: int,
    source: str,
    rendered: Mapping[str, Any],
    mask_file: str | None = None,
) -> dict[str, Any]:
    """The per-image annotation of one sample, under its candidate's plan.

    Args:
        plan: The candidate's plan.
        index: The manifest index.
        source: The sample's raw file (``data/...``).
        rendered: What ``render`` reported of the image it wrote (``size``, ``slice_index``, ``axis``,
            ``frame``).
        mask_file: The raw mask rendered to ``masks/<index>.png``, if one was.

    Returns:
        A JSON Schema every answer of which passes the benchmark's schema checks (SPEC §3.3 g_i).
    """
    extra: dict[str, Any] = {
        "source_file": _const(source),
        "original_filename": _const(PurePosixPath(source).name),
    }
    if mask_file is not None:
        extra["mask_file"] = _const(mask_file)
    branches = {task: _EMPTY for task in TASKS}
    branches[plan.task_type] = _task_branch(plan, index, mask_file is not None)
    # The fields that are the same for every sample of the candidate come first: a server that reuses the
    # prompt prefix of its last request (llama.cpp) then re-reads only the sample's own part of the schema.
    return _object(
        {
            "media_geometry": _object(
                {
                    "media": _object(
                        {"task_type": _const(plan.task_type), "dimension": _const(plan.dimension)}
                    ),
                    "spatial": _spatial(plan, rendered),
                }
            ),
            "tasks": _object(branches),
            "record": _object(
                {
                    "schema_version": _const("1.0.1"),
                    "dataset_name": _const(plan.dataset_name),
                    "image_path": _const(f"images/{index}.png"),
                }
            ),
            "context": _object(
                {
                    "sample": _object(
                        {
                            "subject_id": _text(40),
                            "sex": {"enum": ["unknown", "M", "F"]},
                            "race_ethnicity": {"enum": ["NA", "unknown"]},
                            "site_id": {"enum": ["NA", "unknown"]},
                            "modality_primary": _const(plan.modality),
                            "extra": _object(extra),
                        }
                    )
                }
            ),
        }
    )


def data_meta_schema(plan: GuidedPlan, written: int, images: int) -> dict[str, Any]:
    """``data_meta.json`` under the plan, with the counts of what was written.

    Args:
        plan: The candidate's plan.
        written: Annotations written.
        images: Images written.

    Returns:
        The JSON Schema.
    """
    return _object(
        {
            "schema_version": _const("1.0.2"),
            "dataset_name": _const(plan.dataset_name),
            "modality_primary": _const([plan.modality]),
            "task_type": _const([plan.task_type]),
            "anatomical_structure": _text(40),
            "domain": _text(30),
            "dataset_description": _text(160),
            "data_volume": _const({"total": written}),
            "valid_image_n": _const({"total": images}),
            "num_classes_per_task": _const({plan.task_type: {"num_classes": len(plan.classes)}}),
        }
    )

"""The JSON schemas of the guided mode's answers: plan, slice or frame, mask file, annotation, data_meta.

Each answer of the guided mode is one JSON object under one of these schemas, sent as the parameters of a
forced tool call (or as ``response_format``). Servers that honour them (llama.cpp, vLLM, Ollama, the hosted
APIs) turn the schema into a grammar, so even a small model's answer has the shape asked. The model answers
only what is its to decide: the plan (dataset name, modality, task, dimension, classes), the slice, the mask
file, per sample the subject, sex, site and the label or boxes (`answer_schema`, one schema for every sample
of a candidate), and the dataset's anatomy, domain and description. The framework puts each sample's answer
into the benchmark's record (`annotation_record`: exactly one spatial and one task branch, ``"NA"``/
``"unknown"`` strings where the scorer refuses null, the record's paths, the size of the image ``render``
wrote, the plan's decisions), so every record passes the schema checks (SPEC §2).

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
    "META_SCHEMA",
    "PLAN_SCHEMA",
    "GuidedPlan",
    "annotation_record",
    "answer_of",
    "answer_schema",
    "choice_schema",
    "data_meta_record",
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
        """The plan from the model's JSON object (a server that ignored the schema may send anything).

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


_SPATIAL_KEY = {"2D": "common", "3D": "three_d", "video": "video"}
_SEGMENTATION_VARIANT = {"2D": "2d_coco", "3D": "3d_mask", "video": "video_coco"}
_SEGMENTATION_PAYLOAD = {"2D": "coco_2d", "3D": "mask_3d", "video": "video_coco"}
_DETECTION_VARIANT = {"2D": "2d", "3D": "3d", "video": "video"}
_MAX_BOXES = 4


def answer_schema(plan: GuidedPlan) -> dict[str, Any]:
    """The JSON Schema of what the model answers for one sample of the plan: the values only it can decide,
    the same schema for every sample.

    The rest of the record (paths, sizes, the plan's task, dimension and classes) is the framework's
    (`annotation_record`): a model made to spell out constants spends a decoding step on every token of them,
    and a schema that names the sample makes each request's prompt differ from its very first lines, so a
    server's prefix cache could reuse nothing across samples.
    """
    fields: dict[str, Any] = {
        "subject_id": _text(40),
        "sex": {"enum": ["unknown", "M", "F"]},
        "race_ethnicity": {"enum": ["NA", "unknown"]},
        "site_id": {"enum": ["NA", "unknown"]},
    }
    names = list(plan.class_table().values())
    if plan.task_type == "classification":
        fields["label"] = {"enum": names}
    elif plan.task_type == "detection":
        box = _object(
            {
                "bbox": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
                "category_name": {"enum": names},
            }
        )
        fields["boxes"] = {"type": "array", "items": box, "minItems": 0, "maxItems": _MAX_BOXES}
    return _object(fields)


def _spatial(plan: GuidedPlan, rendered: Mapping[str, Any]) -> dict[str, Any]:
    size = list(rendered.get("size") or [])
    branch: dict[str, Any] = {"pixel_size_px": size} if len(size) == 2 else {}
    if plan.dimension == "3D" and isinstance(rendered.get("slice_index"), int):
        branch["slice_axis"] = int(rendered.get("axis") or 0)
        branch["slice_index"] = rendered["slice_index"]
    if plan.dimension == "video" and isinstance(rendered.get("frame"), int):
        branch["frame_index"] = rendered["frame"]
    if not branch:  # an active branch must not be empty (SPEC §3.3, item 11)
        branch["was_resampled"] = False
    active = _SPATIAL_KEY[plan.dimension]
    return {key: branch if key == active else {} for key in ("common", "three_d", "video")}


def _task_branch(
    plan: GuidedPlan, index: int, mask_written: bool, answer: Mapping[str, Any]
) -> dict[str, Any]:
    table = plan.class_table()
    ids = {name: int(key) for key, name in table.items()}
    first = next(iter(table.values()))
    if plan.task_type == "classification":
        # The id is the framework's: it and the name always agree.
        name = answer.get("label") if answer.get("label") in ids else first
        return {
            "schema_variant": "multiclass",
            "class_names": table,
            "label": ids[str(name)],
            "label_name": name,
        }
    if plan.task_type == "segmentation":
        fields: dict[str, Any] = {"schema_variant": _SEGMENTATION_VARIANT[plan.dimension], "classes": table}
        if mask_written:
            fields[_SEGMENTATION_PAYLOAD[plan.dimension]] = {
                "format": "label_map_png",
                "mask_path": f"masks/{index}.png",
            }
        return fields
    boxes = []
    for box in answer.get("boxes") or []:
        if not isinstance(box, Mapping):
            continue
        name = box.get("category_name") if box.get("category_name") in ids else first
        boxes.append(
            {"bbox": list(box.get("bbox") or []), "category_id": ids[str(name)], "category_name": name}
        )
    return {"schema_variant": _DETECTION_VARIANT[plan.dimension], "class_names": table, "boxes2d": boxes}


def annotation_record(
    plan: GuidedPlan,
    index: int,
    source: str,
    rendered: Mapping[str, Any],
    answer: Mapping[str, Any],
    mask_file: str | None = None,
) -> dict[str, Any]:
    """The per-image annotation of one sample: the model's answer (`answer_schema`; a value outside its schema
    falls back to the schema's first one) in the benchmark's record, which passes its schema checks (SPEC §3.3
    g_i).

    ``rendered`` is what ``render`` reported of the image it wrote (``size``, ``slice_index``, ``axis``,
    ``frame``); ``mask_file`` the raw mask rendered to ``masks/<index>.png``, if one was.
    """

    def pick(key: str, allowed: Sequence[str]) -> str:
        value = answer.get(key)
        return value if isinstance(value, str) and value in allowed else allowed[0]

    extra: dict[str, Any] = {"source_file": source, "original_filename": PurePosixPath(source).name}
    if mask_file is not None:
        extra["mask_file"] = mask_file
    tasks: dict[str, Any] = {task: {} for task in TASKS}
    tasks[plan.task_type] = _task_branch(plan, index, mask_file is not None, answer)
    subject = str(answer.get("subject_id") or "").strip()[:40] or "unknown"
    return {
        "media_geometry": {
            "media": {"task_type": plan.task_type, "dimension": plan.dimension},
            "spatial": _spatial(plan, rendered),
        },
        "tasks": tasks,
        "record": {
            "schema_version": "1.0.1",
            "dataset_name": plan.dataset_name,
            "image_path": f"images/{index}.png",
        },
        "context": {
            "sample": {
                "subject_id": subject,
                "sex": pick("sex", ["unknown", "M", "F"]),
                "race_ethnicity": pick("race_ethnicity", ["NA", "unknown"]),
                "site_id": pick("site_id", ["NA", "unknown"]),
                "modality_primary": plan.modality,
                "extra": extra,
            }
        },
    }


def answer_of(annotation: Mapping[str, Any]) -> dict[str, Any]:
    """The model's answer inside a record `annotation_record` wrote (what a revision shows the model): its
    values under `answer_schema`, the keys the record has.
    """
    sample = (
        ((annotation.get("context") or {}).get("sample") or {}) if isinstance(annotation, Mapping) else {}
    )
    answer = {k: sample[k] for k in ("subject_id", "sex", "race_ethnicity", "site_id") if k in sample}
    tasks = annotation.get("tasks") or {} if isinstance(annotation, Mapping) else {}
    if isinstance(tasks.get("classification"), Mapping) and "label_name" in tasks["classification"]:
        answer["label"] = tasks["classification"]["label_name"]
    boxes = (
        (tasks.get("detection") or {}).get("boxes2d") if isinstance(tasks.get("detection"), Mapping) else None
    )
    if isinstance(boxes, list):
        answer["boxes"] = [
            {"bbox": b.get("bbox"), "category_name": b.get("category_name")}
            for b in boxes
            if isinstance(b, Mapping)
        ]
    return answer


META_SCHEMA: dict[str, Any] = _object(
    {"anatomical_structure": _text(40), "domain": _text(30), "dataset_description": _text(160)}
)
"""The dataset-level values that are the model's to decide (the rest of data_meta is `data_meta_record`'s)."""


def data_meta_record(
    plan: GuidedPlan, written: int, images: int, answer: Mapping[str, Any]
) -> dict[str, Any]:
    """``data_meta.json`` from the plan, the counts of annotations and images written and the model's
    `META_SCHEMA` answer.
    """

    def text(key: str) -> str:
        return str(answer.get(key) or "").strip() or "unknown"

    return {
        "schema_version": "1.0.2",
        "dataset_name": plan.dataset_name,
        "modality_primary": [plan.modality],
        "task_type": [plan.task_type],
        "anatomical_structure": text("anatomical_structure"),
        "domain": text("domain"),
        "dataset_description": text("dataset_description"),
        "data_volume": {"total": written},
        "valid_image_n": {"total": images},
        "num_classes_per_task": {plan.task_type: {"num_classes": len(plan.classes)}},
    }

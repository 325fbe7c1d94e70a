"""Mistakes in the per-image JSON: the paper's four error categories (MDS-Bench §4.3) and format mistakes.

Each function edits a correct sample the way an agent gets it wrong and returns False when the sample offers
no occasion for it (no second class to confuse, no boxes to convert). They follow the output format
(SPEC §2.2): nothing here looks at what a validator checks.
"""

from __future__ import annotations

import copy
import json
import posixpath
from typing import Any

from benchmark.fields import ANNOTATION_TYPE, MODALITY_PRIMARY, SOURCE_FILE, SUBJECT_ID, TASK_TYPE
from benchmark.fields import DIMENSION as DIMENSION_PATH
from testbed.perturb.mistake import SampleState, mistake
from validator.values import get_path, set_path

SOURCE = SOURCE_FILE
ORIGINAL = "context.sample.extra.original_filename"
NOTES = "provenance.notes"
SUBJECT = SUBJECT_ID
MODALITY = MODALITY_PRIMARY
TASK, DIMENSION = TASK_TYPE, DIMENSION_PATH
SPATIAL = "media_geometry.spatial"
_BRANCH = {"2D": "common", "3D": "three_d", "video": "video"}
_PAYLOADS = ("coco_2d", "mask_3d", "video_coco", "boxes2d", "boxes3d", "frame_boxes2d")
_FILE_KEYS = ("label_file", "mask_file", "seg_file", "bbox_file")


def _task_block(state: SampleState) -> dict[str, Any] | None:
    block = get_path(state.annotation, f"tasks.{state.task()}")
    return block if isinstance(block, dict) and block else None


def _class_table(block: dict[str, Any]) -> dict[str, str]:
    table = block.get("class_names") or block.get("classes") or {}
    return {str(k): str(v) for k, v in table.items()} if isinstance(table, dict) else {}


def _point_source_at(state: SampleState, path: str) -> None:
    extra = state.extra()
    old = extra.get("source_file")
    extra["source_file"] = path
    extra["original_filename"] = posixpath.basename(path)
    state.annotation.setdefault("provenance", {})["notes"] = f"Source file: {path}"
    # Keys that repeated the old source (a case id equal to the file stem) follow it, as one wrong read would.
    for key, value in list(extra.items()):
        if key not in ("source_file", "original_filename") and value == old:
            extra[key] = path


# ---------------------------------------------------------------------------------------- source grounding
@mistake("neighbour_source", "source_grounding", raw_evidence=True, fields=(SOURCE, ORIGINAL, NOTES))
def neighbour_source(state: SampleState) -> bool:
    """The source fields name another manifest sample's file."""
    other = state.neighbour(SOURCE)
    if other is None:
        return False
    _point_source_at(state, str(other[1]))
    return True


@mistake("label_file_as_source", "source_grounding", raw_evidence=True, fields=(SOURCE, ORIGINAL, NOTES))
def label_file_as_source(state: SampleState) -> bool:
    """The source is the sample's label/mask/box file instead of the image it annotates."""
    extra = state.extra()
    files = [str(extra[k]) for k in _FILE_KEYS if isinstance(extra.get(k), str)]
    files = [f for f in files if f != extra.get("source_file") and f.startswith("data/")]
    if not files:
        return False
    _point_source_at(state, state.rng.choice(files))
    return True


@mistake("absolute_source_path", "source_grounding", raw_evidence=True, fields=(SOURCE,))
def absolute_source_path(state: SampleState) -> bool:
    """``source_file`` is the authors' absolute path from the manifest instead of ``data/...``."""
    extra = state.extra()
    source = extra.get("source_file")
    if not isinstance(source, str) or not source.startswith("data/"):
        return False
    extra["source_file"] = f"/data3/chenxin/Agent_test/{state.dataset_root.name}/{source}"
    return True


# -------------------------------------------------------------------------------------- semantic confusion
@mistake("task_confusion", "semantic_confusion", raw_evidence=True, fields=(TASK, "tasks", "media_geometry"))
def task_confusion(state: SampleState) -> bool:
    """A segmentation or detection sample standardized as image-level classification."""
    block = _task_block(state)
    if state.task() not in ("segmentation", "detection") or block is None:
        return False
    table = {k: v for k, v in _class_table(block).items() if v.lower() != "background"}
    if not table:
        return False
    label = state.rng.choice(sorted(table))
    set_path(state.annotation, TASK, "classification")
    set_path(state.annotation, ANNOTATION_TYPE, "multiclass")
    state.annotation["tasks"] = {
        "classification": {
            "schema_variant": "multiclass",
            "class_names": table,
            "label": int(label) if label.isdigit() else label,
            "label_name": table[label],
        },
        "segmentation": {},
        "detection": {},
    }
    extra = state.extra()
    extra["map_type"] = "image_level_label"
    extra["label_text"] = extra["class_name"] = table[label]
    return True


@mistake("dimension_confusion", "semantic_confusion", raw_evidence=True, fields=(DIMENSION, SPATIAL))
def dimension_confusion(state: SampleState) -> bool:
    """A volume or video sample declared 2D, its geometry moved to the 2D branch."""
    dim = state.dimension()
    if dim not in ("3D", "video"):
        return False
    branch = get_path(state.annotation, f"{SPATIAL}.{_BRANCH[dim]}") or {}
    size = branch.get("pixel_size_px") if isinstance(branch, dict) else None
    set_path(state.annotation, DIMENSION, "2D")
    set_path(
        state.annotation,
        SPATIAL,
        {
            "common": {
                "pixel_size_px": size or [0, 0],
                "pixel_spacing_mm": [1.0, 1.0],
                "was_resampled": False,
            },
            "three_d": {},
            "video": {},
        },
    )
    return True


@mistake(
    "wrong_label",
    "semantic_confusion",
    raw_evidence=True,
    fields=("tasks.classification", "context.sample.extra.label_text", "context.sample.extra.class_name"),
)
def wrong_label(state: SampleState) -> bool:
    """Another class of the table, written consistently (label, label_name and the extra label text)."""
    block = _task_block(state)
    if state.task() != "classification" or block is None:
        return False
    table = _class_table(block)
    others = [k for k in sorted(table) if str(k) != str(block.get("label"))]
    if not others:
        return False
    label = state.rng.choice(others)
    # Keep the id's written type: after `string_ids` an int here would silently undo that mistake while
    # its label stays on the sample.
    as_int = label.isdigit() and not isinstance(block.get("label"), str)
    block["label"] = int(label) if as_int else label
    block["label_name"] = table[label]
    extra = state.extra()
    for key in ("label_text", "class_name"):
        if key in extra:
            extra[key] = table[label]
    return True


@mistake("label_name_mismatch", "semantic_confusion", raw_evidence=True, fields=("tasks.classification",))
def label_name_mismatch(state: SampleState) -> bool:
    """``label_name`` is another class's name while ``label`` keeps the right id."""
    block = _task_block(state)
    if state.task() != "classification" or block is None:
        return False
    names = sorted({v for v in _class_table(block).values() if v != block.get("label_name")})
    if not names:
        return False
    block["label_name"] = state.rng.choice(names)
    return True


_CONFUSABLE = {"ct": "MRI", "mri": "CT", "mr": "CT", "x-ray": "CT", "ultrasound": "X-ray", "us": "X-ray"}


@mistake("modality_confusion", "semantic_confusion", raw_evidence=False, fields=(MODALITY,))
def modality_confusion(state: SampleState) -> bool:
    """A plausible but wrong imaging modality (CT for MRI, X-ray for ultrasound, ...)."""
    current = get_path(state.annotation, MODALITY)
    if not isinstance(current, str) or not current.strip():
        return False
    set_path(state.annotation, MODALITY, _CONFUSABLE.get(current.strip().lower(), "CT"))
    return True


# ---------------------------------------------------------------------------------------- content omission
@mistake("drop_source_fields", "content_omission", raw_evidence=True, fields=(SOURCE, ORIGINAL, NOTES))
def drop_source_fields(state: SampleState) -> bool:
    """The source trace is left out (no ``source_file``/``original_filename``, empty provenance notes)."""
    extra = state.extra()
    if not any(k in extra for k in ("source_file", "original_filename")):
        return False
    for key in ("source_file", "original_filename", *_FILE_KEYS):
        extra.pop(key, None)
    if isinstance(state.annotation.get("provenance"), dict):
        state.annotation["provenance"]["notes"] = ""
    return True


@mistake("drop_task_payload", "content_omission", raw_evidence=True, fields=("tasks",))
def drop_task_payload(state: SampleState) -> bool:
    """The task branch keeps its schema variant and classes but loses its content (label, mask or boxes)."""
    block = _task_block(state)
    if block is None:
        return False
    dropped = [k for k in (*_PAYLOADS, "label", "label_name") if k in block]
    for key in dropped:
        del block[key]
    return bool(dropped)


@mistake("drop_modality", "content_omission", raw_evidence=True, fields=(MODALITY,))
def drop_modality(state: SampleState) -> bool:
    """``modality_primary`` left as the template's placeholder."""
    if get_path(state.annotation, MODALITY) in (None, "NA"):
        return False
    set_path(state.annotation, MODALITY, "NA")
    return True


@mistake("empty_spatial", "content_omission", raw_evidence=True, fields=(SPATIAL,))
def empty_spatial(state: SampleState) -> bool:
    """The active spatial branch is left empty (no image size, spacing or volume facts)."""
    branch = _BRANCH.get(state.dimension())
    if branch is None or not get_path(state.annotation, f"{SPATIAL}.{branch}"):
        return False
    set_path(state.annotation, f"{SPATIAL}.{branch}", {})
    return True


# ------------------------------------------------------------------------------------- unsupported filling
@mistake("fill_all_spatial", "unsupported_filling", raw_evidence=True, fields=(SPATIAL,))
def fill_all_spatial(state: SampleState) -> bool:
    """All three spatial branches filled (the paper's example), the inactive ones with invented values."""
    spatial = get_path(state.annotation, SPATIAL)
    if not isinstance(spatial, dict):
        return False
    active = _BRANCH.get(state.dimension(), "common")
    size = (spatial.get(active) or {}).get("pixel_size_px") or [256, 256]
    invented = {
        "common": {"pixel_size_px": size, "pixel_spacing_mm": [1.0, 1.0], "was_resampled": False},
        "three_d": {"pixel_size_px": size, "volume_shape_voxels": [32, *size[::-1]], "slice_index": 16},
        "video": {"pixel_size_px": size, "n_frames": 30, "fps": 30.0, "frame_index": 0},
    }
    for name, value in invented.items():
        if not spatial.get(name):
            spatial[name] = value
    return True


@mistake("fill_inactive_task", "unsupported_filling", raw_evidence=True, fields=("tasks",))
def fill_inactive_task(state: SampleState) -> bool:
    """A second task branch filled with content the data does not support."""
    tasks = state.annotation.get("tasks")
    if not isinstance(tasks, dict):
        return False
    empty = [t for t in ("classification", "segmentation", "detection") if not tasks.get(t)]
    if not empty:
        return False
    target = state.rng.choice(empty)
    tasks[target] = {
        "classification": {
            "schema_variant": "multiclass",
            "class_names": {"0": "normal"},
            "label": 0,
            "label_name": "normal",
        },
        "segmentation": {"schema_variant": "2d_coco", "classes": {"1": "lesion"}, "coco_2d": {}},
        "detection": {"schema_variant": "2d", "class_names": {"1": "lesion"}, "boxes2d": []},
    }[target]
    return True


@mistake(
    "invented_demographics",
    "unsupported_filling",
    raw_evidence=False,
    fields=("context.sample.age_years", "context.sample.sex", "context.sample.site_id"),
)
def invented_demographics(state: SampleState) -> bool:
    """Age, sex and site filled with values nothing in the data states."""
    sample = state.annotation.get("context", {}).get("sample")
    if not isinstance(sample, dict):
        return False
    sample["age_years"] = state.rng.randint(25, 80)
    sample["sex"] = state.rng.choice(["male", "female"])
    sample["site_id"] = f"site_{state.rng.randint(1, 9):02d}"
    return True


# ------------------------------------------------------------------------------------------------ format
@mistake("truncated_json", "format", raw_evidence=True, fields=("",), exclusive="serialization")
def truncated_json(state: SampleState) -> bool:
    """The per-image JSON is cut off mid-file (an interrupted write)."""

    def cut(doc: object) -> str:
        text = json.dumps(doc, indent=2, ensure_ascii=False)
        return text[: len(text) // 2]

    state.serialize = cut
    return True


@mistake("list_top_level", "format", raw_evidence=True, fields=("",), exclusive="serialization")
def list_top_level(state: SampleState) -> bool:
    """The per-image JSON is a one-element list instead of an object."""
    state.top_level = lambda doc: [doc]
    return True


@mistake("xyxy_boxes", "format", raw_evidence=True, fields=("tasks.detection",))
def xyxy_boxes(state: SampleState) -> bool:
    """Boxes written as ``[x1, y1, x2, y2]`` where the format says ``[x, y, w, h]``."""
    boxes = get_path(state.annotation, "tasks.detection.boxes2d")
    if not isinstance(boxes, list) or not boxes:
        return False
    changed = False
    for box in boxes:
        bbox = box.get("bbox") if isinstance(box, dict) else None
        if isinstance(bbox, list) and len(bbox) == 4 and (bbox[2] or bbox[3]):
            x, y, w, h = bbox
            box["bbox"] = [x, y, x + w, y + h]
            changed = True
    return changed


@mistake("string_ids", "format", raw_evidence=True, fields=("tasks",))
def string_ids(state: SampleState) -> bool:
    """Class ids written as strings (``"1"``) where the format wants integers."""
    block = _task_block(state)
    if block is None:
        return False
    changed = False
    if isinstance(block.get("label"), int):
        block["label"] = str(block["label"])
        changed = True
    for box in block.get("boxes2d") or []:
        if isinstance(box, dict) and isinstance(box.get("category_id"), int):
            box["category_id"] = str(box["category_id"])
            changed = True
    for payload in ("coco_2d", "mask_3d", "video_coco"):
        node = block.get(payload)
        values = node.get("label_values") if isinstance(node, dict) else None
        if isinstance(values, list) and values:
            block[payload]["label_values"] = [str(v) for v in values]
            changed = True
    return changed


@mistake("dataset_name_variant", "format", raw_evidence=True, fields=("record.dataset_name",))
def dataset_name_variant(state: SampleState) -> bool:
    """``record.dataset_name`` prettified or re-spelled instead of the dataset's own name."""
    name = get_path(state.annotation, "record.dataset_name")
    if not isinstance(name, str) or not name:
        return False
    words = name.replace("-", " ").replace("_", " ").split()
    variants = {
        " ".join(w.capitalize() for w in words),
        "_".join(words),
        f"{' '.join(words)} dataset",
        name.upper(),
    } - {name}
    set_path(state.annotation, "record.dataset_name", state.rng.choice(sorted(variants)))
    return True


@mistake(
    "neighbour_subject_id",
    "format",
    raw_evidence=True,
    fields=(SUBJECT, "context.sample.extra.subject_id"),
)
def neighbour_subject_id(state: SampleState) -> bool:
    """``subject_id`` copied from the neighbouring sample."""
    other = state.neighbour(SUBJECT)
    if other is None:
        return False
    set_path(state.annotation, SUBJECT, copy.deepcopy(other[1]))  # not the neighbour's own object
    if "subject_id" in state.extra():
        state.extra()["subject_id"] = other[1]
    return True

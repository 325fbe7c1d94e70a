"""The task instructions of S0, S1 and S2: the benchmark's own files when the user's checkout has them,
else ours.

In the public MDS-Bench checkout, S0's instruction is ``datasets/standard.md`` and S1/S2's are the prompt
files under ``prompt_experiment/S1`` and ``prompt_experiment/S2``. `resolve_instructions` finds them relative
to the benchmark root (or takes the files named with ``agent.instructions.s0=<file>`` etc.), reads them at
run time and hands their text on verbatim; nothing of them is copied into this repository. Where the checkout
has none (the bundled suites), the texts below are used: written for this project, they describe the output
format and the review to do, and leave every judgement about the data (which slice, which label) to the agent.

The resolved texts travel in ``Task.options["instructions"]`` (``{"s0": text, "s1": text, "s2": text}``);
model agents send the S0 text as the task instruction, and S1/S2 send theirs as the revision feedback.
Tool-usage guidance is the agent's own business and stays in a separate message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BENCHMARK_FILES",
    "BUNDLED",
    "STAGES",
    "Instruction",
    "InstructionError",
    "instruction_text",
    "resolve_instructions",
]

STAGES = ("s0", "s1", "s2")

BENCHMARK_FILES: Mapping[str, str] = {
    "s0": "datasets/standard.md",
    "s1": "prompt_experiment/S1",
    "s2": "prompt_experiment/S2",
}
"""Where the public checkout keeps each stage's instruction, relative to its root (a file or a folder)."""

_TEXT_SUFFIXES = (".md", ".txt")
_LEVELS_UP = 2

S0_TEXT = """\
Standardize the raw medical imaging dataset below into the MDS-Bench output layout. The manifest lists the \
samples to produce, one per line, by index and raw source file; produce exactly those, and nothing from \
files outside the dataset's data/ folder.

Output layout (one folder):
- images/<index>.png: the 2D image of the sample, converted from its raw source (for a volume one slice, for \
a video one frame; record which one in the spatial block).
- masks/<index>.png (segmentation only): a label map of the same width and height as the image, pixel value \
= class id, 0 = background, taken from the same slice or frame as the image.
- standardized_annotations/<index>.json: one JSON object per sample (described below).
- data_meta.json: one JSON object for the dataset (described below).

Per-sample JSON: five blocks.
- record: {"schema_version": "1.0.1", "dataset_name": <dataset name>, "image_path": "images/<index>.png"}.
- context: {"sample": {...}, "text": {...}}. context.sample holds modality_primary (the imaging modality \
the README, headers or names state), anatomical_structure, subject_id, the demographics sex, \
race_ethnicity, site_id (strings; "unknown" or "NA" when the data does not say) and age_years (0 when \
unknown), and extra, the source trace: "source_file" = the manifest path exactly as listed ("data/..."), \
"original_filename" = its basename, "subject_id", "map_type" ("pixel_mask", "bbox", "image_level_label" or \
"label"), the annotation file used ("label_file", "mask_file" or "bbox_file"), and for classification \
"label_text" and "class_name".
- media_geometry: {"media": {"task_type": "classification" | "segmentation" | "detection", "dimension": \
"2D" | "3D" | "video", "annotation_type": <the map_type>, "confidence_global": 1.0}, "spatial": {"common": \
..., "three_d": ..., "video": ...}} with exactly one spatial branch filled and the other two {}: common = \
{"pixel_size_px": [w, h], "pixel_spacing_mm": [x, y], "was_resampled": false} for 2D; three_d = \
{"pixel_size_px": [w, h], "volume_shape_voxels": [z, h, w], "voxel_spacing_mm": [...], "slice_axis": a, \
"slice_index": k} for a volume; video = {"pixel_size_px": [w, h], "n_frames": T, "fps": f, "frame_index": \
k} for a video.
- tasks: {"classification": ..., "segmentation": ..., "detection": ...}, all three keys present, exactly the \
active one filled and the other two {}. classification = {"schema_variant": "multiclass", "class_names": \
{"0": ..., "1": ...}, "label": <int>, "label_name": <class_names[label]>}; segmentation = \
{"schema_variant": "2d_coco" | "3d_mask" | "video_coco", "classes": {"0": "background", "1": ...}, \
<"coco_2d" | "mask_3d" | "video_coco">: {"format": "label_map_png", "mask_path": "masks/<index>.png", \
"label_values": [...]}}; detection = {"schema_variant": "2d" | "3d" | "video", "class_names": {"1": ...}, \
"boxes2d": [{"bbox": [x, y, w, h], "category_id": 1, "category_name": ...}]} in output-image pixels.
- provenance: {"timestamp_utc": ..., "notes": "Converted from: <source_file>"}.
Never write keys ending in __desc or __options.

data_meta.json: dataset_name, modality_primary (list), task_type (list of the task types used), \
data_volume {"total": <number of sample JSONs written>, ...}, valid_image_n {"total": <number of readable \
images written>}, num_classes_per_task, anatomical_structure, domain.

Work from the evidence in the raw data: file formats and headers, folder and file names, tables, README \
text. Convert every sample, check that images, masks, JSON and data_meta agree, then finish."""

S1_TEXT = """\
Review the output you wrote against the raw data, the manifest and the output format, without ground \
truth. Check every field on seven axes: (1) source trace: extra.source_file / original_filename name the \
manifest file; (2) coverage: one image and one JSON per manifest index; (3) schema: the five top-level \
blocks, exactly one spatial and one task branch filled; (4) semantics: task type, dimension, labels and \
class ids agree with the data; (5) information quality: no placeholder where the data has the value; \
(6) content fidelity: the image, mask and boxes come from the declared source and slice or frame; \
(7) metadata: data_meta counts equal the written outputs. Change a field only with evidence from the data; \
otherwise keep it."""

S2_TEXT = """\
A deterministic validator flagged the items below. Fix each one using the raw data as evidence. Only the \
flagged fields may change (when a slice or frame is flagged, the image and mask of that sample move with \
it); any other change is reverted by the framework."""

BUNDLED: Mapping[str, str] = {"s0": S0_TEXT, "s1": S1_TEXT, "s2": S2_TEXT}
"""This project's own instruction per stage, used where the benchmark checkout has none."""


class InstructionError(ValueError):
    """An instruction file named by the user cannot be used (missing, unreadable, ambiguous folder)."""


@dataclass(frozen=True)
class Instruction:
    """One stage's instruction as a run uses it.

    Attributes:
        stage: ``s0``, ``s1`` or ``s2``.
        text: The text, verbatim.
        source: The file it was read from, or ``"bundled"``.
        sha256: SHA-256 of the UTF-8 text.
    """

    stage: str
    text: str
    source: str
    sha256: str

    def record(self) -> dict[str, str]:
        """What ``run.json`` keeps: where the text came from and its hash (never the text)."""
        return {"source": self.source, "sha256": self.sha256}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _prompt_file(folder: Path) -> Path | None:
    """The one prompt file of a ``prompt_experiment/Sx`` folder (a name with "prompt" wins among several)."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in _TEXT_SUFFIXES)
    if len(files) > 1:
        named = [p for p in files if "prompt" in p.name.lower()]
        files = named if len(named) == 1 else files
    if len(files) > 1:
        raise InstructionError(
            f"{folder} holds several prompt files ({', '.join(p.name for p in files)}); "
            f"name one with agent.instructions.{folder.name.lower()}=<file>"
        )
    return files[0] if files else None


def _read(stage: str, path: Path) -> Instruction:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InstructionError(f"agent.instructions.{stage}: cannot read {path}: {exc}") from None
    return Instruction(stage, text, str(path), _sha(text))


def resolve_instructions(
    root: Path | None, explicit: Mapping[str, Any] | None = None
) -> dict[str, Instruction]:
    """Find each stage's instruction: the file the user named, else the checkout's, else ours.

    The checkout's files are looked for at `BENCHMARK_FILES` below ``root`` or below one of its two parent
    folders (``benchmark.root`` may be the checkout, its ``datasets/`` folder or a group folder in it).

    Args:
        root: The benchmark root, or None for the bundled suite.
        explicit: ``agent.instructions`` (``{"s0": <file> | None, ...}``; ``"bundled"`` forces ours).

    Returns:
        One `Instruction` per stage.

    Raises:
        InstructionError: A named file is missing or unreadable, or a prompt folder is ambiguous.
    """
    named = dict(explicit or {})
    unknown = sorted(set(named) - set(STAGES))
    if unknown:
        raise InstructionError(f"unknown agent.instructions key(s) {unknown}; valid: {', '.join(STAGES)}")
    out: dict[str, Instruction] = {}
    for stage in STAGES:
        choice = named.get(stage)
        if choice == "bundled":
            out[stage] = Instruction(stage, BUNDLED[stage], "bundled", _sha(BUNDLED[stage]))
            continue
        if choice:
            path = Path(str(choice)).expanduser()
            if not path.is_absolute() and root is not None and not path.exists():
                path = root / path
            if path.is_dir():
                found = _prompt_file(path)
                if found is None:
                    raise InstructionError(f"agent.instructions.{stage}: no .md/.txt prompt file in {path}")
                path = found
            if not path.is_file():
                raise InstructionError(f"agent.instructions.{stage}: no such file {path}")
            out[stage] = _read(stage, path)
            continue
        located = _in_checkout(root, stage) if root is not None else None
        if located is not None:
            out[stage] = _read(stage, located)
        else:
            out[stage] = Instruction(stage, BUNDLED[stage], "bundled", _sha(BUNDLED[stage]))
    return out


def _in_checkout(root: Path, stage: str) -> Path | None:
    """The stage's file in the checkout that holds ``root``: the root itself or up to two folders above it,
    since users point ``benchmark.root`` at the checkout, at its ``datasets/`` or at one group folder."""
    base = root.expanduser().absolute()
    for folder in [base, *base.parents][: _LEVELS_UP + 1]:
        candidate = folder / BENCHMARK_FILES[stage]
        if candidate.is_dir():
            return _prompt_file(candidate)
        if candidate.is_file():
            return candidate
    return None


def instruction_text(options: Mapping[str, Any], stage: str) -> str:
    """The instruction a task carries for a stage (``Task.options["instructions"]``), else ours.

    Args:
        options: ``Task.options``.
        stage: ``s0``, ``s1`` or ``s2``.

    Returns:
        The text to send verbatim.
    """
    carried = options.get("instructions") if isinstance(options, Mapping) else None
    text = carried.get(stage) if isinstance(carried, Mapping) else None
    return text if isinstance(text, str) and text.strip() else BUNDLED[stage]

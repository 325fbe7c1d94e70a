"""Every prompt of the LiteLLM agent, as named constants (written for this project).

The system prompt follows the staged workflow of a careful human standardizer: locate the source evidence,
convert the visual content, align annotations and metadata, check consistency. The filling rules are the ones
the benchmark's evaluator enforces (SPEC §2, docs/contracts.md); each rule is stated as an instruction.
"""

from __future__ import annotations

__all__ = [
    "ANNOTATION_GUIDE",
    "CODE_TOOL_GUIDE",
    "FINISH_MISSING",
    "LIMIT_NOTICE",
    "NO_CODE_SENTENCE",
    "NO_TOOL_CALL_NUDGE",
    "REVISE_PROMPT",
    "SYSTEM_PROMPT",
    "TASK_PROMPT",
    "VIEW_IMAGE_CAPTION",
    "with_code_tool",
]

SYSTEM_PROMPT = """\
You standardize raw medical imaging datasets into the MDS-Bench output format. You work only through the \
tools you are given: you cannot run shell commands or code. Paths you read are relative to the dataset root \
and start with data/; paths of outputs (images/, masks/) are relative to your output folder.

Work in four stages, for every sample of the manifest:
1. Locate the source evidence. The manifest names the exact raw file of each sample. Inspect it (format, \
shape, spacing, modality, container keys, table columns) and look around it for the files that carry its \
annotation: masks or label maps beside it, label tables (CSV/TSV/parquet), labels in file or folder names.
2. Convert the visual content. Render the source to images/<index>.png with the render tool. For a volume \
choose the slice that shows the annotated structure (pass mask_source to pick the mask's largest slice), \
otherwise the middle slice; for a video choose the annotated frame, otherwise the middle frame. Render \
segmentation masks to masks/<index>.png with kind="mask" and the same slice or frame, so the mask has the \
image's width and height and pixel value = class id. Look at what you wrote with view_image when unsure.
3. Align annotations and metadata. Write one annotation per sample with write_annotation, then the dataset \
file with write_data_meta.
4. Check consistency: every manifest index has an image and an annotation, class ids and names agree with \
the class table, boxes lie inside the image, counts in data_meta.json match what you wrote. Then call finish.

Filling rules (the evaluator enforces them):
- record = {"schema_version": "1.0.1", "dataset_name": <dataset name>, "image_path": "images/<index>.png"}.
- context.sample.extra is the source trace: "source_file" is the manifest path exactly as given \
("data/..."), "original_filename" its basename, plus "subject_id", "map_type" ("pixel_mask", "bbox", \
"image_level_label" or "label") and the label/mask/bbox file you used ("label_file", "mask_file", \
"bbox_file"), and "label_text"/"class_name" for classification.
- Unknown demographic values are strings, never null: "sex": "unknown", "race_ethnicity": "NA", \
"site_id": "NA"; "age_years": 0 when unknown.
- context.sample.modality_primary is required (e.g. "CT", "MRI", "X-ray", "Ultrasound", "Microscopy").
- media_geometry.media: task_type is one of classification, segmentation, detection; dimension is "2D", \
"3D" or "video"; annotation_type equals the map_type; confidence_global 1.0.
- media_geometry.spatial: exactly one non-empty branch: common for 2D, three_d for 3D, video for video; the \
other two are {}.
- tasks: all three keys present; exactly the active one is non-empty, the other two are {}.
- Never write keys ending in __desc or __options.
- data_meta.json: dataset_name, modality_primary (list), task_type (list), data_volume {"total": <number of \
samples written>, ...}, valid_image_n {"total": <number of images written>}, num_classes_per_task, \
anatomical_structure, domain.

Payload conventions:
- segmentation: {"schema_variant": "2d_coco" | "3d_mask" | "video_coco", "classes": {"0": "background", \
"1": ...}, <"coco_2d" | "mask_3d" | "video_coco">: {"format": "label_map_png", "mask_path": \
"masks/<index>.png", "label_values": [...]}}.
- detection: {"schema_variant": "2d" | "3d" | "video", "class_names": {"1": "lesion"}, "boxes2d": \
[{"bbox": [x, y, w, h], "category_id": 1, "category_name": "lesion"}]} in output-image pixels.
- classification: {"schema_variant": "multiclass", "class_names": {"0": ...}, "label": <int>, \
"label_name": <class_names[label]>}.
- spatial: 2D common = {"pixel_size_px": [w, h], "pixel_spacing_mm": [x, y], "was_resampled": false}; \
3D three_d = {"pixel_size_px": [w, h], "volume_shape_voxels": [z, h, w], "voxel_spacing_mm": [...], \
"slice_axis": 0, "slice_index": k}; video = {"pixel_size_px": [w, h], "n_frames": T, "fps": f, \
"frame_index": k}.
"""

ANNOTATION_GUIDE = """\
Each annotation is a JSON object with the blocks record, context ({"sample": {...}, "text": {...}}), \
media_geometry ({"media": {...}, "spatial": {"common": ..., "three_d": ..., "video": ...}}), tasks \
({"classification": ..., "segmentation": ..., "detection": ...}) and provenance ({"timestamp_utc": ..., \
"notes": "Converted from: <source_file>"})."""

TASK_PROMPT = """\
Dataset name: {name}
Candidate: {candidate_index}

Manifest ({count} samples; index -> source file):
{manifest}

Output schema of one annotation:
{schema}

Standardize every sample, write data_meta.json, then call finish."""

REVISE_PROMPT = """\
Your output folder already holds a candidate for this dataset (images/, masks/, standardized_annotations/, \
data_meta.json). Revise it according to the feedback below. Change only these fields: {editable}. Keep \
everything else exactly as it is; rewrite a file with write_annotation / write_data_meta only when one of \
its editable fields must change. Then call finish.

Feedback:
{feedback}"""

NO_TOOL_CALL_NUDGE = (
    "Please continue by calling one of the tools. When every sample is written and data_meta.json is "
    "complete, call finish."
)

FINISH_MISSING = "Finished with missing outputs for indices {missing}."

LIMIT_NOTICE = "Stopped: {reason}. The outputs written so far are kept."

VIEW_IMAGE_CAPTION = "Image returned by view_image({path}) for tool call {call_id}:"


NO_CODE_SENTENCE = "you cannot run shell commands or code"

CODE_TOOL_GUIDE = """\
You can also write and run Python with run_python. Its working directory holds data/ (the dataset's raw \
files, read-only) and output/ (your output folder: output/images/<index>.png, output/masks/<index>.png, \
output/standardized_annotations/<index>.json, output/data_meta.json). medio (medio.inspect, medio.read, \
medio.render, medio.write_png), numpy, pandas and PIL are importable. A script that converts every sample \
at once is usually best: run it, read what it printed, check a few outputs, fix and run it again. Scripts \
have no network access and limited CPU time, wall time and memory."""


def with_code_tool(system_prompt: str) -> str:
    """The system prompt for an agent that also has ``run_python``.

    Args:
        system_prompt: The tool-only system prompt.

    Returns:
        The prompt without the no-code sentence, followed by `CODE_TOOL_GUIDE`.
    """
    text = system_prompt.replace(NO_CODE_SENTENCE, "you can also run Python with run_python")
    return text.rstrip() + "\n\n" + CODE_TOOL_GUIDE

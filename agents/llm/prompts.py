"""Every prompt of the LiteLLM agent, as named constants (written for this project).

The system prompt is tool-usage guidance only: which tool serves which step (locate the source evidence,
convert the visual content, write annotations and metadata, look back at the output). What to produce is the
task instruction, a separate user message: the benchmark's own ``datasets/standard.md`` when the run found
one, else the project's text (`agents.instructions`).
"""

from __future__ import annotations

__all__ = [
    "ANNOTATION_GUIDE",
    "BATCH_PROMPT",
    "CODE_TOOL_GUIDE",
    "EVIDENCE_HEAD",
    "FINISH_NOT_YET",
    "META_PROMPT",
    "NO_CODE_SENTENCE",
    "NO_TOOL_CALL_NUDGE",
    "PLAN_PROMPT",
    "REVISE_BATCH_NOTE",
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

How to use the tools (the task instruction in the first user message says what to produce):
- Locate the evidence: tree summarises the whole folder (files per extension, kinds of folders, every \
text and table file); list_dir (text and table files first, paged), find and grep locate files; \
read_text, table_head and inspect show the raw files (format, shape, spacing, modality, container keys, \
table columns) and the files around them (masks, label maps, label tables, labels in file or folder names).
- Convert: render writes images/<index>.png from a raw file (choose the slice or frame with slice_index / \
frame; mask_source picks the slice where a mask has the most foreground). Render a segmentation mask to \
masks/<index>.png with kind="mask" and the same slice or frame, so pixel value = class id and the mask has \
the image's size.
- Write: write_annotation writes one sample's JSON, write_data_meta the dataset file; both replace an \
earlier version.
- Look back at your own output at any time: list_output and read_output show what you wrote, \
view_image(where="output") shows an image or a mask, and edit_fields changes single fields of a JSON you \
wrote without resending it.
- Call finish when every sample of the manifest is written and data_meta.json agrees with it.
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

{evidence}

Standardize every sample, write data_meta.json, then call finish."""

REVISE_PROMPT = """\
Your output folder already holds your candidate for this dataset (images/, masks/, \
standardized_annotations/, data_meta.json). Read it first (list_output, read_output, view_image with \
where="output"), then revise it according to the feedback below. Change only these fields: {editable}. \
Keep everything else exactly as it is: change single fields with edit_fields; re-render an image or a mask \
only when its slice or frame must change, and then move the image, the mask and the JSON together. Then \
call finish.

Feedback:
{feedback}"""

# Each sample's label-table rows (matched as the validator matches them) or its path's folders: the evidence
# that decides its label, in front of the model before its first tool call (agents.llm.sample_evidence).
EVIDENCE_HEAD = "Evidence per sample (the label-table rows that name it, else its folders and file name):"

NO_TOOL_CALL_NUDGE = (
    "Please continue by calling one of the tools. When every sample is written and data_meta.json is "
    "complete, call finish."
)

FINISH_NOT_YET = """\
Not finished yet: these outputs of your samples are missing or invalid:
{problems}
Write or fix them, then call finish again. (A second finish is accepted as it is.)"""

# A dataset larger than one batch is done in phases, each its own conversation. Every task prompt starts
# with "Dataset name:" (one fake server serves a whole run by that line) and names its phase.
PLAN_PROMPT = """\
Dataset name: {name}
Candidate: {candidate_index}
Phase: plan

Manifest ({count} samples; {shown} shown, index -> source file):
{manifest}

Output schema of one annotation:
{schema}

This dataset is standardized in phases. Now, explore it with the read tools (list_dir, read_text, inspect, \
view_image with where="dataset") and decide the conventions every sample will follow, then call write_plan \
once: which file is a sample's source, where its label comes from (a table, a folder or file name, a mask), \
which slice or frame to render, the class table, and any other convention (modality, ids, dimension). Do not \
convert samples now: each batch of samples is converted afterwards in its own conversation, which gets your \
plan and its own samples only."""

BATCH_PROMPT = """\
Dataset name: {name}
Candidate: {candidate_index}
Phase: batch {batch} of {batches}

The plan for this dataset (written after exploring it; follow it):
{plan}

Samples of this batch ({count} of the dataset's {total}; index -> source file):
{manifest}

Output schema of one annotation:
{schema}

{evidence}

Standardize exactly these samples (render the image and any mask, write_annotation), then call finish. \
data_meta.json is written later, once for the whole dataset."""

META_PROMPT = """\
Dataset name: {name}
Candidate: {candidate_index}
Phase: meta

The plan for this dataset:
{plan}

Annotations written: {written} of {total} samples.{missing}
What they say (counted from the files):
{summary}

Write data_meta.json for the whole dataset with write_data_meta (read_output shows any annotation), then \
call finish."""

REVISE_BATCH_NOTE = "Revise only the samples of this batch: {indices}."

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
    """The system prompt for an agent that also has ``run_python``: the tool-only one without its no-code
    sentence, followed by `CODE_TOOL_GUIDE`.
    """
    text = system_prompt.replace(NO_CODE_SENTENCE, "you can also run Python with run_python")
    return text.rstrip() + "\n\n" + CODE_TOOL_GUIDE

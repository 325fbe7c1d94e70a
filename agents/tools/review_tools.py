"""Tools over the candidate's own output folder, so that a revising model sees what it wrote.

``list_output`` and ``read_output`` are read-only (the output folder, never the dataset's ``VLM/`` or another
candidate); ``edit_fields`` changes single dotted fields of one annotation or of ``data_meta.json`` without
resending the whole object. ``view_image(where="output")`` (in `agents.tools.tools`) shows the images and
masks. `feedback_with_values` renders S1/S2 feedback with the current value of every field it names, read from
the candidate, so the revise prompt itself carries what is being judged.

Handlers take the sandbox, the manifest indices and the parsed arguments and return the text the model sees;
a refused path raises `SandboxError` and any other failure an exception, both turned into tool errors by
`agents.tools.tools.ToolBox`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from agents.base import Feedback, Task
from agents.tools.folder_tools import folder_page
from agents.tools.sandbox import Sandbox, SandboxError
from agents.tools.tool_args import ToolArgs
from benchmark.source_stem import add_source_stem_to_annotation
from core.atomic import atomic_write_json
from validator.values import set_path

__all__ = [
    "EDITABLE_OPTION",
    "REVIEW_TOOLS",
    "EditFieldsArgs",
    "ListOutputArgs",
    "ReadOutputArgs",
    "current_value",
    "feedback_with_values",
    "text_head",
]

EDITABLE_OPTION = "editable_fields"
"""``Task.options`` key a revision sets: the field paths `edit_fields` may change (the strategy still enforces
its whitelist afterwards; this refusal only tells the model at once)."""

_VALUE_CHARS = 400
"""How much of one current value the revise prompt shows (a class table fits; a box list is cut)."""

_JSON_FILE = re.compile(r"^(standardized_annotations/\d+\.json|data_meta\.json)$")


class ListOutputArgs(ToolArgs):
    """List your own output folder (images/, masks/, standardized_annotations/, data_meta.json), read-only."""

    path: str = Field(".", description="Folder relative to your output folder, e.g. '.' or 'images'.")
    offset: int = Field(0, ge=0, description="Skip this many entries (for the next page).")
    limit: int = Field(100, ge=1, description="Entries to show (at most the sandbox's listing cap).")


class ReadOutputArgs(ToolArgs):
    """Read a file you wrote: an annotation ('standardized_annotations/3.json') or 'data_meta.json'."""

    path: str = Field(description="File relative to your output folder.")
    max_bytes: int = Field(16384, ge=1, description="How many bytes to return at most.")


class EditFieldsArgs(ToolArgs):
    """Change single fields of an annotation or of data_meta.json you wrote (the others stay as they are)."""

    path: str = Field(description="'standardized_annotations/<index>.json' or 'data_meta.json'.")
    set: dict[str, Any] = Field(
        default_factory=dict,
        description="Dotted field path -> new value, e.g. {'tasks.classification.label': 1}.",
    )
    remove: list[str] = Field(default_factory=list, description="Dotted field paths to delete.")


def text_head(target: Path, max_bytes: int) -> str | None:
    """The first ``max_bytes`` of a text file, with a truncation note; None for a binary file (a NUL byte)."""
    size = target.stat().st_size
    with target.open("rb") as handle:
        head = handle.read(max_bytes)
    if b"\x00" in head:
        return None
    more = f"\n[... truncated: {size - len(head)} more bytes]" if size > len(head) else ""
    return head.decode("utf-8", errors="replace") + more


def _list_output(sandbox: Sandbox, task: Task, args: ListOutputArgs) -> str:
    folder = sandbox.output_path(args.path)
    if not folder.is_dir():
        raise SandboxError(args.path, "not a folder of your output")
    return folder_page(sandbox, folder, args.offset, args.limit, f"list_output(path={args.path!r})")


def _read_output(sandbox: Sandbox, task: Task, args: ReadOutputArgs) -> str:
    cap = sandbox.limits.max_text_bytes
    if args.max_bytes > cap:
        raise SandboxError(args.path, f"max_bytes {args.max_bytes} is above the {cap}-byte read cap")
    target = sandbox.output_path(args.path)
    if not target.is_file():
        raise SandboxError(args.path, "no such file in your output (list_output shows what exists)")
    text = text_head(target, args.max_bytes)
    if text is None:
        raise SandboxError(args.path, "a binary file; use view_image for images and masks")
    return text


def _json_target(sandbox: Sandbox, indices: Collection[int], path: str) -> Path:
    if not _JSON_FILE.match(path):
        raise SandboxError(path, "only standardized_annotations/<index>.json or data_meta.json can be edited")
    stem = path.rsplit("/", 1)[-1].removesuffix(".json")
    if stem.isdigit() and int(stem) not in indices:
        raise SandboxError(path, f"index {stem} is not in the manifest")
    target = sandbox.output_path(path)
    if not target.is_file():
        raise SandboxError(path, "write the file first (write_annotation / write_data_meta); edit changes it")
    return target


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    parts = [p for p in dotted.split(".") if p]
    if not parts:
        raise ValueError("an empty field path")
    set_path(doc, ".".join(parts), value)


def _remove(doc: dict[str, Any], dotted: str) -> bool:
    parts = [p for p in dotted.split(".") if p]
    node: Any = doc
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    return isinstance(node, dict) and bool(parts) and node.pop(parts[-1], _ABSENT) is not _ABSENT


_ABSENT = object()


def _edit_fields(sandbox: Sandbox, task: Task, args: EditFieldsArgs) -> str:
    if not args.set and not args.remove:
        raise ValueError("nothing to change: give set and/or remove")
    target = _json_target(sandbox, task.indices, args.path)
    prefix = "data_meta." if args.path == "data_meta.json" else ""
    refused = [d for d in [*args.set, *args.remove] if not _editable(prefix + d, task)]
    if refused:
        allowed = ", ".join(task.options.get(EDITABLE_OPTION) or ())
        raise SandboxError(
            args.path, f"not editable in this revision: {', '.join(refused)} (editable: {allowed})"
        )
    document = json.loads(target.read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise ValueError(f"{args.path} does not hold a JSON object; rewrite it whole")
    changed: dict[str, Any] = {}
    for dotted, value in args.set.items():
        _set(document, dotted, value)
        changed[dotted] = value
    missing = [d for d in args.remove if not _remove(document, d)]
    # An edited source brings the stem the official scorer needs, as write_annotation does (docs/scoring.md).
    recorded = add_source_stem_to_annotation(document) if not prefix else None
    atomic_write_json(target, document, durable=False)
    result: dict[str, Any] = {
        "written": args.path,
        "set": changed,
        "removed": sorted(set(args.remove) - set(missing)),
    }
    if missing:
        result["not_found"] = missing
    if recorded:
        result["recorded"] = [recorded.note()]
    return json.dumps(result, ensure_ascii=False, default=str)


def _editable(path: str, task: Task) -> bool:
    """Whether a revision may edit ``path``: always outside a revision, else inside its editable fields."""
    fields = task.options.get(EDITABLE_OPTION)
    if fields is None:
        return True
    return any(w == "*" or path == w or path.startswith(w + ".") for w in fields)


REVIEW_TOOLS: Mapping[str, tuple[type[ToolArgs], Callable[[Sandbox, Task, Any], str]]] = {
    "list_output": (ListOutputArgs, _list_output),
    "read_output": (ReadOutputArgs, _read_output),
    "edit_fields": (EditFieldsArgs, _edit_fields),
}
"""Tool name → (argument model, handler)."""


def current_value(output_dir: Path, index: int | None, path: str) -> tuple[bool, Any]:
    """``(found, value)`` of a candidate's field (a dotted path, ``""`` for the whole document; ``data_meta.``
    paths and index None read ``data_meta.json``); ``found`` is False when the file or the field is absent.
    """
    meta = index is None or path.startswith("data_meta")
    file = output_dir / ("data_meta.json" if meta else f"standardized_annotations/{index}.json")
    try:
        node: Any = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None
    dotted = path.removeprefix("data_meta").lstrip(".") if meta else path
    for part in (p for p in dotted.split(".") if p):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 3] + "..."


def feedback_with_values(feedback: Feedback | str, output_dir: Path) -> str:
    """Feedback as the revise prompt shows it: its message, then one line per item with the field's current
    value (``- sample 3 · tasks.classification.label: <why> (current value: 1)``).
    """
    if not isinstance(feedback, Feedback):
        return str(feedback)
    lines = [feedback.message] if feedback.message else []
    for index, path, message in feedback.items:
        where = "data_meta.json" if index is None or path.startswith("data_meta") else f"sample {index}"
        found, value = current_value(output_dir, index, path)
        now = f"current value: {_short(value)}" if found else "currently absent"
        lines.append(f"- {where} · {path or '(whole file)'}: {message} ({now})")
    return "\n".join(lines)

"""The tools the LiteLLM agent may call, their argument models and their JSON-schema definitions.

Each tool's arguments are a pydantic model; the definitions sent to the provider are generated from those
models, and the model's raw argument JSON is validated against them before anything runs. Every failure
(unknown tool, invalid JSON, wrong types, a refused path, an unreadable file) becomes a `ToolResult` with
``error`` set and a message the model sees; nothing here raises into the agent loop.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationError

import medio
from agents.base import Task
from agents.tools.file_notes import (
    LABEL_MAP_OBJECTS,
    bounded_summary,
    derived_object_note,
)
from agents.tools.folder_tools import FOLDER_TOOLS
from agents.tools.render_cache import RENDERS, InspectedFile, RenderedFile, ViewedImage, file_identity
from agents.tools.review_tools import REVIEW_TOOLS
from agents.tools.sandbox import Sandbox, SandboxError
from agents.tools.table_tools import TABLE_TOOLS
from agents.tools.tool_args import ToolArgs, validation_problems
from benchmark.source_stem import add_source_stem_to_annotation
from core.atomic import atomic_write_json

__all__ = ["TOOL_MODELS", "ToolBox", "ToolResult", "tool_definitions"]

log = logging.getLogger(__name__)

_VIEW_MAX_SIDE = 512
# Entries per listing an inspect result shows the model (MATLAB variables, HDF5 datasets, CZI scenes ...).


class InspectArgs(ToolArgs):
    """Summarise a raw file: format, shape, dtype, spacing, modality, key headers, container keys, columns;
    CZI scenes/channels/z, ENVI bands/wavelengths/interleave, every MATLAB variable (path, shape, class) and
    the one read by default, and the real file behind a macOS '._' stub."""

    path: str = Field(description="File or DICOM folder relative to the dataset root.")


class RenderArgs(ToolArgs):
    """Render a raw file to the output image (kind='image') or label-map mask (kind='mask') of a sample."""

    index: int = Field(
        description="Manifest index of the sample; writes images/<index>.png or masks/<index>.png."
    )
    source: str = Field(description="Raw file relative to the dataset root.")
    kind: Literal["image", "mask"] = Field("image", description="'mask' keeps integer class ids unscaled.")
    key: str | None = Field(
        None,
        description="Container key: npz/h5 member, MATLAB path ('s.img', 'c{2}'), CZI channel, ENVI band.",
    )
    series: int | None = Field(
        None, ge=0, description="CZI scene (or DICOM series of a folder), when needed."
    )
    item: int | None = Field(None, description="Item index inside a stacked container, when needed.")
    volume: int | None = Field(None, description="Volume index of a 4D file, when needed.")
    slice_index: int | None = Field(
        None, description="Slice of a volume; default: mask's largest slice or middle."
    )
    axis: int = Field(0, ge=0, le=2, description="Slicing axis of a volume (0 = axial in array order).")
    frame: int | None = Field(None, description="Frame of a video or multi-frame file.")
    window_center: float | None = Field(
        None, description="Display window centre (e.g. 40 for CT soft tissue)."
    )
    window_width: float | None = Field(None, gt=0, description="Display window width (e.g. 400).")
    mask_source: str | None = Field(None, description="Mask file whose largest-foreground slice is chosen.")


class ViewImageArgs(ToolArgs):
    """Look at an image: one you wrote (where='output') or any image file of the dataset (where='dataset',
    shown as `render` would show it with default options: DICOM, NIfTI, MINC ... included)."""

    path: str = Field(description="e.g. 'images/0.png' (output) or 'data/x.dcm' (dataset).")
    where: Literal["output", "dataset"] = Field("output", description="Which root the path is relative to.")


class WriteAnnotationArgs(ToolArgs):
    """Write standardized_annotations/<index>.json for one sample (replaces an earlier version)."""

    index: int = Field(description="Manifest index of the sample.")
    annotation: dict[str, Any] = Field(description="The complete per-image annotation object.")


class WriteDataMetaArgs(ToolArgs):
    """Write data_meta.json for the whole dataset (replaces an earlier version)."""

    data_meta: dict[str, Any] = Field(description="The complete dataset metadata object.")


class FinishArgs(ToolArgs):
    """End the work on this dataset."""

    summary: str = Field("", description="One or two sentences on what was done and any doubt left.")


# Handlers of the read-only tools living in their own modules: (sandbox, task, arguments) -> text.
_TEXT_TOOLS = {**FOLDER_TOOLS, **TABLE_TOOLS}

TOOL_MODELS: dict[str, type[BaseModel]] = {
    # Finding one's way in the dataset folder (agents/tools/folder_tools.py, table_tools.py).
    **{name: model for name, (model, _handler) in _TEXT_TOOLS.items()},
    "inspect": InspectArgs,
    "render": RenderArgs,
    "view_image": ViewImageArgs,
    "write_annotation": WriteAnnotationArgs,
    "write_data_meta": WriteDataMetaArgs,
    # Read-only views of the candidate's own output, and field edits (agents/tools/review_tools.py).
    **{name: model for name, (model, _handler) in REVIEW_TOOLS.items()},
    "finish": FinishArgs,
}


def _strip_titles(schema: Any) -> Any:
    # Pydantic adds a "title" to every property; providers ignore them and they cost tokens on every call.
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def tool_definitions(
    extra: Mapping[str, type[BaseModel]] | None = None, only: Collection[str] | None = None
) -> list[dict[str, Any]]:
    """The OpenAI-style tool definitions (``{"type": "function", "function": {"name", "description",
    "parameters"}}``), generated from the argument models: the standard tools (only those in ``only``, a
    mode's tool set, when given), then the opt-in ``extra`` ones (name → argument model, e.g. ``run_python``).
    """
    out = []
    standard = {k: v for k, v in TOOL_MODELS.items() if only is None or k in only}
    for name, model in {**standard, **(extra or {})}.items():
        params = _strip_titles(model.model_json_schema())
        params.pop("description", None)
        out.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": (model.__doc__ or "").strip(),
                    "parameters": params,
                },
            }
        )
    return out


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returned.

    Attributes:
        text: The result shown to the model (JSON or a message).
        error: The kind of failure (``unknown_tool``, ``invalid_json``, ``invalid_arguments``, ``sandbox``,
            ``tool_error``), or None on success.
        image_url: A ``data:image/png;base64,...`` URL to show a vision model, if any.
        finished: True when the model called ``finish``.
    """

    text: str
    error: str | None = None
    image_url: str | None = None
    finished: bool = False


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str)


class ToolBox:
    """Runs tool calls for one candidate inside its sandbox.

    Args:
        task: The dataset and candidate.
        sandbox: Where reads and writes may go.
        vision: Whether ``view_image`` returns the image itself (else a text summary only).
        extra_tools: Opt-in tools: name → (argument model, handler returning a `ToolResult`).
        only: The standard tools this toolbox runs (a mode's tool set); None: all. Any other is unknown.
    """

    def __init__(
        self,
        task: Task,
        sandbox: Sandbox,
        vision: bool,
        extra_tools: Mapping[str, tuple[type[BaseModel], Callable[[Any], ToolResult]]] | None = None,
        only: Collection[str] | None = None,
    ) -> None:
        self.task = task
        self.sandbox = sandbox
        self.vision = vision
        self._indices = set(task.indices)
        #: The last failed read (``render``/``inspect``) of each sample, one line: why the model may have
        #: left it unwritten (the agent names it in ``Candidate.skipped`` when it did).
        self.sample_failures: dict[int, str] = {}
        self._by_source = {e.relpath: e.index for e in task.entries}
        self._handlers: dict[str, Callable[[Any], ToolResult]] = {
            **{name: self._text_tool(handler) for name, (_model, handler) in _TEXT_TOOLS.items()},
            "inspect": self._inspect,
            "render": self._render,
            "view_image": self._view_image,
            "write_annotation": self._write_annotation,
            "write_data_meta": self._write_data_meta,
            **{name: self._text_tool(handler) for name, (_model, handler) in REVIEW_TOOLS.items()},
            "finish": self._finish,
        }
        if only is not None:
            self._handlers = {k: v for k, v in self._handlers.items() if k in only}
        self._models: dict[str, type[BaseModel]] = {
            k: v for k, v in TOOL_MODELS.items() if k in self._handlers
        }
        for name, (model, handler) in (extra_tools or {}).items():
            self._models[name] = model
            self._handlers[name] = handler

    def offers(self, name: str) -> bool:
        """Whether this toolbox runs the tool ``name`` (a mode may offer a subset of the tools).

        Args:
            name: A tool name.

        Returns:
            True when ``run(name, ...)`` dispatches it.
        """
        return name in self._models

    def run(self, name: str, raw_arguments: str | None) -> ToolResult:
        """Validate and run one tool call.

        Args:
            name: The tool name the model asked for.
            raw_arguments: The argument JSON string as the model produced it.

        Returns:
            The result; failures are results with ``error`` set, never exceptions.
        """
        model = self._models.get(name)
        if model is None:
            return ToolResult(
                f"Unknown tool {name!r}. Available tools: {', '.join(self._models)}.", "unknown_tool"
            )
        try:
            parsed = json.loads(raw_arguments or "{}")
        except ValueError as exc:
            return ToolResult(
                f"The arguments of {name} are not valid JSON ({exc}). Send one JSON object.", "invalid_json"
            )
        if not isinstance(parsed, dict):
            return ToolResult(f"The arguments of {name} must be a JSON object.", "invalid_json")
        try:
            args = model.model_validate(parsed)
        except ValidationError as exc:
            problems = "; ".join(validation_problems(exc))
            return ToolResult(f"Invalid arguments for {name}: {problems}.", "invalid_arguments")
        try:
            result = self._handlers[name](args)
        except SandboxError as exc:
            return ToolResult(str(exc), "sandbox")
        except Exception as exc:  # a tool failure is the model's information, not a crash of the run
            log.debug("tool %s failed", name, exc_info=True)
            result = ToolResult(f"{name} failed: {type(exc).__name__}: {exc}", "tool_error")
        if name in ("render", "inspect"):
            self._note_read(args, result)
        return result

    def _note_read(self, args: Any, result: ToolResult) -> None:
        """Remember a failed read of a sample's file (``render`` names the index, ``inspect`` its path)."""
        index = getattr(args, "index", None)
        if not isinstance(index, int):
            index = self._by_source.get(str(getattr(args, "path", "")).strip().lstrip("./"))
        if index is None:
            return
        why = result.error and result.text
        if not why and result.text.startswith("{") and '"error"' in result.text:
            summary = json.loads(result.text)  # inspect reports a damaged file in its summary, never raises
            why = f"inspect: {summary['error']}" if isinstance(summary, dict) and summary.get("error") else ""
        if why:
            self.sample_failures[index] = " / ".join(p.strip() for p in why.splitlines() if p.strip())[:400]

    def _text_tool(self, handler: Callable[[Sandbox, Any, Any], str]) -> Callable[[Any], ToolResult]:
        return lambda args: ToolResult(handler(self.sandbox, self.task, args))

    # -- read tools ------------------------------------------------------------------------------

    def _inspect(self, args: InspectArgs) -> ToolResult:
        target = self.sandbox.read_path(args.path)
        self.sandbox.check_size(target, args.path)
        identity = file_identity(target)
        key = ("inspect", identity) if identity is not None else None
        seen = RENDERS.get(key) if key is not None else None
        if isinstance(seen, InspectedFile):
            summary = seen.summary
        else:
            summary = medio.inspect(target)
            # A failure (an unreadable file ...) is not kept: it is asked again, in case it was passing.
            if key is not None and "error" not in summary:
                RENDERS.put(key, InspectedFile(summary, len(_json(summary))))
        return ToolResult(_json(self._relativize(bounded_summary(summary))))

    def _relativize(self, obj: Any) -> Any:
        # Never show the model (or the cache key) absolute paths: they differ between machines and runs.
        root = str(self.sandbox.dataset_root)
        if isinstance(obj, str) and obj.startswith(root):
            return obj[len(root) :].lstrip("/") or "."
        if isinstance(obj, dict):
            return {k: self._relativize(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self._relativize(v) for v in obj]
        return obj

    # -- write tools -----------------------------------------------------------------------------

    def _check_index(self, index: int) -> None:
        if index not in self._indices:
            raise SandboxError(str(index), f"index {index} is not in the manifest ({sorted(self._indices)})")

    def _render(self, args: RenderArgs) -> ToolResult:
        from medio.png import write_png_bytes

        self._check_index(args.index)
        source = self.sandbox.read_path(args.source)
        self.sandbox.check_size(source, args.source)
        key = self._render_key(args, source)
        done = RENDERS.get_or_make(key, lambda: self._render_file(args, source)) if key is not None else None
        if not isinstance(done, RenderedFile):
            done = self._render_file(args, source)
        folder = "images" if args.kind == "image" else "masks"
        dest = self.sandbox.write_path(f"{folder}/{args.index}.png")
        write_png_bytes(done.png, dest)
        width, height = done.width, done.height
        result: dict[str, Any] = {
            "written": f"{folder}/{args.index}.png",
            "size": [width, height],
            "render": self._shown_info(done),
            "source": done.source,
        }
        if done.label_values is not None:
            result["label_values"] = done.label_values
            partner = self.sandbox.output_path(f"images/{args.index}.png")
            if partner.is_file():
                with _open_image(partner) as img:
                    if img.size != (width, height):
                        result["warning"] = (
                            f"mask is {width}x{height} but images/{args.index}.png is "
                            f"{img.size[0]}x{img.size[1]}"
                        )
        return ToolResult(_json(result))

    def _shown_info(self, done: RenderedFile) -> Any:
        """``done.info`` as the model sees it (relative paths), computed once per dataset root."""
        root = str(self.sandbox.dataset_root)
        shown = done.shown.get(root)
        if shown is None:
            shown = done.shown[root] = self._relativize(done.info)
        return shown

    def _render_key(self, args: RenderArgs, source: Path) -> tuple[Any, ...] | None:
        """The `RENDERS` key of a render: both files' identities and every argument but the index.

        None (not cached) for a folder, or when the mask file is refused: the uncached path then reports
        the problems in the order it always did (the source read first).
        """
        identity = file_identity(source)
        mask_identity = None
        if args.mask_source is not None:
            try:
                mask_path = self.sandbox.read_path(args.mask_source)
                self.sandbox.check_size(mask_path, args.mask_source)
            except SandboxError:
                return None
            mask_identity = file_identity(mask_path)
            if mask_identity is None:
                return None
        if identity is None:
            return None
        options = args.model_dump(exclude={"index", "source", "mask_source"})
        return identity, mask_identity, tuple(sorted(options.items()))

    def _render_file(self, args: RenderArgs, source: Path) -> RenderedFile:
        """Read, render and encode one file (what `_render` keeps in `RENDERS`)."""
        from medio.png import encode_png

        image = medio.read(
            source, key=args.key, index=args.item, volume=args.volume, frame=args.frame, series=args.series
        )
        mask_array = None
        if args.mask_source is not None:
            mask_path = self.sandbox.read_path(args.mask_source)
            self.sandbox.check_size(mask_path, args.mask_source)
            mask_array = medio.read(mask_path).array
        if image.meta.format in LABEL_MAP_OBJECTS and args.slice_index is None and mask_array is None:
            # A SEG/RTSTRUCT label map spans its whole referenced series: its middle slice is often empty.
            mask_array = image.array if image.array.ndim == 3 else None
        window = None
        if args.window_center is not None and args.window_width is not None:
            window = (args.window_center, args.window_width)
        rendered = medio.render(
            image,
            slice_index=args.slice_index,
            axis=args.axis,
            frame=None if image.meta.frame_index is not None else args.frame,
            window=window,
            label=args.kind == "mask",
            mask=mask_array,
        )
        height, width = rendered.pixels.shape[:2]
        return RenderedFile(
            png=encode_png(rendered.pixels),
            width=int(width),
            height=int(height),
            info={**rendered.info, **derived_object_note(image, source, rendered.info)},
            source={
                "format": image.meta.format,
                "shape": list(image.meta.shape),
                "axes": image.meta.axes,
                "spacing": image.meta.spacing,
                "modality": image.meta.modality,
                "n_frames": image.meta.n_frames,
                "fps": image.meta.fps,
            },
            label_values=(
                sorted(int(v) for v in np.unique(rendered.pixels)) if args.kind == "mask" else None
            ),
        )

    def _view_image(self, args: ViewImageArgs) -> ToolResult:
        if args.where == "output":
            target = self.sandbox.output_path(args.path)
        else:
            target = self.sandbox.read_path(args.path)
        self.sandbox.check_size(target, args.path)
        data: bytes | None = None
        key: tuple[Any, ...] | None = None
        identity = file_identity(target)
        if identity is not None and args.where == "output":
            # Each candidate writes its own file: the same image is the same bytes, not the same inode.
            data = target.read_bytes()
            key = ("view", hashlib.sha256(data).digest(), self.vision)
        elif identity is not None:
            key = ("view", identity, self.vision)
        seen = RENDERS.get(key) if key is not None else None
        if not isinstance(seen, ViewedImage):
            seen = self._view(args, target, data)
            if key is not None:
                RENDERS.put(key, seen)
        summary: dict[str, Any] = {"path": args.path, **seen.summary}
        if seen.url is None:
            summary["note"] = "this model cannot see images; this is a textual summary"
        return ToolResult(_json(summary), image_url=seen.url)

    def _view(self, args: ViewImageArgs, target: Path, data: bytes | None) -> ViewedImage:
        """Decode (or render) one image and describe it (what `_view_image` keeps in `RENDERS`)."""
        if args.where == "dataset":
            opened = _rendered_image(target)
        else:
            opened = _open_image(io.BytesIO(data) if data is not None else target)
        with opened as img:
            pixels = np.asarray(img)
            summary: dict[str, Any] = {
                "size": [img.size[0], img.size[1]],
                "mode": img.mode,
                "min": int(pixels.min()) if pixels.size else None,
                "max": int(pixels.max()) if pixels.size else None,
                "mean": round(float(pixels.mean()), 3) if pixels.size else None,
            }
            values = np.unique(pixels)
            if values.size <= 16:
                summary["distinct_values"] = [int(v) for v in values]
            url = _data_url(img) if self.vision else None
        return ViewedImage(summary, url)

    def _write_annotation(self, args: WriteAnnotationArgs) -> ToolResult:
        self._check_index(args.index)
        # The stem the official scorer needs for a source outside its extension list (docs/scoring.md).
        recorded = add_source_stem_to_annotation(args.annotation)
        warnings = _annotation_warnings(args.annotation, args.index)
        dest = self.sandbox.write_path(f"standardized_annotations/{args.index}.json")
        # Candidate files are not fsync'ed (see `core.atomic`): the run trusts a candidate only once its
        # done-marker is written, and a candidate interrupted before that is regenerated.
        atomic_write_json(dest, args.annotation, durable=False)
        done = {"written": f"standardized_annotations/{args.index}.json", "warnings": warnings}
        return ToolResult(_json({**done, "recorded": [recorded.note()]} if recorded else done))

    def _write_data_meta(self, args: WriteDataMetaArgs) -> ToolResult:
        dest = self.sandbox.write_path("data_meta.json")
        atomic_write_json(dest, args.data_meta, durable=False)
        written = len(self.written_indices())
        warnings = _schema_problems("DataMeta", args.data_meta)
        volume = args.data_meta.get("data_volume")
        if isinstance(volume, dict) and volume.get("total") != written:
            warnings.append(
                f"data_volume.total is {volume.get('total')!r} but {written} annotations are written"
            )
        return ToolResult(_json({"written": "data_meta.json", "warnings": warnings}))

    def _finish(self, args: FinishArgs) -> ToolResult:
        missing = sorted(self._indices - self.written_indices())
        return ToolResult(_json({"finished": True, "missing_annotations": missing}), finished=True)

    def written_indices(self) -> set[int]:
        """Return the manifest indices that have an annotation file in the output folder."""
        folder = self.sandbox.output_dir / "standardized_annotations"
        return {i for i in self._indices if (folder / f"{i}.json").is_file()}


def _open_image(path: Path | io.BytesIO) -> Any:
    from PIL import Image

    return Image.open(path)


def _rendered_image(path: Path) -> Any:
    """A dataset file as medio reads and renders it (the same readers as `render`, the rules baseline and the
    validator), as a Pillow image; a file medio cannot read fails with medio's one-line error."""
    from PIL import Image

    return Image.fromarray(medio.render(medio.read(path)).pixels)


def _data_url(img: Any) -> str:
    from PIL import Image

    view = img.convert("RGB") if img.mode not in ("L", "RGB") else img.copy()
    # Lanczos (area-weighted) downscaling: nearest-neighbour drops thin structures a model must see.
    view.thumbnail((_VIEW_MAX_SIDE, _VIEW_MAX_SIDE), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    view.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _annotation_warnings(annotation: dict[str, Any], index: int) -> list[str]:
    """Cheap structural hints for the model (the validator does the real checking later)."""
    warnings = []
    for block in ("record", "context", "media_geometry", "tasks"):
        if not isinstance(annotation.get(block), dict):
            warnings.append(f"block {block!r} is missing or not an object")
    record = annotation.get("record")
    if isinstance(record, dict) and record.get("image_path") != f"images/{index}.png":
        warnings.append(f"record.image_path should be 'images/{index}.png'")
    tasks = annotation.get("tasks")
    if isinstance(tasks, dict):
        active = [k for k in ("classification", "segmentation", "detection") if tasks.get(k)]
        if len(active) != 1:
            warnings.append(f"exactly one task branch must be non-empty, found {active or 'none'}")
    text = json.dumps(annotation)
    if "__desc" in text or "__options" in text:
        warnings.append("remove keys ending in __desc / __options")
    return warnings + _schema_problems("Annotation", annotation)


def _schema_problems(model_name: str, document: dict[str, Any], limit: int = 8) -> list[str]:
    """Validate against the validator's pydantic schema, when that package is installed."""
    try:
        from validator import schema
    except ImportError:
        return []
    model = getattr(schema, model_name, None)
    if model is None:
        return []
    try:
        model.model_validate(document)
    except ValidationError as exc:
        return [f"schema: {problem}" for problem in validation_problems(exc)[:limit]]
    return []

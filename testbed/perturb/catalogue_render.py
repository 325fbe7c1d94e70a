"""Mistakes of a conversion that read the right file but rendered or traced it wrongly (issue 25).

They mimic what real renderers and agents do: a volume cut along another plane (the agent slices axis 2 of an
array it believes is Z-first), a more-than-8-bit image cast to 8 bits by clipping at 255 instead of windowing,
a source trace that keeps the file name but drops the rest of ``extra`` (subject, label file, map type), and
a file next to the images (a thumbnail, a preview, a stray export) recorded as the source.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

from testbed.perturb.catalogue_image import IMAGE, _load, _save
from testbed.perturb.catalogue_json import NOTES, ORIGINAL, SOURCE, _point_source_at
from testbed.perturb.mistake import SampleState, mistake
from validator.values import get_path

log = logging.getLogger(__name__)

_KEPT_SOURCE_KEYS = ("source_file", "original_filename")


def _declared_render(state: SampleState) -> tuple[Any, np.ndarray, dict[str, Any]] | None:
    """The declared source read, its declared view as the plain conversion renders it, and the 3D branch.

    Only when that render reproduces the written image: then a wrong rendering of the same source is what
    the same conversion would have produced (sources needing a container key or an index are skipped).
    """
    import medio

    source = state.extra().get("source_file")
    current = _load(state)
    if not isinstance(source, str) or not source or current is None:
        return None
    spatial = get_path(state.annotation, "media_geometry.spatial.three_d")
    spatial = spatial if isinstance(spatial, dict) else {}
    try:
        image = medio.read(state.dataset_root / source)
        where = spatial.get("slice_index")
        axis = int(spatial.get("slice_axis", 0) or 0)
        if image.array.ndim >= 3 and isinstance(where, int):
            rendered = medio.render(image, slice_index=where, axis=axis).pixels
        else:
            rendered = medio.render(image).pixels
    except Exception as exc:  # any reader failure means: this sample offers nothing to render wrongly
        log.debug("%s/%s: declared source not re-rendered: %s", state.dataset_root.name, state.index, exc)
        return None
    if rendered.shape != current.shape or not np.array_equal(rendered, current):
        return None
    return image, current, spatial


@mistake("other_plane", "image", raw_evidence=True, fields=IMAGE, exclusive="image")
def other_plane(state: SampleState) -> bool:
    """A volume cut along another axis (a sagittal or coronal slice where the axial one was declared).

    The JSON keeps the declared slice: the agent believes it rendered it.
    """
    import medio

    if state.dimension().upper() != "3D":
        return False
    found = _declared_render(state)
    if found is None:
        return False
    image, current, spatial = found
    if image.array.ndim < 3:
        return False
    declared = int(spatial.get("slice_axis", 0) or 0)
    for axis in state.rng.sample([a for a in range(3) if a != declared], 2):
        size = int(image.array.shape[axis])
        if size < 4:
            continue
        try:
            pixels = medio.render(image, slice_index=size // 2, axis=axis).pixels
        except Exception:  # an axis the renderer refuses: try the other one
            continue
        if pixels.shape != current.shape or not np.array_equal(pixels, current):
            _save(state, pixels)
            return True
    return False


@mistake("clipped_to_8bit", "image", raw_evidence=True, fields=IMAGE, exclusive="image")
def clipped_to_8bit(state: SampleState) -> bool:
    """A 12/16-bit (or float) source cast to 8 bits by clipping at 0 and 255 instead of windowing."""
    import medio

    found = _declared_render(state)
    if found is None:
        return False
    image, current, spatial = found
    values = np.asarray(image.array)
    if values.dtype == np.uint8 or values.size == 0 or float(np.nanmax(values)) <= 255:
        return False  # an 8-bit source: clipping changes nothing
    where = spatial.get("slice_index")
    axis = int(spatial.get("slice_axis", 0) or 0)
    try:
        if values.ndim >= 3 and isinstance(where, int):
            pixels = medio.render(image, slice_index=where, axis=axis, window=(127.5, 255.0)).pixels
        else:
            pixels = medio.render(image, window=(127.5, 255.0)).pixels
    except Exception:  # the renderer refuses an explicit window for this image
        return False
    if pixels.shape != current.shape or np.array_equal(pixels, current):
        return False
    _save(state, pixels)
    return True


@mistake("omit_extra_fields", "content_omission", raw_evidence=True, fields=("context.sample.extra",))
def omit_extra_fields(state: SampleState) -> bool:
    """``extra`` keeps ``source_file`` and ``original_filename`` but loses its other keys (subject, label
    file, map type): the trace a reader needs to find the sample's annotation files is gone."""
    extra = state.extra()
    droppable = [k for k, v in extra.items() if k not in _KEPT_SOURCE_KEYS and v not in (None, "", [], {})]
    if not droppable:
        return False
    count = state.rng.randint(1, len(droppable))
    for key in state.rng.sample(droppable, count):
        del extra[key]
    return True


@mistake("decoy_source", "source_grounding", raw_evidence=True, fields=(SOURCE, ORIGINAL, NOTES))
def decoy_source(state: SampleState) -> bool:
    """The source fields name a file of the dataset that is no manifest sample's image nor its annotation
    (a preview, a thumbnail, a stray export beside the images), preferring one with the source's suffix."""
    data = state.dataset_root / "data"
    if not data.is_dir():
        return False
    taken = {str(v) for a in state.others.values() for v in _extra_values(a)}
    taken |= {str(v) for v in _extra_values(state.annotation)}
    files = []
    for top, dirs, names in os.walk(data):
        dirs.sort()
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(top, name), state.dataset_root).replace(os.sep, "/")
            if rel not in taken:
                files.append(rel)
        if len(files) > 2000:
            break  # enough choice; a huge data folder is not walked to the end
    if not files:
        return False
    source = str(state.extra().get("source_file") or "")
    suffix = os.path.splitext(source)[1].lower()
    same = [f for f in files if os.path.splitext(f)[1].lower() == suffix]
    _point_source_at(state, state.rng.choice(same or files))
    return True


def _extra_values(annotation: Any) -> list[Any]:
    extra = get_path(annotation, "context.sample.extra") if isinstance(annotation, dict) else None
    return [v for v in extra.values() if isinstance(v, str)] if isinstance(extra, dict) else []

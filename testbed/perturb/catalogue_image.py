"""Mistakes in the written image and mask files (and the JSON facts that go with them).

They mimic how an agent's conversion goes wrong: the neighbour's picture, a blank placeholder, the label map
saved as the image, another slice or frame, a resized or contrast-clipped rendering, a file never written.
"""

from __future__ import annotations

import logging
import shutil
from typing import Any

import numpy as np
from PIL import Image

from benchmark.fields import IMAGE_PATH
from testbed.perturb.mistake import SampleState, mistake
from validator.values import get_path

log = logging.getLogger(__name__)

IMAGE = ("images", IMAGE_PATH)
_BRANCH = {"3D": ("three_d", "slice_index"), "video": ("video", "frame_index")}


def _load(state: SampleState) -> np.ndarray | None:
    if not state.image.is_file():
        return None
    with Image.open(state.image) as img:
        return np.asarray(img)


def _save(state: SampleState, pixels: np.ndarray) -> None:
    state.image.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.ascontiguousarray(pixels)).save(state.image)


@mistake("neighbour_image", "image", raw_evidence=True, fields=IMAGE, exclusive="image")
def neighbour_image(state: SampleState) -> bool:
    """The image of another manifest sample written for this one."""
    pool = [
        i
        for i in sorted(state.others)
        if i != state.index and (state.correct / "images" / f"{i}.png").is_file()
    ]
    mine = _load(state)
    state.rng.shuffle(pool)
    for other in pool:
        path = state.correct / "images" / f"{other}.png"
        with Image.open(path) as img:
            theirs = np.asarray(img)
        if mine is None or theirs.shape != mine.shape or not np.array_equal(theirs, mine):
            shutil.copyfile(path, state.image)
            return True
    return False


@mistake("placeholder_image", "image", raw_evidence=True, fields=IMAGE, exclusive="image")
def placeholder_image(state: SampleState) -> bool:
    """A uniform grey placeholder of the right size instead of the converted image."""
    pixels = _load(state)
    if pixels is None:
        return False
    _save(state, np.full(pixels.shape, state.rng.choice([0, 128, 255]), dtype=np.uint8))
    return True


@mistake("mask_as_image", "image", raw_evidence=True, fields=IMAGE, exclusive="image")
def mask_as_image(state: SampleState) -> bool:
    """The segmentation label map rendered as the image (the agent converted the wrong file)."""
    if not state.mask.is_file():
        return False
    with Image.open(state.mask) as img:
        mask = np.asarray(img).astype(np.float64)
    if mask.max() <= 0:
        return False
    _save(state, np.round(mask * (255.0 / mask.max())).astype(np.uint8))
    return True


@mistake(
    "other_slice",
    "image",
    raw_evidence=False,
    fields=(*IMAGE, "media_geometry.spatial"),
    exclusive="image",
)
def other_slice(state: SampleState) -> bool:
    """Another slice of the volume (or frame of the video), declared consistently in the spatial branch.

    Only a convention (which slice a dataset's ground truth uses) tells it from the right one.
    """
    dim = state.dimension()
    if dim not in _BRANCH:
        return False
    branch, key = _BRANCH[dim]
    spatial = get_path(state.annotation, f"media_geometry.spatial.{branch}")
    source = state.extra().get("source_file")
    current = _load(state)
    if not isinstance(spatial, dict) or not isinstance(spatial.get(key), int):
        return False
    if not source or current is None:
        return False
    try:
        rendered = _render_other(state, str(source), dim, spatial, key, current)
    except Exception as exc:  # any reader failure means: this sample offers no other slice to take
        log.debug("other_slice: %s/%s not re-rendered: %s", state.dataset_root.name, state.index, exc)
        return False
    if rendered is None:
        return False
    pixels, where = rendered
    _save(state, pixels)
    spatial[key] = where
    return True


def _render_other(
    state: SampleState, source: str, dim: str, spatial: dict[str, Any], key: str, current: np.ndarray
) -> tuple[np.ndarray, int] | None:
    import medio

    image = medio.read(state.dataset_root / source)
    axis = int(spatial.get("slice_axis", 0) or 0)

    def show(where: int) -> np.ndarray:
        if dim == "3D":
            return medio.render(image, slice_index=where, axis=axis).pixels
        return medio.render(image, frame=where).pixels

    # Only re-render when the plain read reproduces the written image: then the other slice is what the same
    # conversion would have produced (containers needing a key or an index are skipped, not guessed).
    if not np.array_equal(show(spatial[key]), current):
        return None
    count = int(image.array.shape[axis]) if dim == "3D" else int(spatial.get("n_frames") or 0)
    choices = [i for i in range(count) if abs(i - spatial[key]) >= 2]
    for where in state.rng.sample(choices, len(choices)):
        pixels = show(where)
        if pixels.shape == current.shape and not np.array_equal(pixels, current):
            return pixels, where
    return None


@mistake(
    "resized_image", "image", raw_evidence=True, fields=(*IMAGE, "media_geometry.spatial"), exclusive="image"
)
def resized_image(state: SampleState) -> bool:
    """The image resized to a model's input size (224 × 224), the spatial size updated to match."""
    if not state.image.is_file():
        return False
    with Image.open(state.image) as img:
        if img.size == (224, 224):
            return False
        small = img.resize((224, 224), Image.Resampling.BILINEAR)
        small.load()
    small.save(state.image)
    for branch in ("common", "three_d", "video"):
        block = get_path(state.annotation, f"media_geometry.spatial.{branch}")
        if isinstance(block, dict) and "pixel_size_px" in block:
            block["pixel_size_px"] = [224, 224]
    return True


@mistake("clipped_window", "image", raw_evidence=True, fields=IMAGE, exclusive="image")
def clipped_window(state: SampleState) -> bool:
    """A contrast-clipped rendering: a narrow window saturates most of the image."""
    pixels = _load(state)
    if pixels is None or pixels.std() < 1:
        return False
    grey = pixels.astype(np.float64)
    low, high = np.percentile(grey, [40, 60])
    if high <= low:
        return False
    clipped = np.clip((grey - low) * (255.0 / (high - low)), 0, 255).round().astype(np.uint8)
    if np.array_equal(clipped, pixels):
        return False
    _save(state, clipped)
    return True


@mistake("missing_image", "image", raw_evidence=True, fields=IMAGE, exclusive="image")
def missing_image(state: SampleState) -> bool:
    """The image file is never written, though the JSON points at it."""
    if not state.image.is_file():
        return False
    state.image.unlink()
    return True


@mistake("missing_mask", "content_omission", raw_evidence=True, fields=("masks", "tasks.segmentation"))
def missing_mask(state: SampleState) -> bool:
    """The segmentation label map the JSON points at is never written."""
    if not state.mask.is_file():
        return False
    state.mask.unlink()
    return True

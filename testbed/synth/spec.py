"""What a bundled dataset is: its catalogue entry, the samples its builder returns, and the builder registry.

A *builder* is a function that writes the raw files of one dataset under ``<dataset>/data/`` and returns one
:class:`SynthSample` per manifest line. Everything downstream (manifest, ground truth, geometry, oracle) is
derived from those samples, so a builder never writes anything outside ``data/``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import numpy as np

from testbed.synth.phantoms import largest_slice

Task = Literal["classification", "segmentation", "detection"]
Dimension = Literal["2D", "3D", "video"]


@dataclass(frozen=True)
class DatasetSpec:
    """The catalogue entry of one bundled dataset.

    Args:
        name: Folder name and dataset name (lower case, as the ground truth's ``dataset_name``).
        fmt: Raw format family shown in the catalogue (e.g. ``"DICOM series"``).
        task: ``classification`` | ``segmentation`` | ``detection``.
        dimension: ``2D`` | ``3D`` | ``video`` (the dimension of the raw sample the agent must reduce to
            one image).
        modality: Dataset-level ``modality_primary``.
        layout: How the files are arranged (catalogue text).
        traps: The difficulties this dataset exercises (catalogue text).
        classes: The ground truth ``classes`` list; segmentation lists start with ``"background"``.
        anatomy: ``anatomical_structure`` entry, ``"Organ (Region)"``.
        leaf_task: ``media.leaf_task`` of a correct answer.
        tab_manifest: Write ``random.txt`` with a TAB separator (like the real rsna dataset).
    """

    name: str
    fmt: str
    task: Task
    dimension: Dimension
    modality: str
    layout: str
    traps: tuple[str, ...]
    classes: tuple[str, ...]
    anatomy: str
    leaf_task: str
    tab_manifest: bool = False


@dataclass
class SynthSample:
    """One manifest sample as the builder created it; all paths are relative to the dataset root.

    Args:
        manifest_path: The path the manifest lists (``data/...``).
        subject_id: Patient/case identifier (never a placeholder, so IV can reach 1).
        image_size: ``[width, height]`` of the rendered output image.
        read: Keyword arguments for ``medio.read`` besides the path (``key``, ``index``, ``volume``, ...).
        read_path: What ``medio.read`` should open when it differs from the manifest path (a series folder).
        label: Class index for classification samples.
        modality: Per-sample modality when it differs from the dataset's.
        extra: Additional ``expected_extra`` entries (``label_file``, ``mask_file``, ``bbox_file``, ...).
        oracle_extra: Keys the oracle adds beyond ``expected_extra`` to identify the sample (source gate).
        source_stem: Ground truth ``source_stem`` override (when the file name alone is not unique).
        volume_shape: ``[z, h, w]`` for 3D samples.
        spacing: Pixel/voxel spacing in mm, in ``[x, y]`` or ``[x, y, z]`` order.
        slice_index: The chosen slice for 3D samples (axis 0 of the canonical ``(Z, H, W)`` array).
        frame_index: The chosen frame for video samples.
        n_frames: Frame count of video samples.
        fps: Frame rate of video samples.
        mask: Label map of the chosen slice/frame in output pixels (segmentation).
        boxes: COCO ``[x, y, w, h]`` boxes in output pixels (detection).
        box_labels: Class index (into ``DatasetSpec.classes``) of each box.
    """

    manifest_path: str
    subject_id: str
    image_size: tuple[int, int]
    read: dict[str, Any] = field(default_factory=dict)
    read_path: str | None = None
    label: int | None = None
    modality: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    oracle_extra: dict[str, Any] = field(default_factory=dict)
    source_stem: str | None = None
    volume_shape: tuple[int, int, int] | None = None
    spacing: tuple[float, ...] = (1.0, 1.0)
    slice_index: int | None = None
    frame_index: int | None = None
    n_frames: int | None = None
    fps: float | None = None
    mask: np.ndarray | None = None
    boxes: list[list[int]] = field(default_factory=list)
    box_labels: list[int] = field(default_factory=list)

    @classmethod
    def segmentation(cls, rel: str, sid: str, labels: np.ndarray, mask_rel: str, **kw: Any) -> SynthSample:
        """A segmentation sample whose label map (the file ``mask_rel``) is ``labels``: a 2D map as it is, a
        3D volume by its largest-foreground slice."""
        if labels.ndim == 3:
            k = largest_slice(labels)
            kw.update(volume_shape=labels.shape, slice_index=k)
            labels = labels[k]
        h, w = labels.shape
        return cls(rel, sid, (w, h), mask=labels, extra={"label_file": mask_rel, "mask_file": mask_rel}, **kw)

    @classmethod
    def detection(
        cls,
        rel: str,
        sid: str,
        size: tuple[int, int],
        boxes: list[list[int]],
        name: str,
        bbox_file: str,
        **kw: Any,
    ) -> SynthSample:
        """A detection sample whose boxes, all of the one class ``name``, are listed in ``bbox_file``."""
        extra = {"label_text": name, "class_name": name, "bbox_file": bbox_file}
        return cls(rel, sid, size, boxes=boxes, box_labels=[0] * len(boxes), extra=extra, **kw)

    @classmethod
    def stack(cls, rel: str, sid: str, shape: tuple[int, int, int], **kw: Any) -> SynthSample:
        """A sample of a ``(z, h, w)`` volume, shown at its middle slice."""
        z, h, w = shape
        return cls(rel, sid, (w, h), volume_shape=shape, slice_index=z // 2, **kw)


@dataclass
class BuildContext:
    """What a builder gets: where to write, how many samples, and a private random generator.

    Args:
        root: The dataset folder (``<OUT>/<name>``); raw files go under ``root / "data"``.
        n: Number of manifest samples to produce.
        rng: Generator seeded from the suite seed and the dataset name, so datasets are independent.
    """

    root: Path
    n: int
    rng: np.random.Generator

    @property
    def data(self) -> Path:
        """The ``data/`` folder of the dataset."""
        return self.root / "data"

    def path(self, rel: str) -> Path:
        """Absolute path of ``rel`` (``data/...``) with its parent folders created."""
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p


Builder = Callable[[BuildContext], list[SynthSample]]


B = TypeVar("B", bound=Callable[..., Any])


@dataclass(frozen=True)
class RegisteredDataset(Generic[B]):
    """A catalogue entry together with the function that writes it (a synthetic or a realfiles builder)."""

    spec: DatasetSpec
    build: B


REGISTRY: dict[str, RegisteredDataset[Builder]] = {}


def register(
    registry: dict[str, RegisteredDataset[B]], spec: DatasetSpec, kind: str = "synthetic dataset"
) -> Callable[[B], B]:
    """A decorator that records ``spec`` with the decorated builder in ``registry``.

    Args:
        registry: The suite's registry (name -> entry, in catalogue order).
        spec: The catalogue entry.
        kind: What the suite calls a dataset, for the error message.

    Returns:
        A decorator that records the builder and returns it unchanged.

    Raises:
        ValueError: When a dataset of that name is already registered.
    """

    def record(fn: B) -> B:
        if spec.name in registry:
            raise ValueError(f"{kind} {spec.name!r} is registered twice")
        registry[spec.name] = RegisteredDataset(spec, fn)
        return fn

    return record


def dataset(spec: DatasetSpec) -> Callable[[Builder], Builder]:
    """Register ``spec`` with the decorated builder in the bundled suite (:func:`register`)."""
    return register(REGISTRY, spec)


def dataset_rng(seed: int, name: str) -> np.random.Generator:
    """A generator that depends only on the suite seed and the dataset name (crc32, stable across runs)."""
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


def select_names(names: list[str], only: list[str] | None, kind: str) -> list[str]:
    """``names`` (catalogue order) restricted to ``only``; any suite's ``--only`` goes through here.

    Raises:
        KeyError: When ``only`` names an unknown dataset (the message lists the valid names).
    """
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise KeyError(f"unknown {kind}(s) {unknown}; valid names: {', '.join(names)}")
        names = [n for n in names if n in only]
    return names

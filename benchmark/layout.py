"""Read and write one run's outputs in the benchmark layout (SPEC §2.1, docs/contracts.md).

::

    <run>/agent1_data_organization/
        images/<i>.png                     the standardized image (the reference scorer also reads .jpg/.jpeg)
        masks/<i>.png                      our segmentation label maps (pixel value = class id)
        standardized_annotations/<i>.json  the per-image JSON
        data_meta.json                     the dataset JSON

``<run>`` is ``<dataset>/VLM/<run_name>`` for the reference scorer, but any folder works (candidates of a
strategy, a scratch folder). Every write is atomic (`core.atomic`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmark.errors import LayoutError, load_json
from benchmark.manifest import VLM_DIR
from core.atomic import atomic_write_json

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "AGENT_DIR",
    "ANNOTATIONS_DIR",
    "DATA_META_NAME",
    "IMAGES_DIR",
    "IMAGE_EXTENSIONS",
    "MASKS_DIR",
    "OutputLayout",
]

#: The folder the reference scorer looks for inside each run folder.
AGENT_DIR = "agent1_data_organization"
IMAGES_DIR = "images"
MASKS_DIR = "masks"
ANNOTATIONS_DIR = "standardized_annotations"
DATA_META_NAME = "data_meta.json"
#: Image suffixes in the order the reference scorer tries them, case-sensitively (SPEC §2.1).
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg")


class OutputLayout:
    """Paths and atomic I/O for one ``agent1_data_organization`` folder.

    Args:
        root: The ``agent1_data_organization`` folder itself (it need not exist yet).

    Example:
        >>> out = OutputLayout.for_run("/bench/kits23", "s3")
        >>> out.annotation_path(4).as_posix()
        '/bench/kits23/VLM/s3/agent1_data_organization/standardized_annotations/4.json'
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"OutputLayout({str(self.root)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputLayout) and self.root == other.root

    def __hash__(self) -> int:
        return hash(self.root)

    # ------------------------------------------------------------------ locating
    @classmethod
    def resolve(cls, path: str | Path) -> OutputLayout:
        """Locate existing outputs given the ``agent1_data_organization`` folder or the run folder above it.

        Args:
            path: An ``agent1_data_organization`` folder, or a folder that contains one.

        Returns:
            The layout.

        Raises:
            LayoutError: ``path`` does not exist, or is neither such a folder nor a folder containing one.
        """
        where = Path(path)
        if not where.is_dir():
            state = "is not a folder" if where.exists() else "does not exist"
            raise LayoutError(where, f"output folder {state}")
        if where.name == AGENT_DIR:
            return cls(where)
        if (where / AGENT_DIR).is_dir():
            return cls(where / AGENT_DIR)
        raise LayoutError(
            where, f"not an output folder: expected a folder named {AGENT_DIR} or a run folder containing one"
        )

    @classmethod
    def for_run(cls, dataset_root: str | Path, run_name: str) -> OutputLayout:
        """The layout the reference scorer reads: ``<dataset_root>/VLM/<run_name>/agent1_data_organization``.

        Args:
            dataset_root: The dataset folder.
            run_name: A single plain folder name (model or strategy name).

        Returns:
            The layout (nothing is created).

        Raises:
            LayoutError: ``run_name`` is not a single plain folder name.
        """
        if not run_name or run_name in (".", "..") or "/" in run_name or "\\" in run_name:
            raise LayoutError(
                Path(dataset_root) / VLM_DIR, f"run name {run_name!r} must be a single plain folder name"
            )
        return cls(Path(dataset_root) / VLM_DIR / run_name / AGENT_DIR)

    @property
    def images_dir(self) -> Path:
        """``<root>/images``."""
        return self.root / IMAGES_DIR

    @property
    def masks_dir(self) -> Path:
        """``<root>/masks``."""
        return self.root / MASKS_DIR

    @property
    def annotations_dir(self) -> Path:
        """``<root>/standardized_annotations``."""
        return self.root / ANNOTATIONS_DIR

    @property
    def data_meta_path(self) -> Path:
        """``<root>/data_meta.json``."""
        return self.root / DATA_META_NAME

    def image_path(self, index: int, ext: str = ".png") -> Path:
        """``images/<index><ext>``.

        Args:
            index: Sample index.
            ext: Suffix including the dot.

        Returns:
            The path (existence not checked).
        """
        return self.images_dir / f"{_check_index(index)}{ext}"

    def find_image(self, index: int) -> Path | None:
        """The image the reference scorer would pick: ``<index>.png``, else ``.jpg``, else ``.jpeg``.

        The match is case-sensitive even on case-insensitive file systems (``3.PNG`` is not found), as the
        reference scorer runs on Linux.

        Args:
            index: Sample index.

        Returns:
            The first existing file, or None.
        """
        names = _listing(self.images_dir)
        for ext in IMAGE_EXTENSIONS:
            candidate = self.image_path(index, ext)
            if candidate.name in names and candidate.is_file():
                return candidate
        return None

    def mask_path(self, index: int) -> Path:
        """``masks/<index>.png``."""
        return self.masks_dir / f"{_check_index(index)}.png"

    def annotation_path(self, index: int) -> Path:
        """``standardized_annotations/<index>.json``."""
        return self.annotations_dir / f"{_check_index(index)}.json"

    # ------------------------------------------------------------------ writing
    def write_annotation(self, index: int, obj: Any) -> Path:
        """Atomically write the per-image JSON of one sample.

        Args:
            index: Sample index.
            obj: The annotation (normally a dict).

        Returns:
            The written path.
        """
        return atomic_write_json(self.annotation_path(index), obj)

    def write_data_meta(self, obj: Any) -> Path:
        """Atomically write ``data_meta.json``.

        Args:
            obj: The dataset JSON.

        Returns:
            The written path.
        """
        return atomic_write_json(self.data_meta_path, obj)

    def write_image(self, index: int, pixels: np.ndarray) -> Path:
        """Atomically write ``images/<index>.png`` from 8-bit pixels.

        Args:
            index: Sample index.
            pixels: ``uint8`` array, ``(H, W)`` grey, ``(H, W, 3)`` RGB or ``(H, W, 4)`` RGBA.

        Returns:
            The written path.

        Raises:
            LayoutError: The array is not ``uint8`` or has an unsupported shape.
        """
        path = self.image_path(index)
        _check_pixels(path, pixels, allow_colour=True)
        _write_png(pixels, path)
        return path

    def write_mask(self, index: int, pixels: np.ndarray) -> Path:
        """Atomically write the label map ``masks/<index>.png`` (pixel value = class id).

        Args:
            index: Sample index.
            pixels: ``uint8`` array ``(H, W)``, the output image's size.

        Returns:
            The written path.

        Raises:
            LayoutError: The array is not a 2-D ``uint8`` array.
        """
        path = self.mask_path(index)
        _check_pixels(path, pixels, allow_colour=False)
        _write_png(pixels, path)
        return path

    # ------------------------------------------------------------------ reading
    def read_annotation(self, index: int) -> Any:
        """Parse one per-image JSON.

        Args:
            index: Sample index.

        Returns:
            The parsed value, of any JSON type (the reference scorer crashes on a list top level; callers
            decide how to score it).

        Raises:
            LayoutError: The file is missing, unreadable, or not valid JSON (with line and column).
        """
        return load_json(self.annotation_path(index), LayoutError, what="annotation")

    def read_data_meta(self) -> Any:
        """Parse ``data_meta.json``.

        Returns:
            The parsed value, of any JSON type.

        Raises:
            LayoutError: The file is missing, unreadable, or not valid JSON (with line and column).
        """
        return load_json(self.data_meta_path, LayoutError, what="data_meta.json")

    def annotation_stems(self) -> list[str]:
        """Every ``standardized_annotations/*.json`` stem (integer or not).

        The reference scorer considers every annotation, whatever its name, when it matches annotations to
        ground-truth indices (SPEC §3.2).

        Returns:
            Integer stems first in numeric order, then the others in lexical order; empty when the folder is
            missing.
        """
        stems = [name[: -len(".json")] for name in _listing(self.annotations_dir) if name.endswith(".json")]
        stems = [s for s in stems if s and (self.annotations_dir / f"{s}.json").is_file()]
        return sorted(stems, key=lambda s: (0, int(s), "") if _is_index(s) else (1, 0, s))

    def annotation_indices(self) -> list[int]:
        """The sample indices that have an annotation: stems written as a plain integer (``7``, not ``007``).

        Returns:
            Sorted indices.
        """
        return [int(s) for s in self.annotation_stems() if _is_index(s)]


def _is_index(stem: str) -> bool:
    """A canonical index stem: ASCII digits, no leading zero, so it is exactly ``<int(stem)>.json``."""
    return stem.isascii() and stem.isdigit() and str(int(stem)) == stem


def _check_index(index: int) -> int:
    # bool is an int subclass; True.json is not a sample.
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"a sample index must be a non-negative int, got {index!r}")
    return index


def _listing(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()


def _check_pixels(path: Path, pixels: Any, *, allow_colour: bool) -> None:
    dtype = getattr(pixels, "dtype", None)
    shape = getattr(pixels, "shape", None)
    if dtype is None or shape is None or str(dtype) != "uint8":
        raise LayoutError(path, f"pixels must be a uint8 array, got {dtype or type(pixels).__name__}")
    ok = len(shape) == 2 or (allow_colour and len(shape) == 3 and shape[2] in (3, 4))
    if not ok or 0 in shape:
        wanted = "(H, W), (H, W, 3) or (H, W, 4)" if allow_colour else "(H, W)"
        raise LayoutError(path, f"pixels have shape {tuple(shape)}; expected a non-empty {wanted} array")


def _write_png(pixels: np.ndarray, path: Path) -> None:
    """Write through `medio.write_png`, the one atomic PNG writer; lazy, so `import benchmark` stays light."""
    from medio import write_png

    write_png(pixels, path)

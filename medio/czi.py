"""Zeiss CZI (ZISRAW) through aicspylibczi, the Python binding of Zeiss's own libCZI.

A CZI is a directory of sub-blocks, each tagged with its scene (S), channel (C), plane (Z), time (T) and
mosaic tile (M) and its place on the slide (X, Y). libCZI reads the directory and composes only the
sub-blocks of the requested scene/channel/plane, at a reduced scale when asked, so a 200–800 MB whole-slide
file is never loaded whole: :func:`summarize_czi` reads the directory and the XML metadata only, and
:func:`read_czi` composes one scene at a scale that keeps it under :data:`MAX_PIXELS`.

The 2-D view when nothing is chosen: the first scene; the sharpest Z plane (largest mean squared gradient
on a small preview, the usual focus measure); brightfield BGR24/BGR48 turned to RGB; several fluorescence
channels as a false-colour RGB composite (channel 1 red, 2 green, 3 blue, each stretched to its 0.5–99.5
percentiles), one channel as grey.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from medio.errors import CorruptFile, KeyNotFound, UnsupportedFormat
from medio.types import MedImage, Meta

MAGIC = b"ZISRAWFILE"
# The largest composed scene, in pixels; larger scenes are read at a reduced scale (libCZI's own subsampling).
MAX_PIXELS = 2048 * 2048
_PREVIEW_PIXELS = 256 * 256
_COLOUR_TYPES = ("bgr24", "bgr48", "bgra32")


def _open(path: Path) -> Any:
    """Open with libCZI after checking the ZISRAW file-header segment id."""
    with path.open("rb") as fh:
        head = fh.read(16)
    if not head.startswith(MAGIC):
        raise UnsupportedFormat(
            path, f"not a CZI file: no ZISRAWFILE segment at byte 0 (starts with {head[:10]!r})"
        )
    import aicspylibczi

    try:
        return aicspylibczi.CziFile(path)
    except Exception as exc:  # libCZI raises its own exception types, all about the file's bytes
        raise CorruptFile(path, f"libCZI cannot open the CZI ({type(exc).__name__}: {exc})") from exc


def _ranges(path: Path, czi: Any) -> dict[str, tuple[int, int]]:
    """``{dim: (start, size)}`` of every non-spatial dimension (S, C, Z, T, M ...) in the directory."""
    try:
        shapes = czi.get_dims_shape()
    except Exception as exc:
        raise CorruptFile(
            path, f"libCZI cannot read the CZI directory ({type(exc).__name__}: {exc})"
        ) from exc
    if not shapes:
        raise CorruptFile(path, "the CZI directory lists no sub-blocks")
    # Scenes of different sizes give one entry each; the dimensions and their ranges are the first's.
    return {k: (int(lo), int(hi - lo)) for k, (lo, hi) in shapes[0].items() if k not in ("X", "Y", "A")}


def _metadata(czi: Any) -> dict[str, Any]:
    """Channel names, scaling (µm per pixel) and pixel type from the XML metadata segment."""
    out: dict[str, Any] = {"channels": [], "scaling_um": {}}
    try:
        root = czi.meta
    except Exception:  # a CZI without a readable metadata segment still has its pixels
        return out
    if root is None:
        return out
    for channel in root.iter("Channel"):
        name = channel.get("Name") or channel.get("Id")
        if name and name not in out["channels"]:
            out["channels"].append(name)
    for distance in root.iter("Distance"):
        value = distance.findtext("Value")
        axis = distance.get("Id")
        if axis and value:
            try:
                out["scaling_um"][axis] = float(value) * 1e6  # stored in metres per pixel
            except ValueError:
                continue
    return out


def _scene_box(path: Path, czi: Any, scene: int | None) -> tuple[int, int, int, int]:
    try:
        if scene is None:
            box = czi.get_mosaic_bounding_box() if czi.is_mosaic() else czi.get_scene_bounding_box()
        elif czi.is_mosaic():
            box = czi.get_mosaic_scene_bounding_box(index=scene)
        else:
            box = czi.get_scene_bounding_box(index=scene)
    except Exception as exc:
        raise CorruptFile(path, f"libCZI cannot locate scene {scene} ({type(exc).__name__}: {exc})") from exc
    return int(box.x), int(box.y), int(box.w), int(box.h)


def summarize_czi(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: ``pixel_type``, ``dims`` (size of S/C/Z/T/M), ``scenes`` (boxes ``[x, y, w, h]``,
    at most 16), ``channels`` (names), ``scaling_um``, ``mosaic``, from the directory and metadata (no pixels
    read).

    ``UnsupportedFormat`` when it is not a CZI, ``CorruptFile`` when libCZI cannot read its directory.
    """
    path = Path(path)
    czi = _open(path)
    dims = {k: size for k, (_, size) in _ranges(path, czi).items()}
    n_scenes = dims.get("S", 1)
    scenes = [_scene_box(path, czi, s if "S" in dims else None) for s in range(min(n_scenes, 16))]
    return {
        "pixel_type": str(czi.pixel_type),
        "dims": dims,
        "mosaic": bool(czi.is_mosaic()),
        "scenes": [list(b) for b in scenes],
        **_metadata(czi),
        "how_to_read": "read(path, series=<scene>, key=<channel name or number>, index=<z>, frame=<t>)",
    }


class _Planes:
    """Reads 2-D planes of one scene: composed by libCZI for a mosaic, one sub-block otherwise."""

    def __init__(self, path: Path, czi: Any, ranges: dict[str, tuple[int, int]], scene: int) -> None:
        self.path, self.czi, self.ranges, self.scene = path, czi, ranges, scene
        self.mosaic = bool(czi.is_mosaic())
        self.box = _scene_box(path, czi, scene if "S" in ranges else None)
        self.scale = min(1.0, math.sqrt(MAX_PIXELS / max(self.box[2] * self.box[3], 1)))

    def coords(self, chosen: dict[str, int]) -> dict[str, int]:
        # Every plane dimension must be given to libCZI, as start + index; the scene and the mosaic tile are
        # not plane coordinates (a mosaic scene is its region of the slide).
        return {k: lo + chosen.get(k, 0) for k, (lo, _) in self.ranges.items() if k not in ("S", "M")}

    def read(self, chosen: dict[str, int], scale: float | None = None) -> np.ndarray:
        """One plane at ``scale`` (default the scene's), ``(Y, X)`` or ``(Y, X, samples)``."""
        scale = self.scale if scale is None else scale
        coords = self.coords(chosen)
        try:
            if self.mosaic:
                data = self.czi.read_mosaic(region=self.box, scale_factor=scale, **coords)
            else:
                # Scenes of a non-mosaic file may overlap on the slide: read the scene's own sub-block.
                if "S" in self.ranges:
                    coords["S"] = self.ranges["S"][0] + self.scene
                data, _ = self.czi.read_image(**coords)
        except Exception as exc:
            raise CorruptFile(
                self.path, f"libCZI cannot read plane {coords} ({type(exc).__name__}: {exc})"
            ) from exc
        arr = np.asarray(data)
        while arr.ndim > 2 and arr.shape[0] == 1 and not (arr.ndim == 3 and arr.shape[-1] in (3, 4)):
            arr = arr[0]
        if not self.mosaic and scale < 1.0:
            step = math.ceil(1.0 / scale)
            arr = arr[::step, ::step]
        return arr

    def sharpest(self, chosen: dict[str, int], n_z: int) -> int:
        """The Z plane of largest mean squared gradient on a small preview (a standard focus measure)."""
        preview = min(1.0, math.sqrt(_PREVIEW_PIXELS / max(self.box[2] * self.box[3], 1)))
        scores = []
        for z in range(n_z):
            plane = self.read({**chosen, "Z": z}, preview).astype(np.float64)
            grey = plane.mean(axis=-1) if plane.ndim == 3 else plane
            if min(grey.shape) < 2:
                scores.append(0.0)
                continue
            gy, gx = np.gradient(grey)
            scores.append(float(np.mean(gx**2 + gy**2)))
        return int(np.argmax(scores))


def _channel(path: Path, key: str | None, names: list[str], n_channels: int) -> int | None:
    if key is None:
        return None
    if key in names:
        return names.index(key)
    if key.isdigit() and int(key) < n_channels:
        return int(key)
    raise KeyNotFound(path, f"channel {key!r} not found; channels: {names or list(range(n_channels))}")


def _check_range(path: Path, what: str, value: int | None, size: int) -> None:
    if value is not None and not 0 <= value < size:
        raise KeyNotFound(path, f"{what} {value} out of range: the CZI has {size}")


def read_czi(
    path: str | Path,
    *,
    series: str | int | None = None,
    key: str | None = None,
    index: int | None = None,
    frame: int | None = None,
) -> MedImage:
    """Compose one 2-D view of a CZI: one scene, one plane, one or all channels.

    Args:
        path: The ``.czi`` file.
        series: Scene index (default 0).
        key: Channel name or number (default: every channel, as an RGB composite when there are several).
        index: Z plane (default: the sharpest).
        frame: Time point (default 0).

    Returns:
        ``(Y, X)`` grey or ``(Y, X, 3)`` RGB; ``meta.header`` says the scene, plane, channel(s), pixel type,
        scale factor and the rule that chose them; ``meta.spacing`` is the pixel size in mm at that scale.

    Raises:
        UnsupportedFormat: Not a CZI.
        CorruptFile: Damaged or truncated file.
        KeyNotFound: Scene, channel, plane or time point out of range.
    """
    path = Path(path)
    czi = _open(path)
    ranges = _ranges(path, czi)
    dims = {k: size for k, (_, size) in ranges.items()}
    facts = _metadata(czi)
    if series is not None and not str(series).isdigit():
        raise KeyNotFound(path, f"scene {series!r} is not a scene number (0..{dims.get('S', 1) - 1})")
    scene = int(series) if series is not None else 0
    _check_range(path, "scene", scene, dims.get("S", 1))
    _check_range(path, "z plane", index, dims.get("Z", 1))
    _check_range(path, "time point", frame, dims.get("T", 1))
    n_channels = dims.get("C", 1)
    channel = _channel(path, key, list(facts["channels"]), n_channels)
    planes = _Planes(path, czi, ranges, scene)
    chosen = {"T": frame or 0, "C": channel or 0}
    z_rule = "given" if index is not None else "only plane"
    if index is None and dims.get("Z", 1) > 1:
        index, z_rule = planes.sharpest(chosen, dims["Z"]), "sharpest"
    chosen["Z"] = index or 0
    colour = str(czi.pixel_type).lower() in _COLOUR_TYPES
    channels = [channel] if channel is not None else list(range(n_channels))
    if colour or len(channels) == 1:
        arr = planes.read({**chosen, "C": channels[0]})
        if colour:
            arr = np.ascontiguousarray(arr[..., 2::-1])  # CZI stores blue, green, red
        view = "rgb" if colour else "grey"
    else:
        from medio.render import stretch_uint8

        bands = [stretch_uint8(planes.read({**chosen, "C": c})) for c in channels[:3]]
        while len(bands) < 3:
            bands.append(np.zeros_like(bands[0]))
        arr, view = np.stack(bands, axis=-1), "composite (channels 1-3 as red, green, blue)"
    um = facts["scaling_um"]
    shown_scale = arr.shape[0] / max(planes.box[3], 1)
    spacing = (
        (um["Y"] / 1000.0 / shown_scale, um["X"] / 1000.0 / shown_scale) if "X" in um and "Y" in um else None
    )
    header = {
        "pixel_type": str(czi.pixel_type),
        "dims": dims,
        "scene": scene,
        "scene_box": list(planes.box),
        "z": chosen["Z"] if "Z" in dims else None,
        "z_rule": z_rule,
        "channels": facts["channels"],
        "channels_shown": channels[:3],
        "view": view,
        "scale_factor": planes.scale,
    }
    meta = Meta(
        format="czi",
        path=str(path),
        axes="YXC" if arr.ndim == 3 else "YX",
        spacing=spacing,
        photometric="RGB" if arr.ndim == 3 else "MONOCHROME2",
        header=header,
    )
    return MedImage(arr, meta)

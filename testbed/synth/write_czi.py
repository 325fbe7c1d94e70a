"""A minimal, valid Zeiss CZI (ZISRAW) writer for synthesized whole-slide and fluorescence files.

Layout, from Zeiss's public "CZI file format" documentation (ZISRAW 1.0): every part of the file is a
*segment* — a 32-byte header (16-byte ASCII id, allocated size, used size, both int64 little-endian)
followed by its data, segments starting on 32-byte boundaries. The file is

``ZISRAWFILE`` (file header) · ``ZISRAWSUBBLOCK`` × n (one per plane or tile, uncompressed pixels) ·
``ZISRAWDIRECTORY`` (a copy of every sub-block's DirectoryEntryDV) · ``ZISRAWMETADATA`` (the XML document) ·
``ZISRAWATTDIR`` (an empty attachment directory).

Sub-blocks carry their coordinates in a DirectoryEntryDV (dimension letters X, Y, C, Z, T, S, M with start,
size and stored size), which is what lets a reader fetch one scene/channel/plane without reading the rest.
Scenes are placed side by side on the slide (x offset), as a scanner writes them; a plane may be cut into
tiles (``tile``), each a sub-block with its mosaic index ``M``, as whole-slide scanners do.

Deterministic: the GUIDs are derived from the pixel content, no clock is read.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

# ZISRAW pixel type codes (DirectoryEntryDV.PixelType) and the NumPy sample type of each.
PIXEL_TYPES: dict[str, tuple[int, str, int]] = {
    "Gray8": (0, "<u1", 1),
    "Gray16": (1, "<u2", 1),
    "Gray32Float": (2, "<f4", 1),
    "Bgr24": (3, "<u1", 3),
    "Bgr48": (4, "<u2", 3),
}
_SEGMENT_HEADER = 32
_FILE_HEADER_ALLOCATED = 512
_SUBBLOCK_MIN_HEADER = 256  # the sub-block's fixed part plus entry is padded to at least 256 bytes
_DIM_ORDER = "STCZ"  # the non-spatial axes a caller may give, outermost first


@dataclass(frozen=True)
class _Block:
    """One sub-block: its coordinates and its pixels (``(H, W)`` or ``(H, W, 3)`` BGR)."""

    coords: dict[str, int]
    x: int
    y: int
    pixels: np.ndarray
    m: int | None


def _segment(seg_id: bytes, data: bytes) -> bytes:
    allocated = -(-len(data) // 32) * 32
    header = seg_id.ljust(16, b"\x00") + struct.pack("<qq", allocated, len(data))
    return header + data + b"\x00" * (allocated - len(data))


def _entry(pixel_code: int, position: int, block: _Block) -> bytes:
    """DirectoryEntryDV: schema "DV", pixel type, the sub-block segment's file position, dimension entries."""
    height, width = block.pixels.shape[:2]
    dims: list[tuple[bytes, int, int]] = [(b"X", block.x, width), (b"Y", block.y, height)]
    dims += [(k.encode(), v, 1) for k, v in block.coords.items()]
    if block.m is not None:
        dims.append((b"M", block.m, 1))
    out = b"DV" + struct.pack("<iqiiB5xi", pixel_code, position, 0, 0, 0, len(dims))
    for name, start, size in dims:
        # Dimension (4 chars), Start, Size, StartCoordinate (float), StoredSize (= Size: no pyramid level).
        out += name.ljust(4, b"\x00") + struct.pack("<iifi", start, size, float(start), size)
    return out


def _subblock(entry: bytes, pixels: bytes) -> bytes:
    head = struct.pack("<iiq", 0, 0, len(pixels)) + entry  # MetadataSize, AttachmentSize, DataSize, entry
    head += b"\x00" * max(_SUBBLOCK_MIN_HEADER - len(head), 0)
    return _segment(b"ZISRAWSUBBLOCK", head + pixels)


def _metadata_xml(
    sizes: dict[str, int],
    width: int,
    height: int,
    pixel_type: str,
    channel_names: Sequence[str],
    scaling_um: tuple[float, float] | tuple[float, float, float] | None,
    n_tiles: int,
) -> str:
    channels = "".join(
        f'<Channel Id="Channel:{i}" Name="{escape(name)}"><PixelType>{pixel_type}</PixelType></Channel>'
        for i, name in enumerate(channel_names)
    )
    scenes = "".join(f'<Scene Index="{i}" Name="Scene {i + 1}"/>' for i in range(sizes.get("S", 1)))
    size_tags = "".join(f"<Size{k}>{v}</Size{k}>" for k, v in sizes.items())
    if n_tiles > 1:
        size_tags += f"<SizeM>{n_tiles}</SizeM>"
    scaling = ""
    if scaling_um is not None:
        # CZI stores distances in metres per pixel.
        items = "".join(
            f'<Distance Id="{axis}"><Value>{value * 1e-6:.6e}</Value>'
            f"<DefaultUnitFormat>\u00b5m</DefaultUnitFormat></Distance>"
            for axis, value in zip("XYZ", scaling_um, strict=False)
        )
        scaling = f"<Scaling><Items>{items}</Items></Scaling>"
    return (
        "<ImageDocument><Metadata><Information><Image>"
        f"<PixelType>{pixel_type}</PixelType><SizeX>{width}</SizeX><SizeY>{height}</SizeY>{size_tags}"
        f"<Dimensions><Channels>{channels}</Channels><S><Scenes>{scenes}</Scenes></S></Dimensions>"
        f"</Image></Information>{scaling}</Metadata></ImageDocument>"
    )


def _blocks(planes: np.ndarray, axes: str, tile: int | None, scene_gap: int) -> list[_Block]:
    """Cut a ``(S, T, C, Z, H, W[, 3])`` stack into sub-blocks, scenes side by side along x."""
    height, width = planes.shape[4:6]
    out: list[_Block] = []
    step_y, step_x = (tile, tile) if tile else (height, width)
    for s, t, c, z in np.ndindex(*planes.shape[:4]):
        # Every real CZI carries a channel coordinate, and libCZI refuses a mosaic without one.
        coords = {k: v for k, v in zip(_DIM_ORDER, (s, t, c, z), strict=True) if k in axes or k == "C"}
        scene_x = s * (width + scene_gap)
        m = 0
        for y0 in range(0, height, step_y):
            for x0 in range(0, width, step_x):
                part = planes[s, t, c, z, y0 : y0 + step_y, x0 : x0 + step_x]
                out.append(_Block(coords, scene_x + x0, y0, part, m if tile else None))
                m += 1
    return out


def write_czi(
    path: str | Path,
    array: np.ndarray,
    *,
    axes: str = "YX",
    pixel_type: str = "Gray8",
    channel_names: Sequence[str] | None = None,
    scaling_um: tuple[float, float] | tuple[float, float, float] | None = None,
    tile: int | None = None,
    scene_gap: int = 64,
) -> Path:
    """Write an array as an uncompressed CZI file.

    Args:
        path: Target ``.czi`` file.
        array: Pixels; its axes are named by ``axes``. For ``Bgr24``/``Bgr48`` the array has one more
            trailing axis of length 3 in **RGB** order (written as BGR, as CZI stores it).
        axes: Letters from ``S`` (scene), ``T``, ``C``, ``Z`` in that order, then ``YX`` (e.g. ``"CYX"``,
            ``"SCZYX"``).
        pixel_type: ``Gray8``, ``Gray16``, ``Gray32Float``, ``Bgr24`` or ``Bgr48``.
        channel_names: One name per channel (default ``Ch1``, ``Ch2`` ...).
        scaling_um: Pixel size ``(x, y[, z])`` in micrometres, stored in the metadata's ``Scaling``.
        tile: Cut every plane into tiles of this size (mosaic index ``M``), as whole-slide scanners do.
        scene_gap: Pixels between scenes on the slide.

    Returns:
        The written path.

    Raises:
        ValueError: Unknown pixel type, bad axes, or an array that does not match them.

    Example:
        >>> rgb = np.zeros((2, 64, 64, 3), np.uint8)
        >>> write_czi("he.czi", rgb, axes="SYX", pixel_type="Bgr24")  # doctest: +SKIP
    """
    if pixel_type not in PIXEL_TYPES:
        raise ValueError(f"unknown CZI pixel type {pixel_type!r}; known: {sorted(PIXEL_TYPES)}")
    code, sample, samples = PIXEL_TYPES[pixel_type]
    outer = axes[:-2]
    if (
        not axes.endswith("YX")
        or any(a not in _DIM_ORDER for a in outer)
        or list(outer) != sorted(outer, key=_DIM_ORDER.index)
    ):
        raise ValueError(f"axes {axes!r} must be letters of {_DIM_ORDER!r} in that order followed by 'YX'")
    expected_ndim = len(axes) + (1 if samples == 3 else 0)
    if array.ndim != expected_ndim or (samples == 3 and array.shape[-1] != 3):
        raise ValueError(f"array of shape {array.shape} does not match axes {axes!r} and {pixel_type}")
    data = np.asarray(array).astype(sample, copy=False)
    if samples == 3:
        data = data[..., ::-1]  # RGB given, BGR stored
    # Insert the missing axes so every array is (S, T, C, Z, H, W[, 3]).
    full = data
    for position, letter in enumerate(_DIM_ORDER):
        if letter not in outer:
            full = np.expand_dims(full, position)
    sizes = {k: int(full.shape[i]) for i, k in enumerate(_DIM_ORDER) if k in outer or k == "C"}
    height, width = int(full.shape[4]), int(full.shape[5])
    names = list(channel_names or [f"Ch{i + 1}" for i in range(sizes.get("C", 1))])
    if len(names) != sizes.get("C", 1):
        raise ValueError(f"{len(names)} channel names for {sizes.get('C', 1)} channels")

    blocks = _blocks(full, axes, tile, scene_gap)
    body = bytearray()
    entries: list[bytes] = []
    position = _SEGMENT_HEADER + _FILE_HEADER_ALLOCATED
    for block in blocks:
        entry = _entry(code, position, block)
        segment = _subblock(entry, np.ascontiguousarray(block.pixels).tobytes())
        entries.append(entry)
        body += segment
        position += len(segment)
    directory = _segment(b"ZISRAWDIRECTORY", struct.pack("<i124x", len(entries)) + b"".join(entries))
    directory_at = position
    xml = _metadata_xml(
        sizes,
        width,
        height,
        pixel_type,
        names,
        scaling_um,
        len(blocks) // max(1, int(np.prod(full.shape[:4]))),
    ).encode("utf-8")
    metadata_at = directory_at + len(directory)
    metadata = _segment(b"ZISRAWMETADATA", struct.pack("<ii248x", len(xml), 0) + xml)
    attachments_at = metadata_at + len(metadata)
    attachments = _segment(b"ZISRAWATTDIR", struct.pack("<i252x", 0))

    digest = hashlib.sha256(bytes(body[:4096]) + xml).digest()
    guid = digest[:16]
    # FileHeader: Major, Minor, 2 reserved, PrimaryFileGuid, FileGuid, FilePart, DirectoryPosition,
    # MetadataPosition, UpdatePending, AttachmentDirectoryPosition.
    header = struct.pack("<iiii", 1, 0, 0, 0) + guid + guid
    header += struct.pack("<iqqiq", 0, directory_at, metadata_at, 0, attachments_at)
    file_header = _segment(b"ZISRAWFILE", header.ljust(_FILE_HEADER_ALLOCATED, b"\x00"))

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as fh:
        fh.write(file_header)
        fh.write(body)
        fh.write(directory)
        fh.write(metadata)
        fh.write(attachments)
    return out

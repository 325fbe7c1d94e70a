"""Plain PNGs verified from their bytes: the size PIL's ``Image.open(...).verify()`` would give, or "ask PIL".

The benchmark's validity test for an image is PIL's ``verify()``. For a PNG that is PIL reading the chunks up
to the first IDAT (checking each CRC) and then the CRC of every chunk up to IEND. `verified_png_size` repeats
exactly that on the bytes for the common, plain layout (IHDR, optional PLTE, IDAT..., IEND; no interlace),
which is several times cheaper than opening the file with PIL. It never says "invalid": anything unusual or
broken returns None, and the caller asks PIL, which also words the error message.
"""

from __future__ import annotations

import re
import struct
import zlib

from PIL import Image, ImageFile

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# (bit depth, colour type) pairs the PNG spec allows (PNG spec 11.2.2); PIL maps each to a mode.
_VALID_DEPTHS = frozenset(
    {(1, 0), (2, 0), (4, 0), (8, 0), (16, 0), (8, 2), (16, 2), (1, 3), (2, 3), (4, 3), (8, 3)}
    | {(8, 4), (16, 4), (8, 6), (16, 6)}
)
_CHUNK_NAME = re.compile(rb"\w\w\w\w")  # PIL's test for a readable chunk header
_HEADER = struct.Struct(">I4s")
_CRC = struct.Struct(">I")


def verified_png_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` when ``data`` is a plain PNG that PIL would open and verify; None when unsure.

    Args:
        data: The whole file.

    Returns:
        The size, or None for anything that is not a plain, intact PNG (the caller then runs PIL).
    """
    if not data.startswith(PNG_SIGNATURE) or ImageFile.LOAD_TRUNCATED_IMAGES:
        return None  # with truncated loading on, PIL skips some CRCs: let it decide
    size = _header_size(data)
    if size is None:
        return None
    pos = 8 + 12 + 13  # past the signature and IHDR
    seen_idat = False
    while True:
        if pos + 8 > len(data):
            return None
        length, name = _HEADER.unpack_from(data, pos)
        if not _CHUNK_NAME.match(name):
            return None
        if name == b"IEND":
            return size if seen_idat else None
        if not seen_idat and name not in (b"PLTE", b"IDAT"):
            return None  # an ancillary chunk PIL's header parser would interpret: let PIL read it
        seen_idat = seen_idat or name == b"IDAT"
        end = pos + 8 + length
        if end + 4 > len(data) or not _crc_matches(data, pos + 4, end):
            return None
        pos = end + 4


def _header_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 8 + 12 + 13:
        return None
    length, name = _HEADER.unpack_from(data, 8)
    if name != b"IHDR" or length != 13 or not _crc_matches(data, 12, 8 + 8 + 13):
        return None
    width, height, depth, colour, compression, filtering, interlace = struct.unpack_from(">IIBBBBB", data, 16)
    if (depth, colour) not in _VALID_DEPTHS or compression or filtering or interlace:
        return None
    if width == 0 or height == 0:
        return None
    limit = Image.MAX_IMAGE_PIXELS
    if limit is not None and width * height > limit:
        return None  # PIL warns or refuses (decompression bomb): let it decide
    return width, height


def _crc_matches(data: bytes, start: int, end: int) -> bool:
    """Whether the CRC after ``data[start:end]`` (chunk name and payload) matches it."""
    stored: int = _CRC.unpack_from(data, end)[0]
    return zlib.crc32(memoryview(data)[start:end]) == stored

"""Image existence and validity, opening each file once.

The reference scorer calls PIL ``Image.open(...).verify()``. For PNG that means: the signature, then every
chunk's length, type and CRC up to IEND (no decompression). We walk the chunks ourselves on bytes we read
once, which catches exactly what ``verify()`` catches (bad signature, truncation, CRC mismatch) at a fraction
of the cost. Other formats fall back to PIL.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from benchmark.score import constants as C

log = logging.getLogger(__name__)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class ImageCheck:
    """Outcome for ``images/<key>.*``: the file found (or None), whether it exists and whether it is valid."""

    path: Path | None
    exists: bool
    valid: bool
    reason: str | None = None


def png_problem(data: bytes) -> str | None:
    """Why ``data`` (the whole file) is not a well-formed PNG stream, in a few words, or None when it is."""
    if not data.startswith(PNG_SIGNATURE):
        return "not a PNG (bad signature)"
    pos = len(PNG_SIGNATURE)
    first = True
    while True:
        if pos + 8 > len(data):
            return "truncated PNG (no IEND chunk)"
        length, ctype = struct.unpack(">I4s", data[pos : pos + 8])
        end = pos + 8 + length + 4
        if end > len(data):
            return f"truncated PNG chunk {ctype!r}"
        if first and (ctype != b"IHDR" or length != 13):
            return "PNG does not start with IHDR"
        first = False
        crc = struct.unpack(">I", data[end - 4 : end])[0]
        if zlib.crc32(data[pos + 4 : pos + 8 + length]) & 0xFFFFFFFF != crc:
            return f"PNG chunk {ctype!r} has a bad CRC"
        if ctype == b"IEND":
            return None
        pos = end


def _pil_problem(path: Path) -> str | None:
    try:
        from PIL import Image

        with Image.open(path) as im:
            im.verify()
            if not (im.width and im.height):
                return "image has zero size"
    except Exception as exc:  # PIL raises many exception types for corrupt files
        return f"unreadable image: {exc}"
    return None


def needs_pil(images_dir: Path) -> bool:
    """Whether `check_image` would hand some image of ``images_dir`` to Pillow (a ``.jpg``/``.jpeg``, or a
    ``.png`` that does not start with the PNG signature).

    Only a hint for who scores which model (`benchmark.score.forked`): Pillow's first use costs ~40 ms per
    process. It reads the first 8 bytes of each ``.png``, not the whole file.

    Args:
        images_dir: ``agent1_data_organization/images``.

    Returns:
        True when some image file needs Pillow; False when none does or the folder cannot be read.
    """
    try:
        with os.scandir(images_dir) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(".png"):
                    fd = os.open(
                        entry.path, os.O_RDONLY
                    )  # not open(): no buffered file object, half the time
                    try:
                        head = os.read(fd, len(PNG_SIGNATURE))
                    finally:
                        os.close(fd)
                    if head and head != PNG_SIGNATURE:
                        return True
                elif name.endswith(C.IMAGE_EXTS):
                    return True
    except OSError:
        return False
    return False


def find_image(images_dir: Path, key: str, names: frozenset[str] | None = None) -> Path | None:
    """The first existing ``images/<key>.png|.jpg|.jpeg`` (case-sensitive, like the reference)."""
    for ext in C.IMAGE_EXTS:
        name = f"{key}{ext}"
        if names is not None:
            if name in names:
                return images_dir / name
        elif (images_dir / name).is_file():
            return images_dir / name
    return None


# Pillow's default decompression-bomb limit (Image.MAX_IMAGE_PIXELS), fixed here so the cap does not depend on
# whatever another library set at run time.
MAX_IMAGE_PIXELS = 89_478_485


def check_image(
    images_dir: Path, key: str, names: frozenset[str] | None = None, *, max_pixels: int | None = None
) -> ImageCheck:
    """Locate and verify the image for one annotation key.

    Args:
        images_dir: ``agent1_data_organization/images``.
        key: The matched annotation stem (or GT index).
        names: File names in ``images_dir`` when already listed (saves a stat per extension).
        max_pixels: When set, a PNG whose header claims more pixels is invalid (strict profile only).

    Returns:
        The check; never raises.
    """
    path = find_image(images_dir, key, names)
    if path is None:
        return ImageCheck(None, False, False, "image missing")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return ImageCheck(path, True, False, f"cannot read image: {exc}")
    if not data:
        return ImageCheck(path, True, False, "empty image file")
    if path.suffix == ".png" and data.startswith(PNG_SIGNATURE):
        problem = png_problem(data)
        if problem is None:
            width, height = struct.unpack(">II", data[16:24])
            problem = None if width and height else "image has zero size"
            if problem is None and max_pixels is not None and width * height > max_pixels:
                problem = f"PNG header claims {width}x{height} pixels, above the {max_pixels} pixel cap"
    else:
        problem = _pil_problem(path)
    if problem:
        log.debug("invalid image %s: %s", path, problem)
    return ImageCheck(path, True, problem is None, problem)

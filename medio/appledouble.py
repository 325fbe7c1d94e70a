"""macOS AppleDouble stubs (``._name.tiff``, also under ``__MACOSX/``): resource-fork metadata, not an image.

macOS writes them beside every file it copies to a non-HFS volume or zips; RFC 1740 gives the format, which
starts with the magic number ``0x00051607``. The image is the sibling without ``._`` (for ``__MACOSX/a/._b``:
``a/b`` beside the ``__MACOSX`` folder). Reading a stub reads that sibling and says so in
``meta.header["appledouble"]`` (and a warning in the log); a stub without its sibling is an error.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from medio.errors import UnsupportedFormat
from medio.types import MedImage

log = logging.getLogger(__name__)

PREFIX = "._"
MACOSX = "__MACOSX"


def sibling_candidates(path: Path) -> list[Path]:
    """Where the real file of a stub may be, most likely first: beside it, and outside a ``__MACOSX``
    folder."""
    name = path.name[len(PREFIX) :] if path.name.startswith(PREFIX) else path.name
    out = [path.with_name(name)]
    parts = path.parent.parts
    if MACOSX in parts:
        at = len(parts) - 1 - parts[::-1].index(MACOSX)
        out.append(Path(*parts[:at], *parts[at + 1 :]) / name)
    return [p for p in out if p != path]


def resolve_stub(path: Path) -> Path:
    """The existing real file a stub stands for; ``UnsupportedFormat`` when there is none (the stub itself
    holds no image).
    """
    for candidate in sibling_candidates(path):
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(c) for c in sibling_candidates(path)) or "(none)"
    raise UnsupportedFormat(
        path, f"macOS AppleDouble stub (metadata, no image) and its real file is missing (tried {tried})"
    )


def _note(stub: Path, real: Path) -> dict[str, str]:
    return {
        "stub": str(stub),
        "resolved_to": str(real),
        "note": "macOS AppleDouble metadata stub; the image was read from the real file beside it",
    }


def read_appledouble(
    path: str | Path,
    *,
    key: str | None = None,
    index: int | None = None,
    frame: int | None = None,
    series: str | int | None = None,
    volume: int | None = None,
) -> MedImage:
    """Read the real file of a stub (options passed on) and record the resolution.

    Args:
        path: The ``._`` stub.
        key: Passed to :func:`medio.read.read`.
        index: Passed on.
        frame: Passed on.
        series: Passed on.
        volume: Passed on.

    Returns:
        The sibling's image; ``meta.path`` is the sibling, ``meta.header["appledouble"]`` names the stub.

    Raises:
        UnsupportedFormat: The sibling is missing.
        MedioError: The sibling cannot be read.
    """
    from medio.read import read

    stub = Path(path)
    real = resolve_stub(stub)
    log.warning("%s: macOS AppleDouble stub; reading its real file %s", stub, real)
    image = read(real, key=key, index=index, frame=frame, series=series, volume=volume)
    image.meta.header["appledouble"] = _note(stub, real)
    return image


def summarize_appledouble(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: ``appledouble`` (stub, resolved_to, note) and ``resolved`` (the real file's
    summary); ``UnsupportedFormat`` when the real file is missing.
    """
    from medio.inspect import inspect

    stub = Path(path)
    real = resolve_stub(stub)
    return {"appledouble": _note(stub, real), "resolved": inspect(real)}

"""Report thumbnails: at most 256 px, named by content so identical candidate images are stored once."""

from __future__ import annotations

import hashlib
import io
import logging
import warnings
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from core.atomic import atomic_write_bytes

__all__ = ["MAX_SIDE", "Thumbnailer"]

log = logging.getLogger(__name__)

MAX_SIDE = 256
_MAX_PIXELS = 64_000_000  # a header claiming 100000 x 100000 is refused before any decode


class Thumbnailer:
    """Writes ``<assets>/thumbs/<sha1>.png`` for each distinct source image and returns its relative path.

    Args:
        assets: The report's ``assets/`` folder.
        earlier: Thumbnail folders of other reports over the same images (a reselection's source run): a
            thumbnail found there under the image's name is copied instead of decoded and encoded again.
    """

    def __init__(self, assets: Path, earlier: Sequence[Path] = ()) -> None:
        self.folder = assets / "thumbs"
        self.earlier = [Path(f) for f in earlier if Path(f).resolve() != self.folder.resolve()]
        self._done: dict[Path, str | None] = {}
        self.written = 0
        self.copied = 0

    def __call__(self, image: Path | None) -> str | None:
        """The thumbnail's path relative to the report (``assets/thumbs/<sha1>.png``), or None.

        None means the image is absent or cannot be decoded (truncated, not an image, too large); the
        report then shows a placeholder saying so.
        """
        if image is None:
            return None
        if image in self._done:
            return self._done[image]
        rel = self._make(image)
        self._done[image] = rel
        return rel

    def _make(self, image: Path) -> str | None:
        try:
            data = image.read_bytes()
        except OSError as exc:
            log.warning("report: cannot read %s: %s", image, exc)
            return None
        digest = hashlib.sha1(data, usedforsecurity=False).hexdigest()
        target = self.folder / f"{digest}.png"
        rel = f"assets/thumbs/{digest}.png"
        if target.is_file():
            return rel
        for folder in self.earlier:
            try:
                made = (folder / f"{digest}.png").read_bytes()
            except OSError:
                continue
            atomic_write_bytes(target, made, durable=False)
            self.copied += 1
            return rel
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(io.BytesIO(data)) as img:
                    if img.width * img.height > _MAX_PIXELS:
                        raise ValueError(f"{img.width}x{img.height} is too large to thumbnail")
                    img.draft("L" if img.mode in ("L", "I", "I;16") else "RGB", (MAX_SIDE, MAX_SIDE))
                    img.load()
                    thumb = _displayable(img)
                    thumb.thumbnail((MAX_SIDE, MAX_SIDE))
                    buf = io.BytesIO()
                    thumb.save(buf, format="PNG", optimize=True)
        except Exception as exc:  # any undecodable image becomes a placeholder, never a failed report
            log.warning("report: cannot thumbnail %s: %s", image, exc)
            return None
        atomic_write_bytes(target, buf.getvalue(), durable=False)  # a cache: a lost thumbnail is made again
        self.written += 1
        return rel


def _displayable(img: Image.Image) -> Image.Image:
    """Convert modes browsers render poorly (16-bit, palette with odd depth) to L or RGB."""
    mode = img.mode
    if mode in ("L", "RGB", "RGBA"):
        return img
    if mode in ("I", "I;16", "I;16B", "F"):
        import numpy as np

        arr = np.asarray(img, dtype=np.float64)
        lo, hi = float(arr.min()), float(arr.max())
        scaled = (arr - lo) / (hi - lo) * 255.0 if hi > lo else arr * 0.0
        return Image.fromarray(scaled.astype(np.uint8))
    return img.convert("RGB")

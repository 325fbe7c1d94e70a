"""Time the LLM judge's composite image (`strategies.judge.composite_image`) and its PNG encoding.

Per judged sample the judge is sent one PNG of the candidates' images side by side. The composite is a request
payload, never kept, so it is encoded with zlib level 1; this prints what that costs against PIL's
``optimize=True`` (the encoding it replaced) on the same pixels: the median seconds of ``--runs``
repetitions after one warm-up (`perf/medio_render.py`'s timer) and the PNG's size, for 2 and 4 candidates
of a 512x512 CT-like slice and a noisy photo.

Usage: ``python perf/judge_composite.py [--runs 9]``
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from medio.png import encode_png
from strategies.judge import composite_image

# perf/ is a folder of scripts: a sibling is importable when one runs, or once this folder is on the path.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from medio_render import median_seconds


def ct_slice(seed: int) -> bytes:
    """A 512x512 8-bit CT-like slice as PNG bytes: a bright body, a bony core, a little noise."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:512, :512]
    r2 = ((yy - 256) / 215.0) ** 2 + ((xx - 256) / 185.0) ** 2
    pixels = np.where(r2 < 1.0, 110, 0) + np.where(r2 < 0.05, 120, 0) + rng.integers(0, 12, (512, 512))
    return encode_png(pixels.astype(np.uint8))


def noisy_photo(seed: int) -> bytes:
    """A 512x512 RGB dermoscopy-like photo as PNG bytes: smooth colour with strong sensor noise."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:512, :512]
    base = np.stack([150 + 60 * np.sin(xx / 50.0), 110 + 40 * np.cos(yy / 70.0), 90 + 0 * xx], axis=-1)
    return encode_png((base + rng.normal(0, 14, base.shape)).clip(0, 255).astype(np.uint8))


def png_size(canvas: Image.Image, **options: object) -> int:
    """The canvas's PNG size in bytes with PIL's ``options``."""
    out = io.BytesIO()
    canvas.save(out, format="PNG", **options)
    return len(out.getvalue())


def row(name: str, images: list[bytes], runs: int) -> str:
    """One table row: the composite of ``images`` timed whole, then its canvas encoded both ways."""
    data = composite_image(images)
    assert data is not None
    canvas = Image.open(io.BytesIO(data))
    canvas.load()
    whole = median_seconds(lambda: composite_image(images), runs)
    fast = median_seconds(lambda: png_size(canvas, compress_level=1), runs)
    small = median_seconds(lambda: png_size(canvas, optimize=True), runs)
    fast_kb, small_kb = png_size(canvas, compress_level=1) / 1e3, png_size(canvas, optimize=True) / 1e3
    return (
        f"{name:<12} {len(images):>2} {whole:>11.3f} {fast:>9.3f} {small:>10.3f} {small / fast:>5.1f}x "
        f"{fast_kb:>10.0f} {small_kb:>11.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    header = ("images", "n", "composite s", "level 1 s", "optimize s", "ratio", "level 1 kB", "optimize kB")
    print("{:<12} {:>2} {:>11} {:>9} {:>10} {:>6} {:>10} {:>11}".format(*header))
    for name, make in (("CT slice", ct_slice), ("noisy photo", noisy_photo)):
        for n in (2, 4):
            print(row(name, [make(seed) for seed in range(n)], runs))


if __name__ == "__main__":
    main()

"""Time medio.render on one slice of a 512×512×300 int16 CT-like volume.

Two measurements, each the median of ``--runs`` repetitions:

* in memory: ``render(MedImage)`` of the middle slice (slice choice, CT preset window, 8-bit conversion);
* end to end: ``read(nifti_path)`` + ``render`` from an uncompressed ``.nii`` written to a temp folder
  (nibabel memory-maps it, so only the rendered slice is touched).

Usage: ``python perf/medio_render.py [--runs 20]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import medio
from medio import MedImage, Meta

SHAPE = (300, 512, 512)  # (Z, Y, X)


def ct_like_volume(seed: int = 0) -> np.ndarray:
    """Return an int16 volume in HU: air around a water-like body with a bony core and noise."""
    rng = np.random.default_rng(seed)
    _, y, x = SHAPE
    yy, xx = np.mgrid[:y, :x]
    r2 = ((yy - y / 2) / (0.42 * y)) ** 2 + ((xx - x / 2) / (0.36 * x)) ** 2
    plane = np.where(r2 < 1.0, 40, -1000).astype(np.int16)
    plane[r2 < 0.05] = 700
    vol = np.broadcast_to(plane, SHAPE).copy()
    vol += rng.integers(-20, 21, size=(1, y, x), dtype=np.int16)  # cheap texture, same for every slice
    return vol


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    """Median wall time of ``runs`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Build the volume, time both paths and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    import nibabel as nib

    vol = ct_like_volume()
    image = MedImage(vol, Meta(format="array", path="memory", axes="ZYX", modality="CT"))
    in_memory = median_seconds(lambda: medio.render(image), args.runs)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ct.nii"
        nib.save(nib.Nifti1Image(np.ascontiguousarray(vol.transpose(2, 1, 0)), np.eye(4)), path)
        size_mb = path.stat().st_size / 1e6

        def read_and_render() -> object:
            loaded = medio.read(path)
            return medio.render(loaded, window=(40.0, 400.0))

        end_to_end = median_seconds(read_and_render, args.runs)
        shown = read_and_render()

    print(f"volume {SHAPE[::-1]} int16 (X, Y, Z), NIfTI {size_mb:.0f} MB, runs={args.runs}")
    print(f"render from in-memory MedImage : median {in_memory * 1e3:8.2f} ms")
    print(f"read + render from NIfTI file  : median {end_to_end * 1e3:8.2f} ms")
    print(f"end-to-end / in-memory ratio   : {end_to_end / in_memory:8.2f}")
    print(f"rendered slice info            : {getattr(shown, 'info', {})}")


if __name__ == "__main__":
    main()

"""Validator throughput: candidate-samples per second for 2D and 3D samples under the evidence profile.

Usage: python perf/validator_speed.py [SUITE_DIR]   (generates a small bundled suite in a temp folder if
omitted)

Each dataset's oracle is validated once cold (renders computed) and then re-validated with the per-sample
result
cache off but the render cache warm, as S3 does for many candidates of the same samples. Single process, one
core.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmark.discover import discover
from validator.validate import clear_cache, validate

DATASETS = {
    "2D": [
        "synth-histology-png",
        "synth-dermoscopy-jpg",
        "synth-polyp-coco-png",
        "synth-chest-xray-dicom",
        "synth-thyroid-us-bmp",
    ],
    "3D": ["synth-kidney-ct-nifti", "synth-brain-mr-nifti", "synth-ct-liver-series", "synth-prostate-mha"],
}


def measure(root: Path, names: list[str], repeats: int) -> tuple[float, float, float]:
    """(cold samples/s, warm samples/s, mean total) over ``names``."""
    datasets = [d for d in discover(root) if d.name in names]
    clear_cache()
    t0 = time.perf_counter()
    n = 0
    totals = []
    for ds in datasets:
        report = validate(ds.prediction_dir("oracle"), ds)
        n += len(report.samples)
        totals.append(report.mean_total)
    cold = n / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    n = 0
    for _ in range(repeats):
        for ds in datasets:
            n += len(validate(ds.prediction_dir("oracle"), ds, use_cache=False).samples)
    warm = n / (time.perf_counter() - t0)
    return cold, warm, sum(totals) / max(len(totals), 1)


def main() -> None:
    """Print the throughput table."""
    if len(sys.argv) > 1:
        root = Path(sys.argv[1])
    else:
        root = Path(tempfile.mkdtemp(prefix="vspeed-"))
        only = [n for names in DATASETS.values() for n in names]
        subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmark.synth",
                str(root),
                "--size",
                "small",
                "--oracle",
                "oracle",
                "--only",
                *only,
            ],
            check=True,
            capture_output=True,
        )
    print(f"{'kind':<5}{'cold samples/s':>16}{'warm samples/s':>16}{'oracle mean':>13}")
    for kind, names in DATASETS.items():
        cold, warm, mean = measure(root, names, repeats=5)
        print(f"{kind:<5}{cold:>16.0f}{warm:>16.0f}{mean:>13.4f}")
    print(
        "target: >= 500 warm 2D candidate-samples/s on one core (source-correlation check on, renders cached)"
    )


if __name__ == "__main__":
    main()

"""Time the scorer on the conformance cases and print samples per second.

    python perf/score_speed.py [CONFORMANCE_DIR] [--profile official|strict] [--workers N]

CONFORMANCE_DIR defaults to ../shared/mdsbench/conformance relative to the repository.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from benchmark.score.evaluate import score_root

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    """Score every dataset × model once and report throughput."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("conformance", nargs="?", default=str(REPO.parent / "shared" / "mdsbench" / "conformance"))
    p.add_argument("--profile", default="official")
    p.add_argument("--workers", type=int, default=None)
    args = p.parse_args()
    cases = Path(args.conformance) / "cases"
    start = time.perf_counter()
    results = score_root(cases, profile=args.profile, workers=args.workers)
    elapsed = time.perf_counter() - start
    folders = sum(len(r["models"]) for r in results.values())
    samples = sum(len(m["per_sample"]) for r in results.values() for m in r["models"].values())
    print(
        f"{len(results)} datasets, {folders} prediction folders, {samples} samples in {elapsed:.2f} s "
        f"({samples / elapsed:.0f} samples/s, profile {args.profile})"
    )


if __name__ == "__main__":
    main()

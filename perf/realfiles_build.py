"""Build time and reproducibility of the realfiles suite (target: under 15 s; same versions => same bytes).

Builds the suite ``--repeats`` times into fresh folders (optionally with the oracle run); prints the median
and the slowest build in seconds, and whether every build wrote byte-identical files.

    PYTHONPATH=. python perf/realfiles_build.py [--repeats 3] [--oracle]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from pathlib import Path

from testbed.realfiles import build_realfiles


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def main() -> None:
    """Parse arguments, build, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--oracle", action="store_true", help="also write the oracle run")
    args = parser.parse_args()
    seconds, digests = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeats):
            out = Path(tmp) / f"build{k}"
            start = time.perf_counter()
            built = build_realfiles(out, oracle="oracle" if args.oracle else None)
            seconds.append(time.perf_counter() - start)
            digests.add(_digest(out))
    samples = sum(len(ds.samples) for ds in built)
    print(f"realfiles build: {len(built)} datasets, {samples} manifest samples, oracle={args.oracle}")
    print(f"realfiles build median: {statistics.median(seconds):.2f} s (slowest {max(seconds):.2f} s)")
    print(f"realfiles byte-identical across builds: {'yes' if len(digests) == 1 else 'NO'}")


if __name__ == "__main__":
    main()

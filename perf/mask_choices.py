"""The guided mode's mask choices on a large tree: `mask_choices` against ranking every file by likeness.

`agents.llm.guided.mask_choices` runs once per sample of a segmentation candidate over every
data file of the dataset. Name likeness (difflib) and path objects were the slow part of its ranking: it
works on strings, and computes likeness only for the files that tie with the last one kept. This prints
milliseconds per sample for it and for a ranking that computes likeness for every file with path objects
(the same order: checked on every sample), then the ratio.

    python perf/mask_choices.py --files 20000 --samples 20
"""

from __future__ import annotations

import argparse
import difflib
import random
import re
import time
from pathlib import PurePosixPath

from agents.base import ManifestEntry
from agents.llm.guided import mask_choices
from validator.dataset_facts import ANNOTATION_WORDS

_WORDS = ["img", "image", "label", "labelsTr", "mask", "seg", "case", "3LABEL", "ct", "scan", "gt"]
_KEEP = len(mask_choices([f"data/{i}.png" for i in range(100)], ManifestEntry(0, "data/x.png")))
_FOLDERS = ["data/imagesTr", "data/labelsTr", "data/3LABEL", "data/raw"]


def every_file_ranked(files: list[str], entry: ManifestEntry) -> list[str]:
    """The ranking with likeness computed for every file."""
    sample = PurePosixPath(entry.relpath)
    numbers = set(re.findall(r"\d+", sample.name))

    def key(rel: str) -> tuple[int, bool, bool, float]:
        path = PurePosixPath(rel)
        words = re.findall(r"[a-z]+", rel.lower().removeprefix("data/"))
        return (
            -len(numbers & set(re.findall(r"\d+", path.name))),
            not any(w in ANNOTATION_WORDS for w in words),
            path.parent == sample.parent and path.suffixes == sample.suffixes,
            -difflib.SequenceMatcher(None, sample.name.lower(), path.name.lower()).ratio(),
        )

    return sorted(files, key=key)[:_KEEP]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(0)
    folders = [*_FOLDERS, *(f"data/case_{i:03d}" for i in range(300))]
    suffixes = [".nii.gz", ".png", ".tif", ""]
    files = [
        f"{rng.choice(folders)}/{rng.choice(_WORDS)}_{rng.randrange(500):03d}{rng.choice(suffixes)}"
        for _ in range(args.files)
    ]
    entries = [ManifestEntry(i, rng.choice(files)) for i in range(args.samples)]
    seconds, orders = {}, {}
    for name, rank in (("mask_choices", mask_choices), ("every file ranked", every_file_ranked)):
        start = time.perf_counter()
        orders[name] = [rank(files, entry) for entry in entries]
        seconds[name] = (time.perf_counter() - start) / len(entries)
    if orders["mask_choices"] != orders["every file ranked"]:
        raise SystemExit("the two rankings differ: mask_choices is not the ranking it claims")
    for name, value in seconds.items():
        print(f"{name:>18}: {value * 1000:8.1f} ms/sample ({args.files} files)")
    ratio = seconds["every file ranked"] / seconds["mask_choices"]
    print(f"{'ratio':>18}: {ratio:.1f}x (both orders equal on {len(entries)} samples)")


if __name__ == "__main__":
    main()

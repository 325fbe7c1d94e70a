"""The bundled synthetic suite: a deterministic generator of MDS-Bench-shaped datasets with every trap.

``medstrat synth OUT_DIR [--size small|full] [--seed N] [--oracle RUN] [--only NAME ...]``; see
docs/benchmark.md for the layout, the slice/frame rule and the catalogue.
"""

from testbed.synth.catalogue import CatalogueRow, catalogue, catalogue_markdown
from testbed.synth.suite import FAKE_AUTHORS_ROOT, SIZES, BuiltDataset, dataset_names, generate_suite

__all__ = [
    "FAKE_AUTHORS_ROOT",
    "SIZES",
    "BuiltDataset",
    "CatalogueRow",
    "catalogue",
    "catalogue_markdown",
    "dataset_names",
    "generate_suite",
]

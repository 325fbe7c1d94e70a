"""The foreign suite: pixels shipped in other packages' wheels (scikit-image, matplotlib) laid out as imaging
communities lay out data (nnU-Net, BIDS, per-patient DICOM trees, label tables keyed by ids).

``medstrat synth OUT --suite foreign`` writes it; see docs/benchmark.md, "The foreign suite".
"""

from testbed.foreign.suite import (
    FOREIGN_AUTHORS_ROOT,
    FOREIGN_MARKER,
    build_foreign,
    foreign_catalogue,
    foreign_names,
)

__all__ = ["FOREIGN_AUTHORS_ROOT", "FOREIGN_MARKER", "build_foreign", "foreign_catalogue", "foreign_names"]

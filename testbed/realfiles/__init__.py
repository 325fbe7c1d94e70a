"""The realfiles suite: datasets in the benchmark layout made of files other people wrote.

``medstrat synth OUT --suite realfiles`` writes it; the files are the test data shipped inside the
installed pydicom and nibabel packages (no download), laid out as real datasets are (nested patient/study
folders, label tables, decoys), with ground truth rendered through ``medio``. See docs/benchmark.md.
"""

from testbed.realfiles.spec import RealSample
from testbed.realfiles.suite import (
    REALFILES_AUTHORS_ROOT,
    REALFILES_MARKER,
    BuiltRealDataset,
    build_realfiles,
    realfiles_catalogue,
    realfiles_names,
)

__all__ = [
    "REALFILES_AUTHORS_ROOT",
    "REALFILES_MARKER",
    "BuiltRealDataset",
    "RealSample",
    "build_realfiles",
    "realfiles_catalogue",
    "realfiles_names",
]

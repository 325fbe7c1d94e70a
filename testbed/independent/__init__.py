"""The independent suite: pixels shipped in the nilearn and scikit-learn wheels, laid out as other imaging
communities lay out data (Medical Segmentation Decathlon, COCO, ImageFolder, TransUNet npz, Kaggle, a cohort
tree with a demographics sheet, a study list keyed by accession number), built without reading the ``rules``
baseline or the validator, to measure them on layouts they were not tuned on.

``medstrat synth OUT --suite independent`` writes it; see docs/benchmark.md, "Independent set".
"""

from testbed.independent.suite import (
    INDEPENDENT_AUTHORS_ROOT,
    INDEPENDENT_MARKER,
    build_independent,
    independent_catalogue,
    independent_names,
)

__all__ = [
    "INDEPENDENT_AUTHORS_ROOT",
    "INDEPENDENT_MARKER",
    "build_independent",
    "independent_catalogue",
    "independent_names",
]

"""Write the independent suite: nilearn's and scikit-learn's shipped pixels in community layouts.

It uses the realfiles ground-truth writers (geometry read back through ``medio``) and states the dataset
name the documentation gives (``dataset.json``, COCO ``info``, README title), as the foreign suite does.
Detection boxes are measured by the builder on the pixels it wrote; a label map stored as an ``.npz``
member is read with its key.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import medio
from testbed.independent import sets_tables, sets_volumes  # noqa: F401  # registers; catalogue order
from testbed.independent.sources import source_versions
from testbed.independent.spec import INDEPENDENT_REGISTRY, INDEPENDENT_TITLES, IndependentSample
from testbed.realfiles.documented_suite import DocumentedSuite
from testbed.realfiles.suite import geometry_sample
from testbed.synth.spec import DatasetSpec, SynthSample

__all__ = [
    "INDEPENDENT_AUTHORS_ROOT",
    "INDEPENDENT_MARKER",
    "build_independent",
    "independent_catalogue",
    "independent_names",
]

#: The markers around the independent catalogue table in docs/benchmark.md.
INDEPENDENT_MARKER = "independent-catalogue"
#: The authors' root the manifests pretend the data came from (re-rooted at the ``/data/`` segment).
INDEPENDENT_AUTHORS_ROOT = "/srv/lab-share/imaging/curated"


def _geometry(root: Path, spec: DatasetSpec, sample: IndependentSample) -> SynthSample:
    """The ground-truth view of one sample: image size, slice, label map or boxes."""
    if sample.mask_read:  # the label map is a member of the image's own archive
        plain = dataclasses.replace(sample, mask_path=None)
        truth = geometry_sample(root, dataclasses.replace(spec, task="classification"), plain)
        assert sample.mask_path is not None
        labels = medio.read(root / sample.mask_path, **sample.mask_read)
        mask = medio.render(labels, label=True).pixels
        if mask.shape[:2] != (truth.image_size[1], truth.image_size[0]):
            raise ValueError(f"{spec.name}: label map of {sample.manifest_path} is not on the image grid")
        return dataclasses.replace(truth, mask=mask)
    truth = geometry_sample(root, spec, sample)
    if spec.task == "detection":
        truth = dataclasses.replace(truth, boxes=list(sample.boxes), box_labels=list(sample.box_labels))
    return truth


INDEPENDENT = DocumentedSuite(
    "independent dataset",
    INDEPENDENT_REGISTRY,
    INDEPENDENT_AUTHORS_ROOT,
    source_versions,
    geometry=_geometry,
    titles=INDEPENDENT_TITLES,
)
# The suite's commands by the names the rest of the project calls them (a sample missing from nilearn or
# scikit-learn raises `testbed.independent.sources.MissingSource`).
independent_names = INDEPENDENT.names
independent_catalogue = INDEPENDENT.catalogue
build_independent = INDEPENDENT.build

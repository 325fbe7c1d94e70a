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
from benchmark.independent import sets_tables, sets_volumes  # noqa: F401  # registers; catalogue order
from benchmark.independent.sources import source_versions
from benchmark.independent.spec import INDEPENDENT_REGISTRY, INDEPENDENT_TITLES, IndependentSample
from benchmark.realfiles.documented_suite import (
    DocumentedSuite,
    build_documented_dataset,
    build_documented_suite,
)
from benchmark.realfiles.suite import BuiltRealDataset, geometry_sample
from benchmark.synth.spec import DatasetSpec, SynthSample, select_names

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


def independent_names(only: list[str] | None = None) -> list[str]:
    """Registered independent dataset names in catalogue order, optionally restricted to ``only``.

    Raises:
        KeyError: An unknown name (the message lists the valid ones).
    """
    return select_names(list(INDEPENDENT_REGISTRY), only, "independent dataset")


def independent_catalogue() -> str:
    """The independent catalogue as the Markdown table docs/benchmark.md embeds."""
    from benchmark.synth.catalogue import catalogue_markdown

    return catalogue_markdown([INDEPENDENT_REGISTRY[n].spec for n in independent_names()])


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


_SUITE = DocumentedSuite(
    INDEPENDENT_REGISTRY, INDEPENDENT_TITLES, INDEPENDENT_AUTHORS_ROOT, source_versions, geometry=_geometry
)


def build_dataset(out: Path, name: str) -> BuiltRealDataset:
    """Write one independent dataset under ``out/<name>`` (every sample must decode).

    Raises:
        RuntimeError: A sample ``medio`` cannot read (a reader gap, never hidden).
    """
    return build_documented_dataset(out, name, _SUITE)


def build_independent(
    out: str | Path, *, only: list[str] | None = None, oracle: str | None = None
) -> list[BuiltRealDataset]:
    """Write the independent suite under ``out`` (one folder per dataset).

    Args:
        out: Benchmark root (created if needed).
        only: Restrict to these dataset names.
        oracle: Also write the perfect prediction as run ``VLM/<oracle>/``.

    Returns:
        The built datasets in catalogue order.

    Raises:
        KeyError: An unknown dataset name.
        RuntimeError: A sample that does not decode.
        benchmark.independent.sources.MissingSource: nilearn or scikit-learn lacks a file.
    """
    return build_documented_suite(out, independent_names(only), _SUITE, oracle)

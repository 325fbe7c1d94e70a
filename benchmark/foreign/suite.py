"""Write the foreign suite: other packages' sample pixels in community layouts, with ground truth via medio.

It reuses the realfiles machinery (``RealContext``/``RealSample``, geometry read back through ``medio``) with
two differences: its own registry, and a ground-truth ``dataset_name`` that is the name the dataset's
documentation gives (README title, nnU-Net ``dataset.json``, BIDS ``dataset_description.json``), or the
folder id when it gives none.
"""

from __future__ import annotations

from pathlib import Path

from benchmark.foreign.sets import FOREIGN_REGISTRY, FOREIGN_TITLES
from benchmark.foreign.sources import source_versions
from benchmark.realfiles.documented_suite import (
    DocumentedSuite,
    build_documented_dataset,
    build_documented_suite,
)
from benchmark.realfiles.suite import BuiltRealDataset
from benchmark.synth.spec import select_names

__all__ = ["FOREIGN_AUTHORS_ROOT", "FOREIGN_MARKER", "build_foreign", "foreign_catalogue", "foreign_names"]

#: The markers around the foreign catalogue table in docs/benchmark.md.
FOREIGN_MARKER = "foreign-catalogue"
#: The authors' root the manifests pretend the data came from (re-rooted at the ``/data/`` segment).
FOREIGN_AUTHORS_ROOT = "/mnt/store/collab/foreign-sets"


def foreign_names(only: list[str] | None = None) -> list[str]:
    """Registered foreign dataset names in catalogue order, optionally restricted to ``only``.

    Raises:
        KeyError: An unknown name (the message lists the valid ones).
    """
    return select_names(list(FOREIGN_REGISTRY), only, "foreign dataset")


def foreign_catalogue() -> str:
    """The foreign catalogue as the Markdown table docs/benchmark.md embeds."""
    from benchmark.synth.catalogue import catalogue_markdown

    return catalogue_markdown([FOREIGN_REGISTRY[n].spec for n in foreign_names()])


_SUITE = DocumentedSuite(FOREIGN_REGISTRY, FOREIGN_TITLES, FOREIGN_AUTHORS_ROOT, source_versions)


def build_dataset(out: Path, name: str) -> BuiltRealDataset:
    """Write one foreign dataset under ``out/<name>`` (every sample must decode: none is meant to fail).

    Raises:
        RuntimeError: A sample ``medio`` cannot read (a reader gap, never hidden).
    """
    return build_documented_dataset(out, name, _SUITE)


def build_foreign(
    out: str | Path, *, only: list[str] | None = None, oracle: str | None = None
) -> list[BuiltRealDataset]:
    """Write the foreign suite under ``out`` (one folder per dataset).

    Args:
        out: Benchmark root (created if needed).
        only: Restrict to these dataset names.
        oracle: Also write the perfect prediction as run ``VLM/<oracle>/``.

    Returns:
        The built datasets in catalogue order.

    Raises:
        KeyError: An unknown dataset name.
        RuntimeError: A sample that does not decode, or a package lacks a file.
    """
    return build_documented_suite(out, foreign_names(only), _SUITE, oracle)

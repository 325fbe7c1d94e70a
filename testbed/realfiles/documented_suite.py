"""Building a suite whose datasets are named by their documentation (the foreign and independent suites).

Both suites write each dataset the same way: the registry entry builds its files, every sample's ground truth
is read back through ``medio``, the manifest points at an authors' root, the ground truth states the
documented title (`testbed.realfiles.documented_truth`) and ``VLM/provenance.json`` records which package
files the pixels came from. What differs is given: the registry, the titles, the authors' root, the package
versions and how one sample's ground truth is measured.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import medio
from testbed.realfiles.documented_truth import write_documented_truth
from testbed.realfiles.spec import RealContext
from testbed.realfiles.suite import BuiltRealDataset, geometry_sample
from testbed.synth.spec import DatasetSpec, SynthSample, select_names
from testbed.synth.write_files import write_text

__all__ = ["DocumentedSuite", "rename_oracle"]


class DocumentedSuite:
    """One documented suite: what it supplies, and the suite's commands (names, catalogue, build).

    Args:
        kind: What a dataset of it is called in an error (``"foreign dataset"``).
        registry: Dataset name -> entry with ``spec`` and ``build(RealContext) -> samples``.
        titles: Dataset name -> the title its documentation gives.
        authors_root: The root the manifests pretend the data came from.
        source_versions: The versions of the packages the pixels come from (for ``provenance.json``).
        geometry: One sample's ground truth (default: `testbed.realfiles.suite.geometry_sample`).
    """

    def __init__(
        self,
        kind: str,
        registry: Mapping[str, Any],
        titles: Mapping[str, str],
        authors_root: str,
        source_versions: Callable[[], Mapping[str, str]],
        geometry: Callable[[Path, DatasetSpec, Any], SynthSample] = geometry_sample,
    ) -> None:
        self.kind = kind
        self.registry = registry
        self.titles = titles
        self.authors_root = authors_root
        self.source_versions = source_versions
        self.geometry = geometry

    def names(self, only: list[str] | None = None) -> list[str]:
        """Registered dataset names in catalogue order, optionally restricted to ``only``.

        Raises:
            KeyError: An unknown name (the message lists the valid ones).
        """
        return select_names(list(self.registry), only, self.kind)

    def catalogue(self) -> str:
        """The catalogue as the Markdown table docs/benchmark.md embeds."""
        from testbed.synth.catalogue import catalogue_markdown

        return catalogue_markdown([self.registry[n].spec for n in self.names()])

    def build_dataset(self, out: Path, name: str) -> BuiltRealDataset:
        """Write one dataset under ``out/<name>`` (every sample must decode: none is meant to fail).

        Raises:
            RuntimeError: A sample ``medio`` cannot read (a reader gap, never hidden).
        """
        entry = self.registry[name]
        root = out / name
        if root.exists():
            shutil.rmtree(root)  # stale files would break byte-for-byte reproducibility
        start = time.perf_counter()
        samples = list(entry.build(RealContext(root=root)))
        truth: dict[int, SynthSample] = {}
        for i, s in enumerate(samples):
            try:
                truth[i] = self.geometry(root, entry.spec, s)
            except medio.MedioError as exc:
                what = f"{name}: medio cannot read sample {i} ({s.manifest_path})"
                raise RuntimeError(f"{what}: {exc}") from exc
        write_text(
            root / "VLM" / "random.txt",
            "".join(f"{i} {self.authors_root}/{name}/{s.manifest_path}\n" for i, s in enumerate(samples)),
        )
        write_documented_truth(root, entry.spec, truth, self.titles[name])
        write_text(
            root / "VLM" / "provenance.json",
            json.dumps(
                {"packages": self.source_versions(), "files": {s.manifest_path: s.origin for s in samples}},
                indent=2,
                sort_keys=True,
            ),
        )
        return BuiltRealDataset(entry.spec, root, samples, truth, {}, time.perf_counter() - start)

    def build(
        self, out: str | Path, *, only: list[str] | None = None, oracle: str | None = None
    ) -> list[BuiltRealDataset]:
        """Write the suite under ``out`` (one folder per dataset).

        Args:
            out: Benchmark root (created if needed).
            only: Restrict to these dataset names.
            oracle: Also write the perfect prediction as run ``VLM/<oracle>/``, named with the documented
                title, as a perfect answer is.

        Returns:
            The built datasets in catalogue order.

        Raises:
            KeyError: An unknown dataset name.
            RuntimeError: A sample that does not decode, or a package lacks a file.
        """
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        built = []
        for name in self.names(only):
            ds = self.build_dataset(out, name)
            if oracle:
                from testbed.synth.oracle import write_oracle

                write_oracle(ds.root, ds.spec, ds.truth, oracle)
                rename_oracle(ds.root / "VLM" / oracle, self.titles[name])
            built.append(ds)
        return built


def rename_oracle(run: Path, title: str) -> None:
    """The oracle writes the folder id as the name; a perfect answer uses the documented one."""
    out = run / "agent1_data_organization"
    meta = out / "data_meta.json"
    doc = json.loads(meta.read_text(encoding="utf-8"))
    doc["dataset_name"] = title
    meta.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    for path in sorted((out / "standardized_annotations").glob("*.json")):
        ann = json.loads(path.read_text(encoding="utf-8"))
        ann["record"]["dataset_name"] = title
        path.write_text(json.dumps(ann, indent=2, ensure_ascii=False), encoding="utf-8")

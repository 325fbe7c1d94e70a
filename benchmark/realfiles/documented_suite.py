"""Building a suite whose datasets are named by their documentation (the foreign and independent suites).

Both suites write each dataset the same way: the registry entry builds its files, every sample's ground truth
is read back through ``medio``, the manifest points at an authors' root, the ground truth states the
documented title (`benchmark.realfiles.documented_truth`) and ``VLM/provenance.json`` records which package
files the pixels came from. What differs is given: the registry, the titles, the authors' root, the package
versions and how one sample's ground truth is measured.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import medio
from benchmark.realfiles.documented_truth import write_documented_truth
from benchmark.realfiles.spec import RealContext
from benchmark.realfiles.suite import BuiltRealDataset, geometry_sample
from benchmark.synth.spec import DatasetSpec, SynthSample
from benchmark.synth.write_files import write_text

__all__ = ["DocumentedSuite", "build_documented_dataset", "build_documented_suite", "rename_oracle"]


class DocumentedSuite:
    """What one documented suite supplies.

    Args:
        registry: Dataset name -> entry with ``spec`` and ``build(RealContext) -> samples``.
        titles: Dataset name -> the title its documentation gives.
        authors_root: The root the manifests pretend the data came from.
        source_versions: The versions of the packages the pixels come from (for ``provenance.json``).
        geometry: One sample's ground truth (default: `benchmark.realfiles.suite.geometry_sample`).
    """

    def __init__(
        self,
        registry: Mapping[str, Any],
        titles: Mapping[str, str],
        authors_root: str,
        source_versions: Callable[[], Mapping[str, str]],
        geometry: Callable[[Path, DatasetSpec, Any], SynthSample] = geometry_sample,
    ) -> None:
        self.registry = registry
        self.titles = titles
        self.authors_root = authors_root
        self.source_versions = source_versions
        self.geometry = geometry


def build_documented_dataset(out: Path, name: str, suite: DocumentedSuite) -> BuiltRealDataset:
    """Write one dataset of ``suite`` under ``out/<name>`` (every sample must decode: none is meant to fail).

    Raises:
        RuntimeError: A sample ``medio`` cannot read (a reader gap, never hidden).
    """
    entry = suite.registry[name]
    root = out / name
    if root.exists():
        shutil.rmtree(root)  # stale files would break byte-for-byte reproducibility
    start = time.perf_counter()
    samples = list(entry.build(RealContext(root=root)))
    truth: dict[int, SynthSample] = {}
    for i, s in enumerate(samples):
        try:
            truth[i] = suite.geometry(root, entry.spec, s)
        except medio.MedioError as exc:
            raise RuntimeError(f"{name}: medio cannot read sample {i} ({s.manifest_path}): {exc}") from exc
    write_text(
        root / "VLM" / "random.txt",
        "".join(f"{i} {suite.authors_root}/{name}/{s.manifest_path}\n" for i, s in enumerate(samples)),
    )
    write_documented_truth(root, entry.spec, truth, suite.titles[name])
    write_text(
        root / "VLM" / "provenance.json",
        json.dumps(
            {"packages": suite.source_versions(), "files": {s.manifest_path: s.origin for s in samples}},
            indent=2,
            sort_keys=True,
        ),
    )
    return BuiltRealDataset(entry.spec, root, samples, truth, {}, time.perf_counter() - start)


def build_documented_suite(
    out: str | Path, names: Iterable[str], suite: DocumentedSuite, oracle: str | None = None
) -> list[BuiltRealDataset]:
    """Write the datasets ``names`` of ``suite`` under ``out``, with the perfect prediction as run
    ``VLM/<oracle>/`` when ``oracle`` is set (named with the documented title, as a perfect answer is)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    built = []
    for name in names:
        ds = build_documented_dataset(out, name, suite)
        if oracle:
            from benchmark.synth.oracle import write_oracle

            write_oracle(ds.root, ds.spec, ds.truth, oracle)
            rename_oracle(ds.root / "VLM" / oracle, suite.titles[name])
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

"""Write the foreign suite: other packages' sample pixels in community layouts, with ground truth via medio.

It reuses the realfiles machinery (``RealContext``/``RealSample``, geometry read back through ``medio``) with
two differences: its own registry, and a ground-truth ``dataset_name`` that is the name the dataset's
documentation gives (README title, nnU-Net ``dataset.json``, BIDS ``dataset_description.json``), or the
folder id when it gives none.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import medio
from benchmark.foreign.sets import FOREIGN_REGISTRY, FOREIGN_TITLES
from benchmark.foreign.sources import source_versions
from benchmark.realfiles.documented_truth import write_documented_truth
from benchmark.realfiles.spec import RealContext
from benchmark.realfiles.suite import BuiltRealDataset, geometry_sample
from benchmark.synth.spec import SynthSample, select_names
from benchmark.synth.write_files import write_text

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


def build_dataset(out: Path, name: str) -> BuiltRealDataset:
    """Write one foreign dataset under ``out/<name>`` (every sample must decode: none is meant to fail).

    Raises:
        RuntimeError: A sample ``medio`` cannot read (a reader gap, never hidden).
    """
    entry = FOREIGN_REGISTRY[name]
    root = out / name
    if root.exists():
        shutil.rmtree(root)  # stale files would break byte-for-byte reproducibility
    start = time.perf_counter()
    ctx = RealContext(root=root)
    samples = entry.build(ctx)
    truth: dict[int, SynthSample] = {}
    for i, s in enumerate(samples):
        try:
            truth[i] = geometry_sample(root, entry.spec, s)
        except medio.MedioError as exc:
            raise RuntimeError(f"{name}: medio cannot read sample {i} ({s.manifest_path}): {exc}") from exc
    write_text(
        root / "VLM" / "random.txt",
        "".join(f"{i} {FOREIGN_AUTHORS_ROOT}/{name}/{s.manifest_path}\n" for i, s in enumerate(samples)),
    )
    write_documented_truth(root, entry.spec, truth, FOREIGN_TITLES[name])
    origins = {s.manifest_path: s.origin for s in samples}
    write_text(
        root / "VLM" / "provenance.json",
        json.dumps({"packages": source_versions(), "files": origins}, indent=2, sort_keys=True),
    )
    return BuiltRealDataset(entry.spec, root, samples, truth, {}, time.perf_counter() - start)


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
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    built = []
    for name in foreign_names(only):
        ds = build_dataset(out, name)
        if oracle:
            from benchmark.synth.oracle import write_oracle

            write_oracle(ds.root, ds.spec, ds.truth, oracle)
            _rename_oracle(ds.root / "VLM" / oracle, FOREIGN_TITLES[name])
        built.append(ds)
    return built


def _rename_oracle(run: Path, title: str) -> None:
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

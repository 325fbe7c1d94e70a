"""A suite whose datasets are named by their documentation (the foreign and independent suites).

An annotator names such a dataset as its README, `dataset.json` or COCO `info` does, not by the folder id:
every place the ground truth and the oracle's answer state the dataset name gets that title. Otherwise the
suite is built as the realfiles suite is (`testbed.realfiles.suite.RealSuite`); ``VLM/provenance.json``
records which package file each sample's pixels came from, and no sample is meant to fail.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from testbed.realfiles.spec import RealContext, RealSample
from testbed.realfiles.suite import BuiltRealDataset, RealSuite, write_truth
from testbed.synth.spec import DatasetSpec, SynthSample

__all__ = ["DocumentedSuite", "rename_oracle", "rename_truth"]


@dataclass(eq=False)
class DocumentedSuite(RealSuite):
    """A `RealSuite` whose datasets go by their documented titles.

    Args:
        titles: Dataset name -> the title its documentation gives (the other arguments are `RealSuite`'s).
    """

    titles: Mapping[str, str] = field(default_factory=dict)
    expects_failures: ClassVar[bool] = False

    def truth_document(
        self, root: Path, spec: DatasetSpec, truth: dict[int, SynthSample], failures: dict[int, str]
    ) -> dict[str, Any]:
        """The ground truth, named with the documented title (no ``expected_failures``)."""
        return rename_truth(write_truth(root, spec, truth), self.titles[spec.name])

    def provenance(self, ctx: RealContext, samples: list[RealSample]) -> dict[str, str]:
        """Each sample's manifest path and the package file its pixels came from."""
        return {s.manifest_path: s.origin for s in samples}

    def write_oracle(self, ds: BuiltRealDataset, oracle: str) -> None:
        """The perfect prediction, named with the documented title, as a perfect answer is."""
        super().write_oracle(ds, oracle)
        rename_oracle(ds.root / "VLM" / oracle, self.titles[ds.spec.name])


def rename_truth(doc: dict[str, Any], title: str) -> dict[str, Any]:
    """Put ``title`` everywhere a ground-truth document states the dataset name; returns ``doc``."""
    doc["dataset_name"] = title
    doc["content"]["expected_dataset_name"] = title
    doc["content"]["global_expected_blocks"]["record"]["dataset_name"] = title
    for sample in doc["samples"].values():
        sample["expected_record"]["dataset_name"] = title
    return doc


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

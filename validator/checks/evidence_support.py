"""Evidence the official scorer cannot see: does the raw data support the annotation a candidate declares?

- ``task_support``: a declared task whose annotation nothing in the raw data backs (an empty box list with no
  box file, a mask with no annotation file behind it, a class name that appears nowhere in the raw files)
  scores below an honest candidate that says the label is unknown;
- ``mask_names_other_image``: the mask a segmentation sample names pairs, by the community's naming rule
  (`medio.dataset_docs.pair_key`), with another manifest image rather than this one.

Each check is a small function over a `SampleView` plus dataset facts (`validator.dataset_facts`), so it
can move to another registry unchanged.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from benchmark.fields import TASK_TYPE
from benchmark.normalize import norm_token
from medio.dataset_docs import pair_key
from medio.sniff import split_suffix
from validator.checks.mdsbench import EXTRA_PAYLOAD_KEYS, PAYLOAD_KEYS, active_task
from validator.dataset_facts import DatasetFacts, dataset_facts, words
from validator.registry import check
from validator.report import CheckResult
from validator.sample import SampleView
from validator.values import nonmissing

__all__ = ["mask_names_other_image", "task_support"]

TASK = TASK_TYPE
_UNKNOWN = frozenset({"", "na", "n a", "unknown", "none", "null", "unlabeled", "unlabelled"})


def _facts(sample: SampleView) -> DatasetFacts | None:
    return dataset_facts(sample.dataset_root) if sample.dataset_root is not None else None


def _paths_in(value: Any) -> list[str]:
    """Strings that look like dataset paths anywhere inside a payload (``mask_path``, ``path`` ...)."""
    out: list[str] = []
    if isinstance(value, dict):
        for v in value.values():
            out += _paths_in(v)
    elif isinstance(value, list):
        for v in value[:50]:
            out += _paths_in(v)
    elif isinstance(value, str) and "/" in value and len(value) < 500:
        out.append(value)
    return out


def _exists(facts: DatasetFacts, ref: Any) -> bool:
    """A declared file reference resolves to a file of ``data/`` (``data/x``, ``x`` below data, or a tail)."""
    if not isinstance(ref, str) or not ref.strip():
        return False
    ref = ref.strip().replace("\\", "/").lstrip("./")
    if "/data/" in ref:
        ref = "data/" + ref.split("/data/", 1)[1]
    candidates = {ref, f"data/{ref}"}
    files = set(facts.files)
    return bool(candidates & files) or any(f.endswith("/" + ref) for f in facts.files if "/" in ref)


def _annotation_refs(sample: SampleView, task: str) -> list[str]:
    refs = [sample.extra.get(k) for k in EXTRA_PAYLOAD_KEYS.get(task, ())]
    branch = sample.block(f"tasks.{task}")
    for key in PAYLOAD_KEYS.get(task, ()):
        refs += _paths_in(branch.get(key))
    return [r for r in refs if isinstance(r, str)]


def _boxes(branch: dict[str, Any]) -> int:
    n = 0
    for key in PAYLOAD_KEYS["detection"]:
        value = branch.get(key)
        if isinstance(value, list):
            n += len(value)
        elif isinstance(value, dict):
            n += sum(len(v) for v in value.values() if isinstance(v, list))
    return n


def _stem(rel: str) -> str:
    return split_suffix(PurePosixPath(rel).name)[0]


def _paired_label_map(sample: SampleView, facts: DatasetFacts) -> str | None:
    """An annotation file (not a table) whose name pairs exactly with the sample's manifest file."""
    if sample.entry is None:
        return None
    own = pair_key(_stem(sample.entry.relpath))
    hits = [r for r in facts.annotation_files() if r != sample.entry.relpath and pair_key(_stem(r)) == own]
    # Several hits mean a generic name (IM0001 in every folder): no pairing evidence.
    return hits[0] if own and len(hits) == 1 else None


def _label_supported(facts: DatasetFacts, name: str) -> bool:
    token = words(name)
    return bool(token) and f" {token} " in facts.corpus


@check("task_support", weight=0.10, fields=(TASK, "tasks"), high_risk=True)
def task_support(sample: SampleView) -> CheckResult:
    """The declared task's annotation has support in the raw data (a box file, an annotation file, a label
    source); an honest "unknown" label always has."""
    fields = (TASK, "tasks")
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    facts = _facts(sample)
    if facts is None:
        return CheckResult.ok(fields, skipped="no dataset folder")
    task = active_task(sample)
    branch = sample.block(f"tasks.{task}") if task else {}
    refs = _annotation_refs(sample, task)
    backed = any(_exists(facts, r) for r in refs)
    if task == "detection":
        if backed:
            return CheckResult.ok(fields)
        if _boxes(branch) == 0:
            return CheckResult.fail(
                "task_type is detection but the box list is empty and no box file backs it "
                "(extra.bbox_file names nothing in data/); a dataset without boxes is not detection: "
                "standardize the sample as classification (an unknown label is honest)",
                fields,
            )
        return CheckResult.ok(fields)
    if task == "segmentation":
        if backed or nonmissing(sample.extra.get("source_key")) or facts.annotation_files():
            return CheckResult.ok(fields)
        return CheckResult.fail(
            "task_type is segmentation but no annotation file backs the mask (no mask_file/label_file in "
            "data/, no label member in the source, no annotation-like file in the dataset); a mask nobody "
            "drew is invented: use the task the raw data supports",
            fields,
        )
    if task == "classification":
        paired = _paired_label_map(sample, facts)
        if paired is not None:
            return CheckResult.fail(
                f"task_type is classification but {paired!r} is a label map that pairs with this image by "
                "name (the community's image/mask naming rule); label maps on the image's grid make the "
                "sample a segmentation target",
                (TASK,),
                score=0.6,
            )
        name = branch.get("label_name")
        if not isinstance(name, str) or norm_token(name) in _UNKNOWN:
            return CheckResult.ok(fields)
        if _label_supported(facts, name) or backed:
            return CheckResult.ok(fields)
        if facts.opaque:
            return CheckResult.ok(fields, skipped="containers may hold the label source")
        return CheckResult.fail(
            f"label_name {name!r} appears nowhere in the raw data (no file name, folder, table or README "
            "holds it); a label without a source is a guess: use the label source the data has, or an "
            "unknown label",
            ("tasks.classification.label_name", "tasks.classification.label"),
            score=0.2,
        )
    return CheckResult.ok(fields, skipped=f"task {task!r}")


@check("mask_names_other_image", weight=0.05, fields=("context.sample.extra.mask_file",), high_risk=True)
def mask_names_other_image(sample: SampleView) -> CheckResult:
    """The mask a segmentation sample names does not pair, by its stem, with another manifest image."""
    fields = ("context.sample.extra.mask_file", "context.sample.extra.label_file")
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    if active_task(sample) != "segmentation" or sample.entry is None:
        return CheckResult.ok(fields, skipped="not a segmentation sample of a manifest")
    own = pair_key(_stem(sample.entry.relpath))
    others = {
        pair_key(_stem(p.entry.relpath)): p.entry.relpath
        for p in (sample.peers or [])
        if p.entry is not None and p.entry.relpath != sample.entry.relpath
    }
    others.pop(own, None)
    for field in ("mask_file", "label_file"):
        ref = sample.extra.get(field)
        if not isinstance(ref, str) or not ref.strip():
            continue
        key = pair_key(_stem(ref))
        if key in others:
            facts = _facts(sample)
            right = [f for f in (facts.annotation_files() if facts else []) if pair_key(_stem(f)) == own]
            hint = f"; this image's own mask is {right[0]!r}" if right else ""
            return CheckResult.fail(
                f"extra.{field} {ref!r} is named after another manifest image ({others[key]!r}), not after "
                f"this sample's {sample.entry.relpath!r}{hint}",
                (f"context.sample.extra.{field}", "tasks.segmentation"),
                flagged=[field],
            )
    return CheckResult.ok(fields)

"""Metadata against what the dataset's documentation and headers state (the official scorer cannot see it):

- ``dataset_name_documented`` / ``meta_dataset_name_documented``: the dataset name is not the folder id when
  a README title, an nnU-Net ``dataset.json`` or a BIDS ``dataset_description.json`` names the dataset;
- ``subject_matches_header``: the subject id does not contradict the source header's PatientID or the BIDS
  participant entity of the file name;
- ``modality_states_header``: the modality is the header's own code when the header has a DICOM Modality the
  benchmark has no other name for (``RTIMAGE``, ``OT``); mapped codes are ``modality_matches_source``'s.

Small functions over a `SampleView`/`MetaView` plus `validator.dataset_facts`, so they move easily.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from benchmark.fields import MODALITY_PRIMARY, SUBJECT_ID
from benchmark.normalize import norm_text, norm_token
from medio.dataset_docs import bids_entities
from validator.checks.evidence_payload import _DICOM_MODALITY
from validator.checks.evidence_source import declared_source
from validator.dataset_facts import dataset_facts, header_of
from validator.registry import check
from validator.report import CheckResult
from validator.sample import MetaView, SampleView

__all__ = [
    "dataset_name_documented",
    "meta_dataset_name_documented",
    "modality_states_header",
    "subject_matches_header",
]

NAME = "record.dataset_name"
META_NAME = "data_meta.dataset_name"
SUBJECT = "context.sample.extra.subject_id"
MODALITY = MODALITY_PRIMARY
# PatientIDs that anonymisation leaves behind say nothing about the subject.
_PLACEHOLDER_IDS = frozenset({"", "anonymous", "anon", "unknown", "na", "none", "0", "patient"})


def _name_result(declared: object, root: object, field: str) -> CheckResult:
    if root is None:
        return CheckResult.ok((field,), skipped="no dataset folder")
    facts = dataset_facts(root)  # type: ignore[arg-type]
    title = facts.docs.title
    if not title or not isinstance(declared, str):
        return CheckResult.ok((field,), skipped="the documentation names no dataset")
    if norm_text(declared) == norm_text(title):
        return CheckResult.ok((field,))
    folder_ids = {norm_text(facts.root.name)} | {
        norm_text(p) for f in facts.files[:2000] for p in f.split("/")[1:-1]
    }
    if norm_text(declared) in folder_ids:
        return CheckResult.fail(
            f"{field} {declared!r} is a folder id, but {facts.docs.title_source} names the dataset "
            f"{title!r}; use the documented name",
            (field,),
        )
    return CheckResult.ok((field,))


@check("dataset_name_documented", weight=0.04, fields=(NAME,))
def dataset_name_documented(sample: SampleView) -> CheckResult:
    """record.dataset_name is the documented name, not a folder id, when a document names the dataset."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, (NAME,))
    return _name_result(sample.get(NAME), sample.dataset_root, NAME)


@check("meta_dataset_name_documented", weight=1.0, fields=(META_NAME,), scope="meta")
def meta_dataset_name_documented(view: MetaView) -> CheckResult:
    """data_meta.dataset_name is the documented name, not a folder id, when the documentation names one."""
    if view.meta is None:
        return CheckResult.fail(view.error or "no data_meta.json", (META_NAME,))
    root = next((s.dataset_root for s in view.samples.values() if s.dataset_root is not None), None)
    return _name_result(view.meta.get("dataset_name"), root, META_NAME)


def _same_id(a: str, b: str) -> bool:
    x, y = norm_token(a), norm_token(b)
    return bool(x) and (x == y or x.replace(" ", "") == y.replace(" ", ""))


@check("subject_matches_header", weight=0.04, fields=(SUBJECT, SUBJECT_ID))
def subject_matches_header(sample: SampleView) -> CheckResult:
    """subject_id does not contradict the source header's PatientID or the file's BIDS participant."""
    fields = (SUBJECT, SUBJECT_ID)
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    declared = sample.extra.get("subject_id") or sample.get(SUBJECT_ID)
    if not isinstance(declared, str) or not declared.strip():
        return CheckResult.ok(fields, skipped="no subject id")
    path, _ = declared_source(sample)
    listed = sample.entry.relpath if sample.entry is not None else None
    entity = bids_entities(PurePosixPath(listed).name).get("sub") if listed else None
    if entity and not (_same_id(declared, f"sub-{entity}") or _same_id(declared, entity)):
        return CheckResult.fail(
            f"subject_id {declared!r} contradicts the file's BIDS participant 'sub-{entity}'",
            fields,
            score=0.3,
        )
    patient = str((header_of(path) if path is not None else {}).get("PatientID") or "").strip()
    if norm_text(patient) in _PLACEHOLDER_IDS:
        return CheckResult.ok(fields)
    if _same_id(declared, patient):
        return CheckResult.ok(fields)
    return CheckResult.fail(
        f"subject_id {declared!r} contradicts the source header's PatientID {patient!r}; use the PatientID",
        fields,
        score=0.3,
    )


@check("modality_states_header", weight=0.03, fields=(MODALITY,))
def modality_states_header(sample: SampleView) -> CheckResult:
    """modality_primary is the header's own DICOM Modality code when the benchmark has no name for it."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, (MODALITY,))
    path, _ = declared_source(sample)
    code = str((header_of(path) if path is not None else {}).get("Modality") or "").strip().upper()
    if not code or code in _DICOM_MODALITY:
        return CheckResult.ok((MODALITY,), skipped="no unmapped header modality")
    declared = sample.get(MODALITY)
    if isinstance(declared, str) and norm_token(declared).replace(" ", "") == norm_token(code).replace(
        " ", ""
    ):
        return CheckResult.ok((MODALITY,))
    return CheckResult.fail(
        f"{MODALITY} is {declared!r} but the source header says Modality {code}", (MODALITY,)
    )

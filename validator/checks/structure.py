"""Structural checks of the annotation: a JSON object, valid against our schema, one active branch each,
and the demographic fields the benchmark requires as strings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from benchmark.fields import DIMENSION, TASK_TYPE
from validator.registry import check
from validator.report import CheckResult
from validator.sample import SampleView
from validator.schema import TASK_BRANCHES, Annotation
from validator.values import SPATIAL_BRANCH_BY_DIM, effectively_empty, norm_dim, norm_text

DEMOGRAPHICS = ("sex", "race_ethnicity", "site_id")


@check("valid_json_object", weight=0.05, fields=("",), high_risk=True)
def valid_json_object(sample: SampleView) -> CheckResult:
    """standardized_annotations/<i>.json exists and holds a JSON object."""
    if sample.annotation is None:
        return CheckResult.fail(
            f"{sample.annotation_error}; write a JSON object with record, context, "
            "media_geometry, tasks and provenance"
        )
    return CheckResult.ok()


@check("schema_valid", weight=0.05, fields=("",))
def schema_valid(sample: SampleView) -> CheckResult:
    """The annotation validates against our schema (docs/schema.md)."""
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error)
    try:
        Annotation.model_validate(sample.annotation)
    except ValidationError as exc:
        errors = distinct_errors(exc.errors())
        paths = tuple(
            dict.fromkeys(".".join(str(p) for p in e["loc"] if not str(p)[:1].isupper()) for e in errors)
        )
        shown = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors[:4])
        more = f" (+{len(errors) - 4} more)" if len(errors) > 4 else ""
        # Half credit per error up to a floor: one wrong type is not as bad as a missing block.
        return CheckResult(max(0.0, 1 - 0.25 * len(errors)), f"schema errors: {shown}{more}", paths)
    return CheckResult.ok()


_SCALAR_TAGS = frozenset({"int", "float", "str", "bool", "none"})


def _member_tag(part: Any) -> bool:
    """A union member's tag in an error location (``Classification``, ``int``, ``list[int]``), not a key."""
    return isinstance(part, str) and (part[:1].isupper() or "[" in part or part in _SCALAR_TAGS)


def distinct_errors(errors: Sequence[Any]) -> list[Any]:
    """One pydantic error per wrong field: pydantic reports a value that fails a union once per member
    (``label.int``, ``label.list[int]``) and a filled task/spatial branch once more per key against the
    ``{}`` alternative, so a single string id would otherwise count as six errors.

    Args:
        errors: ``ValidationError.errors()``.

    Returns:
        The first error of each field (its location without union member tags and list positions),
        leaving out the ``Inactive`` alternative's errors where another member of the same union was tried.
    """
    tried = {
        tuple(e["loc"][:i])
        for e in errors
        for i, part in enumerate(e["loc"])
        if _member_tag(part) and part != "Inactive"
    }
    out: dict[tuple[Any, ...], Any] = {}
    for e in errors:
        loc = tuple(e["loc"])
        if "Inactive" in loc and loc[: loc.index("Inactive")] in tried:
            continue  # the branch is filled: that it is not {} is the active-branch checks' finding
        types = [j for j, part in enumerate(loc) if _member_tag(part) and not part[:1].isupper()]
        field = loc[: types[-1]] if types else loc  # label.int and label.list[int].1 are one field: label
        # list positions dropped too: ["0", "1", "2"] as label_values is one wrong field, not three
        out.setdefault(tuple(p for p in field if not _member_tag(p) and not isinstance(p, int)), e)
    return list(out.values())


@check("single_spatial_branch", weight=0.04, fields=("media_geometry.spatial",), high_risk=True)
def single_spatial_branch(sample: SampleView) -> CheckResult:
    """Exactly one spatial branch is filled, the one the dimension names, and no unknown branch key exists."""
    fields = ("media_geometry.spatial",)
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    sp = sample.block("media_geometry.spatial")
    unknown = [k for k in sp if k not in SPATIAL_BRANCH_BY_DIM.values()]
    active = [k for k in SPATIAL_BRANCH_BY_DIM.values() if not effectively_empty(sp.get(k))]
    expected = SPATIAL_BRANCH_BY_DIM.get(norm_dim(sample.get(DIMENSION)))
    problems = []
    if unknown:
        problems.append(
            f"unknown key(s) {', '.join(unknown)} in media_geometry.spatial (use common/three_d/video)"
        )
    if len(active) != 1:
        problems.append(f"exactly one spatial branch must be filled, found {active or 'none'}")
    elif expected is not None and active[0] != expected:
        problems.append(f"the dimension needs spatial.{expected}, but spatial.{active[0]} is filled")
    if problems:
        return CheckResult.fail("; ".join(problems), fields)
    return CheckResult.ok(fields)


@check("single_task_branch", weight=0.04, fields=("tasks",), high_risk=True)
def single_task_branch(sample: SampleView) -> CheckResult:
    """Exactly one task branch is filled and it is the one media.task_type names."""
    fields = ("tasks", TASK_TYPE)
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    tasks = sample.block("tasks")
    active = [t for t in TASK_BRANCHES if not effectively_empty(tasks.get(t))]
    declared = norm_text(sample.get(TASK_TYPE))
    if len(active) != 1:
        return CheckResult.fail(
            f"exactly one task branch must be filled, found {active or 'none'}; set the "
            "inactive ones to {}",
            fields,
        )
    if active[0] != declared:
        return CheckResult.fail(
            f"media.task_type is {declared!r} but tasks.{active[0]} is the filled branch", fields
        )
    return CheckResult.ok(fields)


@check(
    "demographics_strings",
    weight=0.03,
    fields=tuple(f"context.sample.{k}" for k in DEMOGRAPHICS),
    high_risk=True,
)
def demographics_strings(sample: SampleView) -> CheckResult:
    """sex, race_ethnicity and site_id are strings ("unknown"/"NA" when unknown, never null)."""
    fields = tuple(f"context.sample.{k}" for k in DEMOGRAPHICS)
    if sample.annotation is None:
        return CheckResult.fail(sample.annotation_error, fields)
    s = sample.block("context.sample")
    bad = [k for k in DEMOGRAPHICS if not isinstance(s.get(k), str)]
    if bad:
        return CheckResult(
            1 - len(bad) / len(DEMOGRAPHICS),
            f'context.sample.{{{", ".join(bad)}}} must be strings; use "unknown" or "NA", not null',
            tuple(f"context.sample.{k}" for k in bad),
        )
    return CheckResult.ok(fields)

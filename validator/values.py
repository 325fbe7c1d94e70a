"""Value normalisers for the checks: the benchmark's shared rules plus the validator's own small helpers.

Placeholders, text tokens, dimensions, modalities and source stems follow SPEC §3.1 and are written once, in
`benchmark.normalize` (the scorer and the suite generator use the same code); they are re-exported here under
the names the checks and strategies import, so the ``mdsbench`` profile sees values exactly as the reference
tools do and the ``evidence`` profile reuses them where the rule is sound. Only ground-truth-free code is
imported: the validator never reads `benchmark.groundtruth`.

The ``source_trace`` check compares stems with the reference *scorer's* rules (URL-unquote, medical-7
``radial_…`` and DynamicNuclearNet rules, ``p``/``k`` aliases); nothing shows the reference S3 validator using
a different rule, and the S3/S4 conformance vectors give the same selections and scores with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from benchmark.normalize import (
    ALLOWED_DIMS,
    ALLOWED_TASKS,
    SPATIAL_BRANCH_BY_DIM,
    clear_token_cache,
    expand_aliases,
    is_placeholder,
    nonmissing,
    norm_dim,
    norm_modality,
    norm_text,
    norm_token,
    normalize_source_stem,
)

__all__ = [
    "ALLOWED_DIMS",
    "ALLOWED_TASKS",
    "SPATIAL_BRANCH_BY_DIM",
    "clear_token_cache",
    "effectively_empty",
    "get_path",
    "is_placeholder",
    "nonmissing",
    "norm_dim",
    "norm_modality",
    "norm_text",
    "norm_token",
    "set_path",
    "source_aliases",
    "source_stem",
    "string_leaves",
]

source_stem = normalize_source_stem
"""The benchmark's normalised source stem of a path or id (SPEC §3.1), or None when nothing is left."""


def source_aliases(value: Any) -> set[str]:
    """The source stem of ``value`` plus its BIDS-style ``p``/``k`` variants (``p23``, ``p023``, ``sub_p23``).

    Args:
        value: A path, file name or id.

    Returns:
        The aliases; empty when the value normalises to nothing.
    """
    return expand_aliases(normalize_source_stem(value))


def effectively_empty(value: Any) -> bool:
    """An inactive branch: missing, ``{}``, null, or holding only placeholders."""
    if value is None or value is False:
        return True
    if isinstance(value, dict):
        return all(effectively_empty(v) or is_placeholder(v, str(k)) for k, v in value.items())
    if isinstance(value, list):
        return all(effectively_empty(v) for v in value)
    return is_placeholder(value)


def get_path(doc: Any, dotted: str) -> Any:
    """The value at a dotted path (``media_geometry.media.task_type``) of nested dicts, or None."""
    node = doc
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def set_path(doc: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``doc["a"]["b"] = value`` for ``"a.b"``, creating (or replacing non-dict) parents."""
    parts = dotted.split(".")
    for part in parts[:-1]:
        if not isinstance(doc.get(part), dict):
            doc[part] = {}
        doc = doc[part]
    doc[parts[-1]] = value


def string_leaves(node: Any, prefix: str) -> Iterator[tuple[str, str]]:
    """Every string leaf under a node with its dotted path, in document order (lists indexed ``[k]``)."""
    if isinstance(node, str):
        yield prefix, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from string_leaves(value, f"{prefix}.{key}")
    elif isinstance(node, list):
        for k, value in enumerate(node):
            yield from string_leaves(value, f"{prefix}[{k}]")

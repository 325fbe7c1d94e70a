"""Which JSON fields differ across candidates; the selected JSON as HTML with those fields highlighted."""

from __future__ import annotations

import functools
import html
import json
from collections.abc import Sequence
from typing import Any

__all__ = ["differing_paths", "flatten", "json_html"]

_MAX_CHARS = 20_000  # a runaway 100 kB annotation must not bloat the page; the file itself is linked
# What ``json.dumps(value, ensure_ascii=False, default=str)`` writes, without building an encoder per leaf.
_LEAF = json.JSONEncoder(ensure_ascii=False, default=str).encode


def flatten(doc: Any, prefix: str = "") -> dict[str, Any]:
    """Map every leaf of a JSON value to its dotted path (list items as ``[i]``).

    Empty objects and lists are leaves, so ``{"common": {}}`` and ``{"common": {"x": 1}}`` differ.
    """
    out: dict[str, Any] = {}
    _flatten_into(doc, prefix, out)
    return out


def _flatten_into(doc: Any, prefix: str, out: dict[str, Any]) -> None:
    # One dict for the whole document: a dict per level, merged upwards, costs a copy of every leaf per level.
    if isinstance(doc, dict) and doc:
        for key, value in doc.items():
            _flatten_into(value, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(doc, list) and doc:
        for i, value in enumerate(doc):
            _flatten_into(value, f"{prefix}[{i}]", out)
    else:
        out[prefix] = doc


_PLAIN = (str, int, type(None))
"""Leaf types whose equality (same type) is equality of their JSON text (not bool/int, not -0.0/0.0, NaN)."""


def differing_paths(docs: Sequence[Any]) -> set[str]:
    """Leaf paths whose value is not the same in every document (missing counts as a value).

    Args:
        docs: The candidates' annotations (None for a candidate that wrote none).

    Returns:
        The dotted paths that vary; empty with fewer than two documents.
    """
    if len(docs) < 2:
        return set()
    # Documents with the same canonical text have the same leaves: only the distinct ones are flattened,
    # and candidates that all wrote the same annotation (the common case) differ nowhere.
    distinct: dict[str | None, Any] = {}
    for doc in docs:
        distinct.setdefault(None if doc is None else json.dumps(doc, sort_keys=True, default=str), doc)
    if len(distinct) < 2:
        return set()
    flats = [flatten(d) if d is not None else {} for d in distinct.values()]
    keys = set().union(*flats)
    missing = object()
    out = set()
    for k in keys:
        values = [f.get(k, missing) for f in flats]
        first = values[0]
        kind = type(first)
        if kind in _PLAIN and all(type(v) is kind and v == first for v in values):
            continue  # the common case, told apart without writing each value as JSON
        if len({json.dumps(v, sort_keys=True, default=str) for v in values}) > 1:
            out.add(k)
    return out


def _covers(path: str, diff: set[str]) -> bool:
    return path in diff or any(d.startswith(path + ".") or d.startswith(path + "[") for d in diff)


@functools.lru_cache(maxsize=4096)
def _key_html(key: str) -> str:
    # The same few dozen keys recur in every annotation of a page: written once each.
    return f'<span class="k">{html.escape(json.dumps(key))}</span>'


def _render(value: Any, path: str, diff: set[str], indent: int, out: list[str]) -> None:
    pad = "  " * indent
    if isinstance(value, dict) and value:
        out.append("{\n")
        items = list(value.items())
        for n, (key, child) in enumerate(items):
            child_path = f"{path}.{key}" if path else str(key)
            out.append(f"{pad}  {_key_html(str(key))}: ")
            _render(child, child_path, diff, indent + 1, out)
            out.append(",\n" if n < len(items) - 1 else "\n")
        out.append(pad + "}")
    elif isinstance(value, list) and value and any(isinstance(v, (dict, list)) for v in value):
        out.append("[\n")
        for n, child in enumerate(value):
            out.append(pad + "  ")
            _render(child, f"{path}[{n}]", diff, indent + 1, out)
            out.append(",\n" if n < len(value) - 1 else "\n")
        out.append(pad + "]")
    else:
        text = html.escape(_LEAF(value))
        if _covers(path, diff):
            out.append(
                f'<mark class="diff" title="differs across candidates: {html.escape(path)}">{text}</mark>'
            )
        else:
            out.append(text)


def json_html(doc: Any, diff: set[str]) -> str:
    """The document pretty-printed as escaped HTML, leaves in ``diff`` wrapped in ``<mark class="diff">``.

    Args:
        doc: The JSON value (None renders as a note).
        diff: Paths from `differing_paths`.

    Returns:
        HTML for a ``<pre>`` element, cut at about 20 000 characters.
    """
    if doc is None:
        return '<span class="muted">(no annotation written)</span>'
    parts: list[str] = []
    _render(doc, "", diff, 0, parts)
    text = "".join(parts)
    if len(text) > _MAX_CHARS:
        cut = text.rfind("\n", 0, _MAX_CHARS)
        text = text[: cut if cut > 0 else _MAX_CHARS] + '\n<span class="muted">… (truncated)</span>'
    return text

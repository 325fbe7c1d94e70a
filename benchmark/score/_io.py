"""JSON in and out for the scorer (private helpers): reading without letting bad input escape as exceptions,
and writing eval results fast."""

from __future__ import annotations

import json
from dataclasses import dataclass
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class JsonRead:
    """A JSON file read attempt: ``ok`` is False when the file is absent, unreadable or not JSON."""

    present: bool
    ok: bool
    value: Any = None
    reason: str | None = None


def read_json(path: Path, parsed: dict[str, Any] | None = None) -> JsonRead:
    """Read and parse one JSON file, never raising.

    Args:
        path: The file.
        parsed: A memo of text → parsed value shared by the callers that may read the same text again (the
            models of one dataset often hold identical annotation files); the same object is returned for the
            same text, so callers must not modify it.

    Returns:
        What was found.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return JsonRead(False, False, None, f"{path.name} missing")
    except (OSError, UnicodeDecodeError) as exc:
        return JsonRead(True, False, None, f"cannot read {path.name}: {exc}")
    if parsed is not None and text in parsed:
        return JsonRead(True, True, parsed[text])
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return JsonRead(True, False, None, f"{path.name} is not valid JSON: {exc.msg} (line {exc.lineno})")
    if parsed is not None:
        parsed[text] = value
    return JsonRead(True, True, value)


class NotPlainJson(TypeError):
    """A value `dumps_indented` leaves to `json.dumps` (not a dict/list/str/int/float/bool/None tree)."""


_INF = float("inf")


class RawJson(str):
    """JSON text encoded for its place in a tree (`dumps_indented` with that ``depth``), written as is."""


def dumps_indented(obj: Any, depth: int = 0) -> str:
    """Exactly ``json.dumps(obj, indent=2, ensure_ascii=False)`` for a tree of plain JSON values, ~2x faster.

    With an indent, the standard library encodes in pure Python through nested generators; eval results
    (one record per sample and model) took ~25 ms per dataset that way, more than the CLI's table. This is
    the same output built by direct recursion: ``,`` and ``: `` separators, ``{}``/``[]`` when empty, floats
    by ``float.__repr__`` (``NaN``, ``Infinity``), strings by the standard library's own escaper.

    Args:
        obj: Dicts with string keys, lists, strings, ints, floats, bools and None (exact types), and
            `RawJson` (copied as is).
        depth: Nesting depth of ``obj`` in an enclosing tree: its text indented as it would be there, so it
            can be put in that tree's text as a `RawJson`.

    Returns:
        The JSON text.

    Raises:
        NotPlainJson: Some value or key is of another type (call `json.dumps` instead).
    """
    parts: list[str] = []
    _encode(obj, parts, "\n" + "  " * depth)
    return "".join(parts)


def _encode(obj: Any, parts: list[str], newline: str) -> None:
    kind = type(obj)
    if kind is str:
        parts.append(encode_basestring(obj))
    elif obj is None:
        parts.append("null")
    elif obj is True:
        parts.append("true")
    elif obj is False:
        parts.append("false")
    elif kind is float:
        if obj != obj:
            parts.append("NaN")
        elif obj in (_INF, -_INF):
            parts.append("Infinity" if obj > 0 else "-Infinity")
        else:
            parts.append(float.__repr__(obj))
    elif kind is int:
        parts.append(int.__repr__(obj))
    elif kind is dict or kind is list:
        if not obj:
            parts.append("{}" if kind is dict else "[]")
            return
        inner = newline + "  "
        sep = ("{" if kind is dict else "[") + inner
        if kind is dict:
            for key, value in obj.items():
                if type(key) is not str:
                    raise NotPlainJson(f"dict key of type {type(key).__name__}")
                parts.append(sep)
                parts.append(encode_basestring(key))
                parts.append(": ")
                _encode(value, parts, inner)
                sep = "," + inner
        else:
            for value in obj:
                parts.append(sep)
                _encode(value, parts, inner)
                sep = "," + inner
        parts.append(newline + ("}" if kind is dict else "]"))
    elif kind is RawJson:
        parts.append(obj)
    else:
        raise NotPlainJson(f"value of type {kind.__name__}")

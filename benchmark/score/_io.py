"""Reading JSON files without letting bad input escape as exceptions (private helpers)."""

from __future__ import annotations

import json
from dataclasses import dataclass
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

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


def read_json(path: Path) -> JsonRead:
    """Read and parse one JSON file, never raising.

    Args:
        path: The file.

    Returns:
        What was found.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return JsonRead(False, False, None, f"{path.name} missing")
    except (OSError, UnicodeDecodeError) as exc:
        return JsonRead(True, False, None, f"cannot read {path.name}: {exc}")
    try:
        return JsonRead(True, True, json.loads(text))
    except json.JSONDecodeError as exc:
        return JsonRead(True, False, None, f"{path.name} is not valid JSON: {exc.msg} (line {exc.lineno})")

"""Small option records built from a config mapping: unknown keys refused, numeric bounds positive.

Used by the option groups of an agent (``agent.script.*``, ``agent.code_limits.*``) so every group says the
same thing the same way when a key is misspelt or a bound is zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields, is_dataclass
from typing import Any, TypeVar

__all__ = ["positive_options"]

T = TypeVar("T")


def positive_options(cls: type[T], value: T | Mapping[str, Any] | None, *, unknown: str, bounds: str) -> T:
    """``cls`` (a dataclass) from ``value``: passed through when it is one, else built from the mapping.

    Args:
        cls: The options dataclass.
        value: An instance, a mapping of some of its fields, or None for the defaults.
        unknown: The error's start for misspelt keys (``"unknown code limit(s)"``).
        bounds: The error's start for bounds that are not positive (``"code limits"``).

    Returns:
        The options.

    Raises:
        ValueError: A key is not a field, or a numeric field (``bool`` excepted) is not > 0.
    """
    if isinstance(value, cls):
        return value
    assert is_dataclass(cls)
    data: dict[str, Any] = dict(value or {})  # type: ignore[arg-type]
    known = {f.name for f in fields(cls)}
    extra = sorted(set(data) - known)
    if extra:
        raise ValueError(f"{unknown} {extra}; valid: {sorted(known)}")
    made = cls(**data)
    bad = [
        k
        for k, v in asdict(made).items()
        if v is None or (isinstance(v, int | float) and not isinstance(v, bool) and v <= 0)
    ]
    if bad:
        raise ValueError(f"{bounds} must be > 0: {bad}")
    return made

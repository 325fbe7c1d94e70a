"""``MEDSTRAT_*`` settings that code deep inside a run reads, parsed in one place so that every command
refuses a bad value when it starts (`check_environment`: `core.cli_errors.cli_main` and ``python -m
experiments`` call it first) instead of failing, or scoring a sample as failed, somewhere in the middle."""

from __future__ import annotations

import os

from core.errors import InputError

__all__ = ["READ_CACHE_ENV", "check_environment", "read_cache_bytes"]

READ_CACHE_ENV = "MEDSTRAT_READ_CACHE_MB"
"""The bound of medio's decoded-image cache in MiB, per process (0 keeps nothing)."""


def read_cache_bytes(default: int) -> int:
    """The decoded-image cache's bound in bytes: ``MEDSTRAT_READ_CACHE_MB`` MiB when set, else ``default``.

    Args:
        default: The bound when the variable is unset or blank.

    Returns:
        Bytes, >= 0.

    Raises:
        InputError: The variable is not a whole number >= 0.
    """
    raw = os.environ.get(READ_CACHE_ENV, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise InputError(
            f"{READ_CACHE_ENV} must be a whole number of MiB >= 0 (0 keeps nothing), got {raw!r}"
        )
    return int(raw) * 2**20


def check_environment() -> None:
    """Refuse a bad value of any setting of this module (before a command does any work).

    Raises:
        InputError: The first bad setting, named with its value.
    """
    read_cache_bytes(0)

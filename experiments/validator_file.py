"""``validator=<file.yaml>`` on the command line: a profile file (e.g. the one ``python -m
experiments.validator_eval --fit`` writes) used like a built-in profile name.

Hydra selects a config group option by name from its search path, not by file. A file that lies in a folder
named ``validator/`` (as ``--fit`` writes it: ``<out>/validator/<name>_fitted.yaml``) is exactly such an
option of the search path entry ``<out>``, so the override becomes ``hydra.searchpath=[file://<out>]``
plus ``validator=<name>``; the profile's YAML then composes like ``conf/validator/*.yaml``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["ValidatorFileError", "rewrite_validator_file"]


class ValidatorFileError(ValueError):
    """``validator=<file>`` names a file that cannot be used as a profile (one line for the user)."""


def _as_file(value: str) -> Path | None:
    if not value.endswith((".yaml", ".yml")) and "/" not in value:
        return None  # a plain name: Hydra's own group option
    return Path(value).expanduser()


def rewrite_validator_file(overrides: Sequence[str]) -> list[str]:
    """``overrides`` with a ``validator=<file.yaml>`` turned into a search path entry and a group choice.

    Args:
        overrides: Hydra overrides as typed.

    Returns:
        The overrides Hydra can compose (unchanged when no ``validator=`` names a file).

    Raises:
        ValidatorFileError: The file does not exist, is not YAML, or its folder is not named ``validator``;
            or the command line already sets ``hydra.searchpath``.
    """
    out: list[str] = []
    extra: list[str] = []
    for item in overrides:
        key, sep, value = item.partition("=")
        path = _as_file(value) if sep and key.lstrip("+~") == "validator" else None
        if path is None:
            out.append(item)
            continue
        if not path.is_file() or path.suffix not in (".yaml", ".yml"):
            raise ValidatorFileError(f"validator={value}: no such profile file (a .yaml file)")
        if path.resolve().parent.name != "validator":
            raise ValidatorFileError(
                f"validator={value}: a profile file must lie in a folder named validator/ "
                "(as `medstrat validator-eval --fit` writes it)"
            )
        if any(o.partition("=")[0].lstrip("+~") == "hydra.searchpath" for o in overrides):
            raise ValidatorFileError("validator=<file> sets hydra.searchpath; do not set it as well")
        extra.append(f"hydra.searchpath=[file://{path.resolve().parent.parent}]")
        out.append(f"{key}={path.stem}")
    return [*extra, *out]

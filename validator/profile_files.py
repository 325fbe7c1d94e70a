"""Reading a validator profile file, with the other profiles it extends composed in.

A profile YAML may start with a Hydra-style ``defaults:`` list naming the profiles it builds on and
``_self_`` (where its own keys go; at the end when left out), exactly the list Hydra composes when the same
file is picked as ``validator=<name>``. So ``evidence_conventions.yaml`` is ``evidence`` plus its three
changes, and a check added to ``evidence.yaml`` reaches both, whichever loader reads them:

.. code-block:: yaml

    defaults:
      - evidence      # conf/validator/evidence.yaml (the file's own folder first)
      - _self_
    profile: evidence_conventions
    checks:
      plane_follows_rule: 0.05

Mappings merge key by key (a new key goes after the inherited ones; a key given again keeps its place and
takes the new value); any other value replaces the inherited one, as OmegaConf merges.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = ["SELF", "compose", "merge"]

SELF = "_self_"
"""The ``defaults`` entry that stands for the file's own keys."""


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` laid on ``base``: mappings merged recursively, anything else replaced.

    Args:
        base: The inherited keys.
        over: The keys laid on top.

    Returns:
        A new mapping in ``base``'s key order, ``over``'s new keys after.
    """
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        out[key] = merge(old, value) if isinstance(old, Mapping) and isinstance(value, Mapping) else value
    return out


def _load(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read profile: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a profile is a mapping with a string 'profile:' key")
    return data


def compose(path: Path, find: Callable[[str], Path], seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The profile in ``path`` with its ``defaults`` composed in (the ``defaults`` key itself removed).

    Args:
        path: The profile file.
        find: Turns a profile name into its file (used when the name is not beside ``path``).
        seen: The files being composed (a profile may not extend itself, even through another).

    Returns:
        The composed mapping.

    Raises:
        ValueError: An unreadable file, a malformed ``defaults`` list, an unknown or circular base.
    """
    resolved = path.resolve()
    if resolved in seen:
        chain = " -> ".join(p.stem for p in (*seen, resolved))
        raise ValueError(f"{path}: profiles extend each other in a circle ({chain})")
    data = _load(path)
    defaults = data.pop("defaults", None)
    if defaults is None:
        return data
    if not isinstance(defaults, list) or not all(isinstance(d, str) for d in defaults):
        raise ValueError(f"{path}: 'defaults' is a list of profile names and {SELF}, e.g. [evidence, {SELF}]")
    if SELF not in defaults:
        defaults = [*defaults, SELF]  # Hydra's rule: the file's own keys come last
    out: dict[str, Any] = {}
    for entry in defaults:
        if entry == SELF:
            out = merge(out, data)
            continue
        beside = path.parent / f"{entry}.yaml"
        base = beside if beside.is_file() else find(entry)
        out = merge(out, compose(base, find, (*seen, resolved)))
    return out

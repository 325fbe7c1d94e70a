"""Resolving a relative path below a folder whose own path is already real, looking only below it.

``os.path.realpath`` looks at every component from ``/`` (an ``lstat`` each, 10-12 for a run folder). When the
root is already real, only the components below it can be links: one ``lstat`` each, and the full resolution
only when one of them is a link. The validator (dataset paths of every candidate) and the LiteLLM agent's
sandbox (every path a tool is given) both resolve this way.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

__all__ = ["resolve_below"]


def resolve_below(root: str, parts: Sequence[str]) -> tuple[str, bool]:
    """``realpath(root/parts)``, ``root`` being real already and ``parts`` clean (no ``..``, ``.`` or ``""``).

    A component that does not exist ends the walk: nothing below it can be a link, and ``realpath`` keeps
    such a tail as it is.

    Args:
        root: A real path (``os.path.realpath`` of itself).
        parts: The components below it.

    Returns:
        The path, and whether a symlink was followed: if not, the path is lexically ``root/parts`` (so inside
        ``root``); if so, it is ``realpath``'s answer and the caller checks where it landed.

    Example:
        >>> resolve_below("/", ["no", "such", "file"])
        ('/no/such/file', False)
    """
    current = root
    for part in parts:
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except (
            OSError,
            ValueError,
        ):  # missing, not a folder, unreadable, a NUL byte: realpath stops there too
            break
        if stat.S_ISLNK(mode):
            return os.path.realpath(os.path.join(root, *parts)), True
    return os.path.join(root, *parts), False

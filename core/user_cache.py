"""The user's medstrat cache folder: one root for the bundled suites, the request cache, models and servers.

Every part of the project that keeps files for the user between runs (generated suites, ``requests.sqlite``,
assembled local models, the records of launched servers) puts them under this one folder, so one setting
(``MEDSTRAT_CACHE``) moves them all.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    """``$MEDSTRAT_CACHE``, else ``$XDG_CACHE_HOME/medstrat``, else ``~/.cache/medstrat``."""
    if os.environ.get("MEDSTRAT_CACHE"):
        return Path(os.environ["MEDSTRAT_CACHE"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "medstrat"

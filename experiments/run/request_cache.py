"""Where the LiteLLM agent's request cache lives: on by default, in the user's cache folder.

``agent.cache`` is ``auto`` (the default: ``$MEDSTRAT_REQUEST_CACHE`` when set, else
``<cache root>/requests.sqlite`` under `core.user_cache.cache_root`, i.e. ``$MEDSTRAT_CACHE``,
``$XDG_CACHE_HOME/medstrat`` or ``~/.cache/medstrat``), ``false`` (no cache), ``refresh`` (the ``auto``
file, every call bought again and its answer stored over the old one) or a file path. A request is answered
from the cache only when everything that shapes the answer is equal (model, endpoint, messages, tools,
sampling parameters with the seed, candidate index: `agents.model.cache.request_key`), so rerunning a run
with the same seed spends nothing and another seed buys new samples. ``MEDSTRAT_REQUEST_CACHE=off`` turns the
default off (the test suite does, so tests never share answers).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agents.model.cache import RequestCache
from core.user_cache import cache_root

__all__ = ["CACHE_ENV", "resolve_cache"]

CACHE_ENV = "MEDSTRAT_REQUEST_CACHE"
"""Environment override of ``agent.cache=auto``: a file path, or ``off``."""

_OFF = ("off", "false", "no", "0", "none", "null", "")


def resolve_cache(value: Any) -> str | RequestCache | None:
    """The cache file ``agent.cache`` names, or None for no cache.

    Args:
        value: ``auto``/True, ``false``/None/``off``, ``refresh``, or a path.

    Returns:
        The SQLite file's path; for ``refresh`` the ``auto`` file opened to re-buy and overwrite
        (`RequestCache` with ``refresh=True``; None when the default is turned off); or None.
    """
    if value is None or value is False or (isinstance(value, str) and value.strip().lower() in _OFF):
        return None
    if isinstance(value, str) and value.strip().lower() == "refresh":
        path = resolve_cache("auto")
        return None if path is None else RequestCache(Path(str(path)), refresh=True)
    if value is True or (isinstance(value, str) and value.strip().lower() == "auto"):
        env = os.environ.get(CACHE_ENV)
        if env is not None:
            return None if env.strip().lower() in _OFF else str(Path(env).expanduser())
        return str(cache_root() / "requests.sqlite")
    return str(Path(str(value)).expanduser())

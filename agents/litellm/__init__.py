"""The LiteLLM tool-calling agent (any LiteLLM model string) with sandboxed tools, cache, retries and budgets.

Importing this package does not import litellm; constructing `LiteLLMAgent` does. `LiteLLMAgent`
is loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents.litellm.agent import LiteLLMAgent

__all__ = [
    "LiteLLMAgent",
]

_HOMES = {
    "LiteLLMAgent": "agent",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # once loaded, an ordinary module attribute
    return value

"""Dollars per token for the forecast: LiteLLM's price map, else the role's ``price`` from the config.

The map is read from the file LiteLLM itself loads offline (``model_prices_and_context_window_backup.json``
inside the installed package, what ``LITELLM_LOCAL_MODEL_COST_MAP=True`` makes it use;
`agents.model.client.import_litellm` sets that) without importing litellm: the import takes seconds, the
file ~40 ms, and a sweep's forecast must print in a few seconds. The lookup is the map's key as written
(``gemini/gemini-2.5-flash``), else the name after the provider prefix when the entry's provider is that
prefix (``openai/gpt-4o-mini`` -> ``gpt-4o-mini``); a model found neither way is unpriced.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.atomic import read_json_or_none

__all__ = ["Price", "price_of"]

MAP_FILE = "model_prices_and_context_window_backup.json"


@dataclass(frozen=True)
class Price:
    """Dollars per token, and where the price comes from.

    Attributes:
        prompt: Dollars per prompt token.
        completion: Dollars per completion token.
        source: ``agent.price``, ``litellm`` (with the map's key) or why there is none.
        known: False when neither the config nor LiteLLM prices the model (USD is then "unknown").
    """

    prompt: float
    completion: float
    source: str
    known: bool = True

    def usd(self, prompt_tokens: float, completion_tokens: float) -> float | None:
        """The cost of these tokens, or None for an unpriced model."""
        return prompt_tokens * self.prompt + completion_tokens * self.completion if self.known else None


@functools.cache
def _litellm_map() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    data = read_json_or_none(Path(spec.origin).parent / MAP_FILE)
    return data if isinstance(data, dict) else {}


def _map_entry(model: str) -> tuple[str, Mapping[str, Any]] | None:
    table = _litellm_map()
    entry = table.get(model)
    if isinstance(entry, Mapping):
        return model, entry
    provider, _, name = model.partition("/")
    entry = table.get(name) if name else None
    if isinstance(entry, Mapping) and str(entry.get("litellm_provider", "")).startswith(provider):
        return name, entry
    return None


def price_of(model: str | None, price: Mapping[str, Any] | None) -> Price:
    """The price of a role's calls.

    Args:
        model: The role's LiteLLM model string (None for an agent without one).
        price: The role's ``price`` node (``input_per_mtok``, ``output_per_mtok``: dollars per million
            tokens; None entries count as unset), used for a model LiteLLM's map does not price, as in the
            run (`agents.model.client.ModelClient`: the map wins when it has the model).

    Returns:
        The price (``known`` False when nobody prices the model).
    """
    found = _map_entry(str(model)) if model else None
    if found is not None:
        key, entry = found
        prompt, completion = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if prompt or completion:
            return Price(float(prompt or 0.0), float(completion or 0.0), f"litellm ({key})")
    given = {k: v for k, v in (price or {}).items() if v is not None}
    if given:
        return Price(
            float(given.get("input_per_mtok", 0.0)) / 1e6,
            float(given.get("output_per_mtok", 0.0)) / 1e6,
            "agent.price",
        )
    return Price(0.0, 0.0, f"LiteLLM has no price for {model}; give agent.price.*", known=False)

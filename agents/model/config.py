"""What a model client is told: the model, its endpoint, key, timeout, retries, cache, price and server.

`ModelConfig` is the one typed object `ModelClient` and the judge take. The config gives its fields flat
(``agent.model``, ``agent.retry.max_attempts``, ``agent.server.slots``); `core.registry.call_with_options`
builds it from them, so the values are checked here, once, whoever builds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.model.cache import RequestCache
from agents.model.retry import RetryPolicy
from agents.model.server import ServerOptions
from core.registry import flat_options, given_as

__all__ = ["ModelConfig", "TokenPrice"]


@dataclass(frozen=True)
class TokenPrice:
    """Fallback price when LiteLLM does not know the model.

    Attributes:
        prompt_usd_per_mtok: Dollars per million prompt tokens.
        completion_usd_per_mtok: Dollars per million completion tokens.
    """

    prompt_usd_per_mtok: float = 0.0
    completion_usd_per_mtok: float = 0.0

    @classmethod
    def of(cls, value: TokenPrice | Mapping[str, Any] | None) -> TokenPrice | None:
        """A price from the config (``agent.price.input_per_mtok=... output_per_mtok=...``).

        Args:
            value: A `TokenPrice`, a mapping with ``input_per_mtok`` / ``output_per_mtok`` (dollars per
                million tokens; None entries count as unset), or None.

        Returns:
            The price, or None when no entry is set.

        Raises:
            ValueError: An unknown key, or a negative or non-numeric price.
        """
        if value is None or isinstance(value, TokenPrice):
            return value
        unknown = sorted(set(value) - {"input_per_mtok", "output_per_mtok"})
        if unknown:
            raise ValueError(f"agent.price: unknown keys {unknown}; valid: input_per_mtok, output_per_mtok")
        given = {k: v for k, v in value.items() if v is not None}
        if not given:
            return None
        prices = {}
        for key, v in given.items():
            try:
                prices[key] = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"agent.price.{key}={v!r}: expected dollars per million tokens") from None
            if prices[key] < 0:
                raise ValueError(f"agent.price.{key}={v!r}: a price cannot be negative")
        return cls(prices.get("input_per_mtok", 0.0), prices.get("output_per_mtok", 0.0))

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Price a call.

        Args:
            prompt_tokens: Prompt tokens.
            completion_tokens: Completion tokens.

        Returns:
            Dollars.
        """
        return (
            prompt_tokens * self.prompt_usd_per_mtok + completion_tokens * self.completion_usd_per_mtok
        ) / 1e6


@flat_options
@dataclass(frozen=True)
class ModelConfig:
    """One model behind one endpoint, as a client calls it.

    Each field is also an option of the config (``agent.<field>``); a field given in its config form (a
    mapping, a path) is turned into its type on construction.

    Attributes:
        model: Any LiteLLM model string (``openai/gpt-4o-mini``, ``gemini/...``, ``ollama/...``).
        api_base: Endpoint override (a local vLLM/Ollama server, the fake server in tests); None for the
            provider default.
        api_key: Explicit key; None lets LiteLLM read the provider's environment variable. Never shown,
            logged, cached or traced.
        timeout_s: Per-attempt provider timeout.
        retry: Retry policy for transient provider errors (or the config's mapping of its fields).
        cache: The request cache (or a path to its SQLite file); None: no cache.
        price: Fallback per-token price for models LiteLLM cannot price (or the config's
            ``{"input_per_mtok": ..., "output_per_mtok": ...}`` in dollars per million tokens).
        extra_params: Further ``acompletion`` parameters (e.g. ``{"top_p": 0.9}``), part of the cache key.
        server: What a local server needs (`ServerOptions` or a mapping of its fields; ``auto`` asks the
            server); None asks nothing and bounds nothing.

    Raises:
        ValueError: A price or server block the config cannot mean (its keys or values).
        TypeError: A retry mapping with a key `RetryPolicy` does not have.
    """

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120.0
    retry: RetryPolicy = field(
        default=RetryPolicy(), metadata=given_as(RetryPolicy | Mapping[str, Any] | None)
    )
    cache: RequestCache | None = field(
        default=None, compare=False, metadata=given_as(RequestCache | Path | str | None)
    )
    price: TokenPrice | None = field(default=None, metadata=given_as(Mapping[str, Any] | TokenPrice | None))
    extra_params: Mapping[str, Any] = field(
        default_factory=dict, hash=False, metadata=given_as(Mapping[str, Any] | None)
    )
    server: ServerOptions | None = field(
        default=None, metadata=given_as(Mapping[str, Any] | ServerOptions | None)
    )

    def __post_init__(self) -> None:
        # Frozen: the config forms are replaced by their types once, here.
        retry: Any = self.retry
        if retry is None:
            retry = RetryPolicy()
        elif isinstance(retry, Mapping):  # from the config: agent.retry.max_attempts=...
            retry = RetryPolicy(**retry)
        cache: Any = self.cache
        if cache is not None and not isinstance(cache, RequestCache):
            cache = RequestCache(Path(cache)) if cache else None
        object.__setattr__(self, "retry", retry)
        object.__setattr__(self, "cache", cache)
        object.__setattr__(self, "price", TokenPrice.of(self.price))
        object.__setattr__(self, "extra_params", dict(self.extra_params or {}))
        object.__setattr__(self, "server", ServerOptions.of(self.server))

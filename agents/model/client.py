"""One model call through LiteLLM, with our cache, our retries and cost accounting.

litellm is imported here, lazily, the first time a `ModelClient` is built: the environment is prepared first
(``LITELLM_LOCAL_MODEL_COST_MAP=True`` so no price map is fetched from the network) and its loggers are
quieted. LiteLLM's own retries are switched off (``max_retries=0``, ``num_retries=0``) so that the retry count
we report is the real one.

Per-call cost of the LiteLLM path (``perf/agent_overhead.py``, zero-latency fake server): LiteLLM spends
~12-15 ms of CPU on every ``acompletion`` (its logging object, parameter mapping in a worker thread, the
OpenAI SDK's request building and response models, its cost calculator, a background success-logging task);
our loop adds nothing measurable on top. Two things here keep it from being more: a model LiteLLM cannot price
gets our price table passed as custom pricing, which sends its cost calculator down the short path instead of
a failing search through its model map, and the cost is never recomputed with ``completion_cost`` after the
call (together ~3 ms per call). LiteLLM's own defaults are kept on purpose: the aiohttp transport (never
``disable_aiohttp_transport``), message logging as is, one ``acompletion`` per call and no ``Router``; the
side-by-side figures are in docs/performance.md (``perf/agent_overhead.py --settings``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from agents.base import FatalAgentError, Usage
from agents.model.cache import CachedResponse, endpoint_of, request_key
from agents.model.config import ModelConfig, TokenPrice
from agents.model.credentials import MissingApiKeyError, litellm_missing_key_message, missing_key_message
from agents.model.retry import fatal_reason
from agents.model.server import EndpointSlots, served_model, window_from_error

__all__ = ["ModelClient", "ModelReply", "import_litellm", "is_context_window_error"]

log = logging.getLogger(__name__)


def import_litellm() -> ModuleType:
    """Import litellm offline and quietly.

    Returns:
        The litellm module.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # its "Give Feedback" banner goes to stdout on every error
    for name in ("LiteLLM", "LiteLLM Proxy", "LiteLLM Router", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)
    if not any(isinstance(f, _LoopChangeFilter) for f in logging.getLogger("LiteLLM").filters):
        logging.getLogger("LiteLLM").addFilter(_LoopChangeFilter())
    return litellm


class _LoopChangeFilter(logging.Filter):
    """Drops LiteLLM's "LoggingWorker: event loop changed" warning.

    LiteLLM keeps one logging worker per process, bound to the event loop it last ran in. Each run starts a
    new loop (`core.cli_errors.run_coroutine`: each job of a sequential multirun, each in-process CLI call),
    and a success-logging task still queued by the last run is moved onto it with this warning. Nothing is
    lost and nothing is for the user to do, yet it was a second stderr line beside a run's one-line error.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("LoggingWorker: event loop changed")


def is_context_window_error(exc: BaseException) -> bool:
    """Whether a provider error says the request does not fit the model's window (LiteLLM's mapping)."""
    from litellm import exceptions as errors

    return isinstance(exc, errors.ContextWindowExceededError)


@dataclass(frozen=True)
class ModelReply:
    """One answered call.

    Attributes:
        message: The assistant message as plain JSON (``role``, ``content``, optional ``tool_calls``).
        prompt_tokens: Prompt tokens (the original call's when replayed from the cache).
        completion_tokens: Completion tokens.
        cost_usd: Dollars (the original call's when replayed).
        cached: Whether the cache answered.
        retries: Transient failures retried before the answer.
        latency_s: Seconds spent in this call (retries and waits included).
        waited_s: Of those, seconds spent waiting for the server's slot (`agent.server.slots`): the rest is
            the server's time (the forecast's measured speed, `experiments.run.forecast`).
    """

    message: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    cached: bool
    retries: int
    latency_s: float
    waited_s: float = 0.0

    def usage(self, wall_s: float = 0.0) -> Usage:
        """What the call cost: one call, its tokens and dollars, its retries, a cache hit or not."""
        return Usage(
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost_usd=self.cost_usd,
            wall_s=wall_s,
            calls=1,
            retries=self.retries,
            cache_hits=int(self.cached),
        )


def _plain_message(message: Any) -> dict[str, Any]:
    """Reduce a LiteLLM ``Message`` to the JSON we send back and cache."""
    out: dict[str, Any] = {"role": "assistant", "content": getattr(message, "content", None)}
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        out["tool_calls"] = [
            {
                "id": str(getattr(c, "id", "") or f"call_{k}"),
                "type": "function",
                "function": {
                    "name": str(getattr(c.function, "name", "") or ""),
                    "arguments": str(getattr(c.function, "arguments", "") or ""),
                },
            }
            for k, c in enumerate(calls)
        ]
    return out


class ModelClient:
    """Calls one model through ``litellm.acompletion``.

    Args:
        config: The model, its endpoint, key, timeout, retries, cache, price and further parameters
            (``extra_params`` are part of the cache key). Its ``server`` block is the caller's to resolve.
        slots: Requests in flight at once to the endpoint (`agents.model.server.EndpointSlots`: across
            threads and processes; the timeout counts from when a slot is free); None: no bound.
        context_window: The endpoint's window in tokens when known; an overflow error that names a smaller
            one lowers it (`context_window` is then what the server said).

    Raises:
        MissingApiKeyError: No key for the provider (checked before litellm is even imported).
        ValueError: LiteLLM cannot route the model string to a provider.
    """

    def __init__(
        self, config: ModelConfig, *, slots: int | None = None, context_window: int | None = None
    ) -> None:
        model, api_base, api_key, price = config.model, config.api_base, config.api_key, config.price
        # Before the import (seconds): a forgotten key is reported at once, in one line.
        missing = missing_key_message(model, api_key)
        if missing is not None:
            raise MissingApiKeyError(missing)
        self._litellm = import_litellm()
        missing = litellm_missing_key_message(self._litellm, model, api_key, api_base)
        if missing is not None:
            raise MissingApiKeyError(missing)
        try:
            _name, provider, _key, routed = self._litellm.get_llm_provider(model=model, api_base=api_base)
        except Exception as exc:  # LiteLLM's BadRequestError: no provider for this model string
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ValueError(f"unknown model {model!r}: {first[:300]}") from None
        #: Calls the provider answered (cache hits excluded): an endpoint that never answered is dead.
        self.answered = 0
        self.model = model
        self.api_base = api_base
        #: Who serves the model, part of every cache key: the same name on another server is another model.
        #: Without ``api_base``, the endpoint LiteLLM routes to (``HOSTED_VLLM_API_BASE``, Ollama's default).
        self.endpoint = endpoint_of(str(provider), api_base or routed)
        #: Sampling parameters this provider does not take (LiteLLM's parameter map): a ``seed`` it has no use
        #: for is kept in the cache key but not sent, so no provider rejects a request for it.
        self.unsent_params = _unsupported(self._litellm, model, str(provider), ("seed",))
        self._api_key = api_key
        self.timeout_s = config.timeout_s
        self.retry = config.retry
        self.cache = config.cache
        #: Whether calls are priced: by LiteLLM's map or by an explicit price (a USD budget needs one).
        self.priced = price is not None
        self.price = price or TokenPrice()
        self.extra_params = dict(config.extra_params)
        #: The endpoint's window in tokens, when the config or the server said it (lowered by an overflow).
        self.context_window = context_window
        self._slots = EndpointSlots(self.endpoint, slots) if slots is not None else None
        #: What the server at ``api_base`` says it serves (`served_model`), asked before the first call; part
        #: of every cache key. None for a hosted API (the model string is its identity) or a server that
        #: does not say.
        self.served: str | None = None
        self._served_asked = api_base is None
        #: The ``model`` the server put in its first answer: a later answer naming another is a swap.
        self._answered_as: str | None = None
        # Decided once: whether LiteLLM's price map covers the model. When it does not, every call gets our
        # price as custom pricing; it is not part of the request sent, nor of the cache key.
        self.litellm_prices_model = _litellm_prices(self._litellm, model)
        self.priced = self.priced or self.litellm_prices_model
        #: The pricing arguments added to every ``acompletion`` (empty when LiteLLM prices the model).
        self.pricing_params: dict[str, float] = (
            {}
            if self.litellm_prices_model
            else {
                "input_cost_per_token": self.price.prompt_usd_per_mtok / 1e6,
                "output_cost_per_token": self.price.completion_usd_per_mtok / 1e6,
            }
        )

    def __repr__(self) -> str:
        return f"ModelClient(model={self.model!r}, api_base={self.api_base!r})"

    def vision_support(self) -> bool | None:
        """What LiteLLM's model map says of the model's image input: True, False, or None when it has no entry
        (or no ``supports_vision`` field) for it."""
        try:
            info = self._litellm.get_model_info(model=self.model)
        except Exception:  # LiteLLM raises a bare Exception for models it does not know
            return None
        value = info.get("supports_vision")
        return None if value is None else bool(value)

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        params: Mapping[str, Any],
        candidate_index: int,
    ) -> ModelReply:
        """Answer one request from the cache or the provider.

        Args:
            messages: Chat messages.
            tools: Tool definitions.
            params: Sampling parameters (temperature, max_tokens, seed ...).
            candidate_index: Part of the cache key.

        Returns:
            The reply.

        Raises:
            FatalAgentError: The error dooms every call of the run (rejected key, unknown model, an
                endpoint that never answered); see `fatal_reason`.
            Exception: The provider's error when it is not transient or retries ran out.
        """
        start = time.perf_counter()
        all_params = {**self.extra_params, **params}
        sent = {k: v for k, v in all_params.items() if k not in self.unsent_params}
        served = await self.served_identity()
        # Hashing a long conversation costs time; only pay for it when there is a cache to ask.
        key = (
            request_key(
                self.model,
                messages,
                tools,
                all_params,
                candidate_index,
                endpoint=self.endpoint,
                served=served,
            )
            if self.cache is not None
            else ""
        )
        # A server that has not said what it serves yet (it did not answer /models) is never answered from
        # the cache: that answer could be another model's. The call is bought (and stored) instead.
        if self.cache is not None and self._served_asked:
            hit = self.cache.get(key)
            if hit is not None:
                return ModelReply(
                    hit.message,
                    hit.prompt_tokens,
                    hit.completion_tokens,
                    hit.cost_usd,
                    True,
                    0,
                    time.perf_counter() - start,
                )
        retries = 0
        waited = 0.0

        def on_retry(error: BaseException, attempt: int) -> None:
            nonlocal retries
            retries += 1
            log.info("transient error from %s (attempt %d): %s", self.model, attempt, type(error).__name__)

        async def attempt() -> Any:
            nonlocal waited
            if self._slots is None:
                return await send()
            async with self._slots.hold() as wait:
                waited += wait
                return await send()

        async def send() -> Any:
            return await self._litellm.acompletion(
                model=self.model,
                messages=list(messages),
                tools=list(tools) or None,
                api_base=self.api_base,
                api_key=self._api_key,
                timeout=self.timeout_s,
                max_retries=0,
                num_retries=0,
                **self.pricing_params,
                **sent,
            )

        try:
            response = await self.retry.call(attempt, on_retry)
        except Exception as exc:
            fatal = fatal_reason(exc, self.model, self.answered, retries + 1, self.api_base)
            if fatal is not None:
                raise FatalAgentError(fatal) from exc
            said = window_from_error(str(exc)) if is_context_window_error(exc) else None
            if said is not None:
                self.context_window = min(said, self.context_window or said)
            raise
        self.answered += 1
        await self._same_model(response, retries)
        message = _plain_message(response.choices[0].message)
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = self._cost(response, prompt_tokens, completion_tokens)
        if self.cache is not None:
            self.cache.put(key, self.model, CachedResponse(message, prompt_tokens, completion_tokens, cost))
        return ModelReply(
            message,
            prompt_tokens,
            completion_tokens,
            cost,
            False,
            retries,
            time.perf_counter() - start,
            waited,
        )

    async def served_identity(self) -> str | None:
        """What the server at ``api_base`` serves (`served_model`, asked before this client's first call);
        None for a hosted API or a server that does not say.
        """
        if not self._served_asked:
            self.served = await asyncio.to_thread(served_model, str(self.api_base))
            # A server that did not answer yet (still starting) is asked again before the next call; one that
            # answered a call but says nothing of its model (no /models) is not asked again.
            self._served_asked = self.served is not None or self.answered > 0
        return self.served

    async def _same_model(self, response: Any, retries: int) -> None:
        """Fail loudly when the server swapped its model mid-run instead of mixing two models' answers.

        Two signs: an answer whose ``model`` differs from the first answer's, and, after a call that needed
        retries (a server restarting looks like that), ``/models`` naming other weights than at the start.

        Raises:
            FatalAgentError: The server now serves another model.
        """
        if self.api_base is None:
            return
        reported = getattr(response, "model", None)
        if isinstance(reported, str) and reported:
            if self._answered_as is None:
                self._answered_as = reported
            elif reported != self._answered_as:
                raise FatalAgentError(
                    f"the server at {self.api_base} changed model mid-run: its answers came from "
                    f"{self._answered_as!r}, now from {reported!r}; results of two models would mix"
                )
        if retries and self.served is not None:
            now = await asyncio.to_thread(served_model, self.api_base)
            if now is not None and now != self.served:
                raise FatalAgentError(
                    f"the server at {self.api_base} changed model mid-run: it served {self.served}, "
                    f"now {now}; results of two models would mix"
                )

    def _cost(self, response: Any, prompt_tokens: int, completion_tokens: int) -> float:
        """LiteLLM's cost for a model it prices, else our price table (the provider gave none).

        LiteLLM already ran its cost calculator inside ``acompletion`` and stored the result in
        ``_hidden_params``; calling ``completion_cost`` again would redo the same search (and fail the same
        way for an unknown model), so it is not called.
        """
        if self.litellm_prices_model:
            hidden = getattr(response, "_hidden_params", None) or {}
            cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
            if cost:
                return float(cost)
        return self.price.cost(prompt_tokens, completion_tokens)


def _unsupported(litellm: ModuleType, model: str, provider: str, names: Sequence[str]) -> frozenset[str]:
    """Which of ``names`` LiteLLM says the provider does not take (all of them when it cannot say)."""
    try:
        supported = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:  # a provider LiteLLM has no parameter map for: send none of the optional ones
        supported = None
    return frozenset(n for n in names if supported is None or n not in supported)


def _litellm_prices(litellm: ModuleType, model: str) -> bool:
    """Whether LiteLLM's local price map has a per-token price for ``model``."""
    try:
        info = litellm.get_model_info(model=model)
    except Exception:  # LiteLLM raises a bare Exception for models it does not know
        return False
    return bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))

"""Retry policy for provider calls: transient errors are retried with exponential backoff and jitter.

Transient means the same request may succeed later: rate limits (429), timeouts, connection failures and
server errors (5xx). Everything else (bad request, authentication, context window, content policy) is final
and fails the candidate, not the run. A ``Retry-After`` (or ``retry-after-ms``) header the provider sent with
the error is honoured: the next attempt waits that long, not less; when it asks for more than
``max_wait_s``, the call gives up at once with the provider's error instead of retrying too early.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import tenacity

__all__ = [
    "RetryPolicy",
    "fatal_reason",
    "is_transient",
    "lost_connection",
    "retry_after_s",
]

T = TypeVar("T")

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})


def is_transient(exc: BaseException) -> bool:
    """Whether a provider error is worth retrying: rate limits, timeouts, connection errors, 5xx answers."""
    # The agent imported litellm already; this never triggers the first (slow, network-prone) import.
    from litellm import exceptions as errors

    transient_types: tuple[type[BaseException], ...] = (
        errors.RateLimitError,
        errors.Timeout,
        errors.APIConnectionError,
        errors.InternalServerError,
        errors.ServiceUnavailableError,
        errors.BadGatewayError,
        TimeoutError,
        ConnectionError,
    )
    if isinstance(exc, transient_types):
        return True
    # Not-transient litellm subclasses first: a ContextWindowExceededError also carries status 400.
    if isinstance(exc, errors.BadRequestError | errors.AuthenticationError | errors.NotFoundError):
        return False
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status >= 500 or status in _TRANSIENT_STATUS)


def _headers(exc: BaseException) -> Mapping[str, Any] | None:
    for source in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    ):
        if source is not None and hasattr(source, "get"):
            return source  # type: ignore[no-any-return]
    return None


def retry_after_s(exc: BaseException) -> float | None:
    """The seconds (0 or more) a provider asked to wait with its error (``retry-after-ms``, ``retry-after``
    seconds or date); None when the error carries no such header.
    """
    headers = _headers(exc)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except (TypeError, ValueError):
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def fatal_reason(
    exc: BaseException, model: str, answered: int, attempts: int, api_base: str | None = None
) -> str | None:
    """Tell whether a final provider error dooms every other candidate too, and say so in one line.

    Rejected credentials and a model the provider does not serve fail every later call the same way; so
    does an endpoint that never answered once through a whole retry budget. A context window or a bad
    request concerns only this conversation and is not fatal.

    Args:
        exc: The error ``litellm.acompletion`` raised last (retries, if any, are over).
        model: The model string (named in the line).
        answered: Calls the provider answered so far in this run.
        attempts: Attempts spent on this call.
        api_base: The endpoint (named when a server that answered stops answering, with its log if known).

    Returns:
        The reason to stop the run, or None when only this candidate fails.
    """
    from litellm import exceptions as errors

    detail = " ".join(str(exc).split())[:300]
    status = getattr(exc, "status_code", None)
    if isinstance(exc, errors.AuthenticationError | errors.PermissionDeniedError) or status in (401, 403):
        return f"the provider rejected the credentials for {model}: {type(exc).__name__}: {detail}"
    if isinstance(exc, errors.NotFoundError) or status == 404:
        return f"the provider does not know the model {model}: {type(exc).__name__}: {detail}"
    # A refused connection, a timeout, a 5xx or a body that is not a completion, through a whole retry
    # budget, before any call of the run was answered: the endpoint is down or wrong. A rate limit is not:
    # the endpoint is there, only busy.
    if answered == 0 and is_transient(exc) and not isinstance(exc, errors.RateLimitError) and status != 429:
        from agents.serve import server_note

        note = server_note(api_base)
        return (
            f"the endpoint of {model} did not answer once in {attempts} attempts "
            f"({type(exc).__name__}: {detail})" + (f"; {note}" if note else "")
        )
    # A server that answered and now refuses or drops every connection through a whole retry budget has died
    # (a local server crashed, e.g. ggml's AMX kernels on a CPU that faults on them): every later call fails
    # alike. A timeout is not this (a busy server), nor a 5xx (the server is there to say it).
    if answered > 0 and lost_connection(exc):
        from agents.model.server import discover
        from agents.serve import server_note

        if api_base and discover(api_base, timeout_s=2.0).answered:
            # Still up: it drops this one request (a handler that fails on it), not every call; only this
            # conversation fails, with the provider error as its reason.
            return None

        note = server_note(api_base)
        return (
            f"the server at {api_base or model} answered {answered} call{'s' if answered != 1 else ''} of "
            f"{model}, then stopped answering: {attempts} attempts failed ({type(exc).__name__}: {detail}); "
            + (note or "it has probably exited (look at its log)")
        )
    return None


def lost_connection(exc: BaseException) -> bool:
    """Whether the provider could not be reached at all: the connection was refused, reset or dropped.

    LiteLLM reports a refused connection to an OpenAI-compatible server as an ``InternalServerError``
    ("Connection error.") wrapping the OpenAI client's ``APIConnectionError``, so the chain is looked
    through. A timeout is not a lost connection (the server is there, only slow).

    Args:
        exc: The provider error.

    Returns:
        True for a connection that failed.
    """
    import httpx
    import openai

    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        error = todo.pop()
        if error is None or any(error is s for s in seen) or len(seen) > 20:
            continue
        seen.append(error)
        if isinstance(error, openai.APITimeoutError | httpx.TimeoutException | TimeoutError):
            return False
        if isinstance(
            error,
            openai.APIConnectionError | httpx.ConnectError | httpx.RemoteProtocolError | ConnectionError,
        ):
            return True
        todo += [error.__cause__, error.__context__, getattr(error, "original_exception", None)]
    return "Connection error" in str(exc)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter (tenacity ``wait_exponential_jitter``).

    Attributes:
        max_attempts: Attempts per call, the first included.
        initial_s: First wait.
        max_wait_s: Longest single wait.
        exp_base: Growth factor between waits.
        jitter_s: Upper bound of the random extra wait (spreads concurrent candidates apart).
    """

    max_attempts: int = 6
    initial_s: float = 1.0
    max_wait_s: float = 60.0
    exp_base: float = 2.0
    jitter_s: float = 1.0

    async def call(
        self,
        fn: Callable[[], Awaitable[T]],
        on_retry: Callable[[BaseException, int], None] | None = None,
    ) -> T:
        """Run ``fn`` until it succeeds, a non-transient error occurs, or attempts run out.

        Args:
            fn: The coroutine factory (called once per attempt).
            on_retry: Called with the error and the attempt number before each wait.

        Returns:
            What ``fn`` returned.

        Raises:
            BaseException: The last error when it is not transient or attempts ran out.
        """
        # The first attempt runs without tenacity's machinery (30 us of CPU per call on the event loop, 0.3 us
        # without): almost every call succeeds at once. A failure is handed to tenacity as its first attempt
        # (replayed, not sent again), so what follows is exactly the policy: the same retry test, waits,
        # attempt numbers and stop. A cancellation is not an attempt that failed: it propagates as is.
        first: BaseException | None
        try:
            return await fn()
        except Exception as exc:
            first = exc

        async def attempt() -> T:
            nonlocal first
            if first is not None:
                error, first = first, None
                raise error
            return await fn()

        def before_sleep(state: tenacity.RetryCallState) -> None:
            if on_retry is not None and state.outcome is not None:
                error = state.outcome.exception()
                if error is not None:
                    on_retry(error, state.attempt_number)

        backoff = tenacity.wait_exponential_jitter(
            multiplier=self.initial_s, max=self.max_wait_s, exp_base=self.exp_base, jitter=self.jitter_s
        )
        attempts = tenacity.stop_after_attempt(max(1, self.max_attempts))

        def asked(state: tenacity.RetryCallState) -> float | None:
            error = state.outcome.exception() if state.outcome is not None else None
            return retry_after_s(error) if error is not None else None

        def wait(state: tenacity.RetryCallState) -> float:
            # The provider's Retry-After, not less: an earlier retry would only be refused again.
            wanted = asked(state)
            return float(backoff(state)) if wanted is None else wanted

        def stop(state: tenacity.RetryCallState) -> bool:
            wanted = asked(state)
            return bool(attempts(state)) or (wanted is not None and wanted > self.max_wait_s)

        retrying = tenacity.AsyncRetrying(
            stop=stop,
            wait=wait,
            retry=tenacity.retry_if_exception(is_transient),
            before_sleep=before_sleep,
            reraise=True,
        )
        return await retrying(attempt)

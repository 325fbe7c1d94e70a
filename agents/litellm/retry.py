"""Retry policy for provider calls: transient errors are retried with exponential backoff and jitter.

Transient means the same request may succeed later: rate limits (429), timeouts, connection failures and
server errors (5xx). Everything else (bad request, authentication, context window, content policy) is final
and fails the candidate, not the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import tenacity

__all__ = ["RetryPolicy", "is_transient"]

T = TypeVar("T")

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})


def is_transient(exc: BaseException) -> bool:
    """Tell whether a provider error is worth retrying.

    Args:
        exc: The exception raised by ``litellm.acompletion``.

    Returns:
        True for rate limits, timeouts, connection errors and 5xx responses.
    """
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

        def before_sleep(state: tenacity.RetryCallState) -> None:
            if on_retry is not None and state.outcome is not None:
                error = state.outcome.exception()
                if error is not None:
                    on_retry(error, state.attempt_number)

        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(max(1, self.max_attempts)),
            wait=tenacity.wait_exponential_jitter(
                multiplier=self.initial_s, max=self.max_wait_s, exp_base=self.exp_base, jitter=self.jitter_s
            ),
            retry=tenacity.retry_if_exception(is_transient),
            before_sleep=before_sleep,
            reraise=True,
        )
        return await retrying(fn)

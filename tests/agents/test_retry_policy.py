"""`RetryPolicy.call`: the first attempt runs outside tenacity; after a failure the policy is unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from agents.model.retry import RetryPolicy

QUICK = RetryPolicy(max_attempts=4, initial_s=0.001, max_wait_s=0.002, jitter_s=0.001)


def _flaky(errors: list[BaseException]) -> tuple[Callable[[], object], list[int]]:
    """A coroutine factory raising ``errors`` in turn, then returning "ok"; and its call counter."""
    calls = [0]

    async def fn() -> str:
        calls[0] += 1
        if errors:
            raise errors.pop(0)
        return "ok"

    return fn, calls


def _run(fn: Callable[[], object]) -> tuple[object, list[tuple[str, int]]]:
    retried: list[tuple[str, int]] = []
    result = asyncio.run(QUICK.call(fn, lambda error, n: retried.append((str(error), n))))  # type: ignore[arg-type]
    return result, retried


def test_a_first_success_is_one_attempt_and_no_retry() -> None:
    fn, calls = _flaky([])
    assert _run(fn) == ("ok", []) and calls == [1]


def test_transient_failures_are_retried_with_tenacity_attempt_numbers() -> None:
    fn, calls = _flaky([TimeoutError("t1"), ConnectionError("t2")])
    assert _run(fn) == ("ok", [("t1", 1), ("t2", 2)]) and calls == [3]


def test_attempts_run_out_on_the_last_transient_error() -> None:
    fn, calls = _flaky([TimeoutError(f"t{k}") for k in range(1, 10)])
    retried: list[int] = []
    with pytest.raises(TimeoutError, match="t4"):
        asyncio.run(QUICK.call(fn, lambda error, n: retried.append(n)))  # type: ignore[arg-type]
    assert calls == [4] and retried == [1, 2, 3]


def test_a_non_transient_error_is_raised_at_once() -> None:
    fn, calls = _flaky([ValueError("bad request")])
    retried: list[int] = []
    with pytest.raises(ValueError, match="bad request"):
        asyncio.run(QUICK.call(fn, lambda error, n: retried.append(n)))  # type: ignore[arg-type]
    assert calls == [1] and retried == []


def test_a_cancellation_propagates_without_retry() -> None:
    fn, calls = _flaky([asyncio.CancelledError()])
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(QUICK.call(fn))  # type: ignore[arg-type]
    assert calls == [1]


def test_a_single_attempt_policy_never_retries() -> None:
    fn, calls = _flaky([TimeoutError("t1")])
    with pytest.raises(TimeoutError):
        asyncio.run(RetryPolicy(max_attempts=1).call(fn))  # type: ignore[arg-type]
    assert calls == [1]

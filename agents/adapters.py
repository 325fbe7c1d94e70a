"""Adapters that turn a researcher's existing agent into a protocol `Agent`.

`from_callable` wraps ``async def my_agent(task_dir, out_dir, model, **kw) -> None`` (a function that writes
the benchmark output folder, typically calling ``litellm.acompletion`` itself). Token and dollar usage is
captured from LiteLLM's success callbacks while the function runs, so the strategies' cost
accounting and budgets apply.

Example:
    >>> from agents.adapters import from_callable
    >>> agent = from_callable(my_agent, model="openai/gpt-4o-mini")   # then: strategy=s3 over it
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agents.base import Candidate, Feedback, Task, Usage

__all__ = ["CallableAgent", "from_callable"]

log = logging.getLogger(__name__)

AgentFn = Callable[..., Awaitable[None]]


@dataclass
class _Meter:
    prompt: int = 0
    completion: int = 0
    cost: float = 0.0
    calls: int = 0
    started: int = 0
    ended: int = 0


_METER: contextvars.ContextVar[_Meter | None] = contextvars.ContextVar("medstrat_usage_meter", default=None)
_LOGGER_INSTALLED = False
# Only waited while a started call is still uncounted; generous because on a loaded machine LiteLLM's
# background logging task can lag the response by seconds (2 s lost calls under load).
_CALLBACK_WAIT_S = 10.0


def _install_usage_logger() -> None:
    """Register (once) a LiteLLM callback that adds each successful call's usage to the running candidate."""
    global _LOGGER_INSTALLED
    if _LOGGER_INSTALLED:
        return
    from agents.model.client import import_litellm  # lazily, offline (no price-map download)

    litellm = import_litellm()
    from litellm.integrations.custom_logger import CustomLogger

    class _UsageLogger(CustomLogger):
        def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
            meter = _METER.get()
            if meter is not None:
                meter.started += 1

        def _record(self, kwargs: dict[str, Any], response: Any) -> None:
            meter = _METER.get()
            if meter is None:
                return
            usage = getattr(response, "usage", None)
            meter.prompt += int(getattr(usage, "prompt_tokens", 0) or 0)
            meter.completion += int(getattr(usage, "completion_tokens", 0) or 0)
            meter.cost += float(kwargs.get("response_cost") or 0.0)
            meter.calls += 1
            meter.ended += 1

        def log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
            meter = _METER.get()
            if meter is not None:
                meter.ended += 1

        async def async_log_failure_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            self.log_failure_event(kwargs, response_obj, start_time, end_time)

        def log_success_event(
            self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            self._record(kwargs, response_obj)

        async def async_log_success_event(
            self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            self._record(kwargs, response_obj)

    litellm.callbacks.append(_UsageLogger())
    _LOGGER_INSTALLED = True


class CallableAgent:
    """A protocol agent around ``async fn(task_dir, out_dir, model, **kw)``.

    The function receives the dataset root, the ``agent1_data_organization`` folder to write, the model string
    and, when its signature accepts them (or ``**kw``), ``seed``, ``temperature``, ``candidate_index``, and
    for a revision ``feedback`` (text), ``editable_fields`` and ``previous_dir``. A function that cannot
    revise leaves S1/S2 revisions as unchanged copies (logged).

    Args:
        fn: The agent function.
        model: The LiteLLM model string passed through.
        name: The agent's name (default: the function's name).
        **kwargs: Further keyword arguments for every call.
    """

    #: The wrapped function calls a model through LiteLLM: ``run.processes=auto`` runs one process per core.
    calls_model = True

    def __init__(self, fn: AgentFn, *, model: str, name: str | None = None, **kwargs: Any) -> None:
        self.fn, self.model, self.kwargs = fn, model, kwargs
        self.name: str = name or str(getattr(fn, "__name__", "callable"))
        params = inspect.signature(fn).parameters
        self._takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        self._params = set(params)

    def _accepts(self, key: str) -> bool:
        return self._takes_all or key in self._params

    async def _call(self, task: Task, extra: dict[str, Any]) -> Candidate:
        try:
            _install_usage_logger()
        except ImportError:  # litellm missing: usage stays 0, the function still runs
            log.warning("litellm is not importable; usage of %s is not captured", self.name)
        meter = _Meter()
        token = _METER.set(meter)
        task.output_dir.mkdir(parents=True, exist_ok=True)
        options = {
            "seed": task.seed,
            "temperature": task.temperature,
            "candidate_index": task.candidate_index,
            **extra,
        }
        kw = {**self.kwargs, **{k: v for k, v in options.items() if self._accepts(k)}}
        start = time.perf_counter()
        status: Literal["ok", "failed"] = "ok"
        reason: str | None = None
        try:
            await self.fn(task.root, task.output_dir, self.model, **kw)
        except Exception as exc:  # the protocol: a failed candidate, never an exception
            log.warning("%s failed on %s: %s", self.name, task.name, exc)
            status, reason = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            _METER.reset(token)
        # LiteLLM reports success from a background task: wait (briefly) until every started call is counted.
        deadline = time.perf_counter() + _CALLBACK_WAIT_S
        while meter.ended < meter.started and time.perf_counter() < deadline:
            await asyncio.sleep(0.005)
        usage = Usage(
            prompt_tokens=meter.prompt,
            completion_tokens=meter.completion,
            cost_usd=meter.cost,
            wall_s=time.perf_counter() - start,
            calls=meter.calls,
        )
        return Candidate(
            task.output_dir,
            usage,
            status=status,
            reason=reason,
            candidate_index=task.candidate_index,
            agent=self.name,
        )

    async def generate(self, task: Task) -> Candidate:
        """Run the function once into ``task.output_dir``."""
        return await self._call(task, {})

    async def revise(
        self, task: Task, candidate: Candidate, feedback: Feedback | str, editable_fields: Sequence[str]
    ) -> Candidate:
        """Copy the candidate into ``task.output_dir`` ; rerun the function if it takes feedback."""
        if Path(candidate.output_dir).is_dir() and Path(candidate.output_dir) != task.output_dir:
            shutil.copytree(candidate.output_dir, task.output_dir, dirs_exist_ok=True)
        if not self._accepts("feedback"):
            log.info("%s takes no feedback; the revision of %s is an unchanged copy", self.name, task.name)
            return Candidate(task.output_dir, Usage(), candidate_index=task.candidate_index, agent=self.name)
        text = feedback.render() if isinstance(feedback, Feedback) else str(feedback)
        return await self._call(
            task,
            {
                "feedback": text,
                "editable_fields": list(editable_fields),
                "previous_dir": candidate.output_dir,
            },
        )


def from_callable(fn: AgentFn, *, model: str, name: str | None = None, **kwargs: Any) -> CallableAgent:
    """Wrap ``async fn(task_dir, out_dir, model, **kw) -> None`` as a protocol `Agent` (see `CallableAgent`).

    Args:
        fn: The agent function; it writes ``out_dir`` (the ``agent1_data_organization`` folder).
        model: The LiteLLM model string.
        name: Display name.
        **kwargs: Passed to every call.

    Returns:
        The agent.
    """
    return CallableAgent(fn, model=model, name=name, **kwargs)

"""The LiteLLM judge: one model call per sample, answered through the ``choose_candidate`` tool.

The call goes through the same `ModelClient` as the agent (LiteLLM, retries on transient errors, the SQLite
request cache, LiteLLM's price or ours), so a judged run rerun spends nothing and a judge's tokens and dollars
are priced like the candidates'. An answer that is not one valid tool call naming a candidate number is
returned as ``choice=None`` with the reason; the selector then falls back and counts it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from agents.base import Usage
from agents.budget import Budget, BudgetExceeded
from agents.judge import CHOOSE_TOOL, JudgeAnswer, JudgeRequest
from agents.model.cache import sampling_seed
from agents.model.client import ModelClient
from agents.model.config import ModelConfig
from core.cli_errors import run_coroutine

T = TypeVar("T")

__all__ = ["JUDGE_SYSTEM", "LiteLLMJudge", "choose_tool"]

JUDGE_SYSTEM = (
    "You compare candidate standardizations of one raw medical sample (an image plus a JSON annotation in "
    "the MDS-Bench format). Judge which candidate is most likely correct: the right source file and slice, "
    "the right task type, dimension and labels, an image that shows the sample. Answer only by calling "
    f"{CHOOSE_TOOL} once with the candidate's number."
)


def choose_tool(choices: int) -> dict[str, Any]:
    """The tool definition the judge answers with (``candidate`` in ``1..choices``)."""
    return {
        "type": "function",
        "function": {
            "name": CHOOSE_TOOL,
            "description": "Pick the best candidate for this sample.",
            "parameters": {
                "type": "object",
                "properties": {
                    # An enum, not minimum/maximum: llama.cpp's grammar converter reads enums and ignores
                    # integer bounds, and SmolLM2 answered "candidate 5" of 2 under the bounds alone.
                    "candidate": {"type": "integer", "enum": list(range(1, choices + 1))},
                    # Bounded: a server that turns the schema into a grammar then ends a rambling reason.
                    "reason": {"type": "string", "maxLength": 300, "description": "One sentence."},
                },
                "required": ["candidate"],
            },
        },
    }


class LiteLLMJudge:
    """A judge over any LiteLLM model string.

    The config gives the fields of `ModelConfig` flat beside the judge's own (``judge.model``,
    ``judge.concurrency``): `core.registry.call_with_options` builds it.

    Args:
        model: The model, its endpoint, key, retries, cache (shared with the agent's is fine) and price. Of
            its ``server`` block only the ``slots`` are used: they bound the verdicts in flight to the
            endpoint together with the agent's own calls.
        temperature: Sampling temperature (0: the same request gives the same verdict).
        max_tokens_per_call: Completion token cap of a verdict.
        vision: Send the composite image (False: text only, for a text model).
        name: The label of the judge's usage in the tables (default ``litellm:<model>``).
        budget: The run's budget, checked before each verdict and charged after it (None: unlimited).
        concurrency: Verdicts of one dataset in flight at once (`judge_many`); 1 asks them one by one.

    Raises:
        ValueError: ``concurrency`` below 1, or an unknown model string.
    """

    def __init__(
        self,
        model: ModelConfig,
        *,
        temperature: float = 0.0,
        max_tokens_per_call: int = 256,
        vision: bool = True,
        name: str | None = None,
        budget: Budget | None = None,
        concurrency: int = 4,
    ) -> None:
        if int(concurrency) < 1:
            raise ValueError(f"judge.concurrency must be 1 or more, got {concurrency}")
        self.client = ModelClient(model, slots=getattr(model.server, "slots", None))
        self.model = model.model
        self.temperature = float(temperature)
        self.max_tokens_per_call = int(max_tokens_per_call)
        self.vision = bool(vision)
        self.name = name or f"litellm:{model.model}"
        self.budget = budget
        self.concurrency = int(concurrency)
        #: Whether a verdict's cost is known (LiteLLM's price map or ``price``): ``run.budget_usd`` needs it.
        self.priced = self.client.priced
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Make verdicts asked from worker threads run on ``loop`` (the run's event loop)."""
        self._loop = loop

    def messages(self, request: JudgeRequest) -> list[dict[str, Any]]:
        """The chat messages of one verdict (text, then the composite image for a vision model)."""
        content: list[dict[str, Any]] = [{"type": "text", "text": request.text}]
        if self.vision and request.image_png is not None:
            url = "data:image/png;base64," + base64.b64encode(request.image_png).decode("ascii")
            content.append({"type": "image_url", "image_url": {"url": url}})
        return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": content}]

    def judge(self, request: JudgeRequest) -> JudgeAnswer:
        """Ask the model (or the cache) for a verdict; never raises for a bad answer or a failed call."""
        return self._run(self._ask(request))

    def judge_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeAnswer]:
        """Ask for several verdicts at once, at most ``concurrency`` in flight (a dataset's samples).

        Args:
            requests: The samples to judge.

        Returns:
            One answer per request, in order (as `judge` would give each).
        """
        gate = asyncio.Semaphore(self.concurrency)

        async def one(request: JudgeRequest) -> JudgeAnswer:
            async with gate:  # the budget is checked when a slot is free, so queued verdicts see it
                return await self._ask(request)

        async def every() -> list[JudgeAnswer]:
            return list(await asyncio.gather(*(one(r) for r in requests)))

        return self._run(every())

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        loop = self._loop
        if loop is not None and loop.is_running() and not _in_loop(loop):
            # Selectors run in worker threads while the run's loop awaits them; the calls run on that loop,
            # where LiteLLM's own workers (logging, HTTP clients) already live.
            return asyncio.run_coroutine_threadsafe(work, loop).result()
        return run_coroutine(work)

    async def _ask(self, request: JudgeRequest) -> JudgeAnswer:
        if self.budget is not None:
            try:
                self.budget.check()
            except BudgetExceeded as exc:  # no verdict is started once the run's money is spent
                return JudgeAnswer(None, exc.reason, Usage(), stopped=True)
        start = time.perf_counter()
        # The run's seed reaches the provider and the cache key: each seed of a sweep gets its own verdicts.
        # The one tool is forced (a named tool_choice): a model that would answer in prose (a small local
        # model, whose server then constrains the answer to the tool's schema) still gives a verdict.
        params = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens_per_call,
            "seed": sampling_seed(request.seed, 0),
            "tool_choice": {"type": "function", "function": {"name": CHOOSE_TOOL}},
        }
        try:
            reply = await self.client.complete(
                self.messages(request), [choose_tool(request.choices)], params, 0
            )
        except Exception as exc:  # a provider failure on one sample falls back; it must not lose the dataset
            wall = time.perf_counter() - start
            return JudgeAnswer(None, f"judge call failed: {type(exc).__name__}: {exc}", Usage(wall_s=wall))
        usage = reply.usage(wall_s=reply.latency_s)
        if self.budget is not None and not reply.cached:  # a cache hit costs nothing in this run
            self.budget.charge(reply.prompt_tokens + reply.completion_tokens, reply.cost_usd)
        choice, reason = parse_choice(reply.message, request.choices)
        return JudgeAnswer(choice, reason, usage, charged=self.budget is not None)


def parse_choice(message: Mapping[str, Any], choices: int) -> tuple[int | None, str]:
    """``(choice, reason)``: the 1-based candidate (of ``choices``) a reply names through ``choose_candidate``
    and its reason, or None and why not.
    """
    calls = [c for c in message.get("tool_calls") or [] if c.get("function", {}).get("name") == CHOOSE_TOOL]
    if len(calls) != 1:
        return None, f"expected one {CHOOSE_TOOL} call, got {len(calls)}"
    try:
        # strict=False: a raw newline inside the reason (small models write them) does not void the verdict.
        args = json.loads(calls[0]["function"].get("arguments") or "{}", strict=False)
        value = args["candidate"]
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise TypeError(type(value).__name__)
        choice = int(value)
    except (ValueError, TypeError, KeyError) as exc:
        return None, f"unreadable {CHOOSE_TOOL} arguments ({type(exc).__name__}: {exc})"
    if not 1 <= choice <= choices:
        return None, f"candidate {choice} is not one of 1..{choices}"
    return choice, str(args.get("reason") or "")[:300]


def _in_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:  # no loop in this thread
        return False

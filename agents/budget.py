"""The run's budget in tokens and/or US dollars: one object, handed explicitly to everything that spends.

One `Budget` exists per run. `experiments.run.plan.build_components` creates it and hands it to every agent
and judge whose constructor takes a ``budget`` argument; the runner holds the same object.
Two ways of spending are counted, once each:

- **per model call**: an agent (or judge) that holds the budget calls `Budget.check` before each model call
  and `Budget.charge` after it (cache hits cost nothing and are not charged);
- **per candidate**: before each agent call the runner asks `Budget.exhausted`; a candidate made by an agent
  that charged nothing per call (the ``rules`` agent, a plug-in that takes no budget) is charged with its
  `Usage` when it finishes. The runner tells the two apart with `Budget.tally`: it opens one around each
  agent call, and a check or charge made inside it (in the same task, or a task or thread it started with
  its context, as ``asyncio.gather`` and ``asyncio.to_thread`` do) marks the candidate as charged per call.

Where the counts live is the `Ledger`: `LocalLedger` in one process, a shared-memory ledger
(`experiments.run.processes.SharedLedger`) across the worker processes of ``run.processes=N``; the rules above
are this class's in both cases. A call already in flight when the budget runs out is still charged, so a run
overshoots by at most the calls in flight.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Budget", "BudgetExceeded", "BudgetState", "Ledger", "LocalLedger", "Tally"]


class BudgetExceeded(RuntimeError):
    """The run's budget is spent; the candidate stops cleanly with what it wrote.

    Args:
        reason: Which limit was hit and by how much.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class BudgetState:
    """A snapshot of what was spent.

    Attributes:
        tokens: Tokens charged so far (cache hits are free and not charged).
        usd: Dollars charged so far.
    """

    tokens: int
    usd: float


class Ledger(Protocol):
    """Where a budget's spend and its hit flag are kept (one process, or shared memory)."""

    def add(self, tokens: int, usd: float) -> None:
        """Add spend."""

    def read(self) -> tuple[int, float]:
        """The ``(tokens, dollars)`` spent, as one snapshot."""

    def get_hit(self) -> bool:
        """Whether something found the budget spent."""

    def set_hit(self) -> None:
        """Record that something found the budget spent."""


class LocalLedger:
    """A `Ledger` for one process (thread-safe)."""

    def __init__(self) -> None:
        self._tokens = 0
        self._usd = 0.0
        self._hit = False
        self._lock = threading.Lock()

    def add(self, tokens: int, usd: float) -> None:
        with self._lock:
            self._tokens += int(tokens)
            self._usd += float(usd)

    def read(self) -> tuple[int, float]:
        with self._lock:
            return self._tokens, self._usd

    def get_hit(self) -> bool:
        return self._hit

    def set_hit(self) -> None:
        self._hit = True


class Tally:
    """What happened to the budget during one agent call (see `Budget.tally`).

    Attributes:
        per_call: Something checked or charged the budget per model call inside it.
    """

    __slots__ = ("budget", "per_call")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.per_call = False


_TALLY: contextvars.ContextVar[Tally | None] = contextvars.ContextVar("medstrat_budget_tally", default=None)


class Budget:
    """A run's spending limits and what was spent against them.

    Args:
        max_tokens: Stop once this many tokens were spent (None: no token limit).
        max_usd: Stop once this many dollars were spent (None: no dollar limit).
        ledger: Where the spend is kept (default: this process only).

    Raises:
        ValueError: A limit is negative.
    """

    def __init__(
        self, max_tokens: int | None = None, max_usd: float | None = None, ledger: Ledger | None = None
    ) -> None:
        if (max_tokens is not None and max_tokens < 0) or (max_usd is not None and max_usd < 0):
            raise ValueError(f"budget limits must be >= 0, got tokens={max_tokens} usd={max_usd}")
        self.max_tokens = max_tokens
        self.max_usd = max_usd
        self.ledger: Ledger = ledger if ledger is not None else LocalLedger()

    @property
    def spent(self) -> BudgetState:
        """What was charged so far (by every process sharing the ledger)."""
        tokens, usd = self.ledger.read()
        return BudgetState(tokens=tokens, usd=usd)

    @property
    def exhausted(self) -> bool:
        """True once a limit was reached (asking does not mark the budget as hit)."""
        return self._over(self.spent) is not None

    @property
    def hit(self) -> bool:
        """Whether a call was refused, or a candidate cut short, because the budget was spent."""
        return self.ledger.get_hit()

    def mark_hit(self) -> None:
        """Record that the budget stopped work (the run is then incomplete)."""
        self.ledger.set_hit()

    def check(self) -> None:
        """Raise before a model call once the budget is spent (and record that it stopped work).

        Raises:
            BudgetExceeded: Tokens or dollars reached their limit.
        """
        self._note_per_call()
        reason = self._over(self.spent)
        if reason is not None:
            self.mark_hit()
            raise BudgetExceeded(reason)

    def charge(self, tokens: int, usd: float) -> None:
        """Record what one model call spent.

        Args:
            tokens: Prompt plus completion tokens.
            usd: Dollars.
        """
        self._note_per_call()
        self.ledger.add(int(tokens), float(usd))

    def charge_candidate(self, tally: Tally, tokens: int, usd: float) -> None:
        """Charge a finished agent call's usage unless its agent already charged it per model call.

        Args:
            tally: The tally opened around the call (`tally`).
            tokens: The candidate's total tokens.
            usd: The candidate's dollars.
        """
        if not tally.per_call:
            self.ledger.add(int(tokens), float(usd))

    @contextlib.contextmanager
    def tally(self) -> Iterator[Tally]:
        """Open a tally around one agent call (see the module docstring)."""
        tally = Tally(self)
        token = _TALLY.set(tally)
        try:
            yield tally
        finally:
            _TALLY.reset(token)

    def _note_per_call(self) -> None:
        tally = _TALLY.get()
        if tally is not None and tally.budget is self:
            tally.per_call = True

    def _over(self, spent: BudgetState) -> str | None:
        if self.max_tokens is not None and spent.tokens >= self.max_tokens:
            return f"run budget of {self.max_tokens} tokens spent ({spent.tokens} used)"
        if self.max_usd is not None and spent.usd >= self.max_usd:
            return f"run budget of ${self.max_usd:.4f} spent (${spent.usd:.4f} used)"
        return None

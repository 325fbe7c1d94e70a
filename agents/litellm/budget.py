"""A per-run budget in tokens and/or US dollars, shared by every candidate of a run.

The agent calls `Budget.check` before each model call and `Budget.charge` after it; a call already in flight
when the budget runs out is still charged, so a run overshoots by at most the calls in flight.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["Budget", "BudgetExceeded", "BudgetState"]


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


class Budget:
    """Thread-safe spending limits for one run.

    Args:
        max_tokens: Stop once this many tokens were spent (None: no token limit).
        max_usd: Stop once this many dollars were spent (None: no dollar limit).

    Raises:
        ValueError: A limit is negative.
    """

    def __init__(self, max_tokens: int | None = None, max_usd: float | None = None) -> None:
        if (max_tokens is not None and max_tokens < 0) or (max_usd is not None and max_usd < 0):
            raise ValueError(f"budget limits must be >= 0, got tokens={max_tokens} usd={max_usd}")
        self.max_tokens = max_tokens
        self.max_usd = max_usd
        self._tokens = 0
        self._usd = 0.0
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise if the budget is already spent.

        Raises:
            BudgetExceeded: Tokens or dollars reached their limit.
        """
        spent = self.spent  # one consistent snapshot (a subclass may keep it elsewhere, e.g. shared memory)
        if self.max_tokens is not None and spent.tokens >= self.max_tokens:
            raise BudgetExceeded(f"run budget of {self.max_tokens} tokens spent ({spent.tokens} used)")
        if self.max_usd is not None and spent.usd >= self.max_usd:
            raise BudgetExceeded(f"run budget of ${self.max_usd:.4f} spent (${spent.usd:.4f} used)")

    def charge(self, tokens: int, usd: float) -> None:
        """Record what a call spent.

        Args:
            tokens: Prompt plus completion tokens.
            usd: Dollars.
        """
        with self._lock:
            self._tokens += int(tokens)
            self._usd += float(usd)

    @property
    def spent(self) -> BudgetState:
        """What was charged so far."""
        with self._lock:
            return BudgetState(tokens=self._tokens, usd=self._usd)

"""Live progress of a run on stderr: datasets done, candidates made, tokens and dollars spent (tqdm)."""

from __future__ import annotations

import sys
import threading

from tqdm import tqdm

from agents.base import Candidate

__all__ = ["Progress"]


class Progress:
    """A tqdm bar over datasets with candidates, tokens and USD in its postfix.

    Args:
        total: Datasets in the run.
        enabled: False silences it (tests, batch jobs).
    """

    def __init__(self, total: int, *, enabled: bool = True) -> None:
        self._lock = threading.Lock()
        self.candidates, self.tokens, self.usd, self.reused = 0, 0, 0.0, 0
        self._bar = tqdm(
            total=total,
            unit="dataset",
            desc="datasets",
            file=sys.stderr,
            disable=not enabled,
            dynamic_ncols=True,
        )

    def candidate_done(self, candidate: Candidate) -> None:
        """Count one finished candidate and its usage."""
        with self._lock:
            self.candidates += 1
            self.tokens += candidate.usage.total_tokens
            self.usd += candidate.usage.cost_usd
            self._refresh()

    def dataset_done(self, name: str, *, reused: bool = False) -> None:
        """Count one finished dataset (``reused``: taken from a previous run)."""
        with self._lock:
            self.reused += int(reused)
            self._bar.update(1)
            self._refresh()

    def _refresh(self) -> None:
        self._bar.set_postfix(
            candidates=self.candidates,
            tokens=self.tokens,
            usd=f"{self.usd:.4f}",
            resumed=self.reused,
            refresh=False,
        )

    def close(self) -> None:
        """Close the bar."""
        self._bar.close()

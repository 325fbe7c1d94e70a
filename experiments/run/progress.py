"""Live progress of a run on stderr: datasets done, candidates made, tokens and dollars spent (tqdm)."""

from __future__ import annotations

import sys
import threading

from tqdm import tqdm

from agents.base import Candidate

__all__ = ["Progress"]


class _Bar(tqdm):  # type: ignore[misc]  # tqdm ships no type information
    """tqdm without its monitor thread.

    tqdm starts a thread, on the first bar, that lives as long as the process; it only helps bars whose
    ``miniters`` grew above 1, which ours never does (``miniters=1``). A thread left alive would keep the run
    from sharing its scoring with forks of the process (`benchmark.score.forked` forks only when this
    thread is the only one).
    """

    monitor_interval = 0


class Progress:
    """A tqdm bar over datasets with candidates, tokens and USD in its postfix.

    Args:
        total: Datasets in the run.
        enabled: False silences it (tests, batch jobs).
    """

    def __init__(self, total: int, *, enabled: bool = True) -> None:
        self._lock = threading.Lock()
        self.candidates, self.tokens, self.usd, self.reused = 0, 0, 0.0, 0
        self._bar = _Bar(
            total=total,
            miniters=1,
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

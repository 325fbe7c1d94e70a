"""The oracle best-of-n upper bound of a run: per sample, did *any* generated candidate pass E2E? (ground
truth, through the scorer; an analysis number, never a strategy result)."""

from __future__ import annotations

import logging
from pathlib import Path

from agents.base import OUTPUT_SUBDIR
from benchmark.score.dataset import e2e_pass
from benchmark.score.evaluate import score_candidate

__all__ = ["oracle_upper_bound"]

log = logging.getLogger(__name__)


def oracle_upper_bound(run_dir: Path) -> float | None:
    """Macro E2E if every sample took its best generated candidate; None when the run kept fewer than 2.

    Args:
        run_dir: A run folder with ``candidates/<dataset>/<k>/`` and
        ``export/<dataset>/VLM/ground_truth*.json``.

    Returns:
        The macro upper bound, or None.
    """
    per_dataset = []
    for ds_dir in sorted(p for p in (run_dir / "candidates").glob("*") if p.is_dir()):
        generated = sorted(p for p in ds_dir.iterdir() if p.name.isdigit() and (p / OUTPUT_SUBDIR).is_dir())
        if len(generated) < 2:
            continue
        best: dict[str, bool] = {}
        root = run_dir / "export" / ds_dir.name
        for cand in generated:
            scored = score_candidate(
                cand / OUTPUT_SUBDIR, root, profile="official", unreadable_as_missing=True
            )
            if scored.error:
                log.warning("no oracle bound for %s: %s", ds_dir.name, scored.error)
                best = {}
                break
            for s in scored.per_sample:
                best[s.index] = best.get(s.index, False) or e2e_pass(s.to_dict())
        if best:
            per_dataset.append(sum(best.values()) / len(best))
    return sum(per_dataset) / len(per_dataset) if per_dataset else None

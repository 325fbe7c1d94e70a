"""The one reader of a run folder's files: what `experiments.run.results` and the run wrote, read back.

Every module that studies finished runs (the sweep loader, the report, pass@k, the budget-matched table,
the leaderboard, reselection) reads them through here, so a file's name and how a torn or missing file is
treated are decided once:

- `read_json`: for pages that show what is there: None (logged) when a file is missing or malformed;
- `json_or_empty`: ``{}`` when the file is absent, a malformed file raises (a table must not silently lose
  a run);
- `run_file` / `run_info`: a file every finished run has (``run.json``, ``usage.json``, ``metrics.json``):
  raises `OSError` / `ValueError` when it cannot;
- `read_samples`: ``samples.jsonl``, one scored sample per line.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

__all__ = [
    "CANDIDATES",
    "METRICS",
    "ROLES",
    "RUN_INFO",
    "SAMPLES",
    "USAGE",
    "json_or_empty",
    "read_json",
    "read_samples",
    "run_file",
    "run_info",
]

log = logging.getLogger(__name__)

RUN_INFO = "run.json"
"""What ran (strategy, datasets, the composed config, wall time)."""
USAGE = "usage.json"
METRICS = {"official": "metrics.json", "strict": "metrics_strict.json"}
"""The scorer's documents by profile."""
SAMPLES = "samples.jsonl"
ROLES = "roles.json"
CANDIDATES = "candidates"
"""``candidates/<dataset>/<k>/``: every stored candidate (what reselection and the leaderboard re-read)."""


def read_json(path: Path) -> Any:
    """Parse a JSON file; None (logged) when it is missing or malformed."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("report: cannot read %s: %s", path, exc)
        return None


def json_or_empty(path: Path) -> Any:
    """Parse a JSON file, ``{}`` when there is none (a malformed file raises `ValueError`)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def run_file(run_dir: Path, name: str) -> Any:
    """The JSON file ``name`` of a finished run (`FileNotFoundError` when the run wrote none)."""
    return json.loads((run_dir / name).read_text(encoding="utf-8"))


def run_info(run_dir: Path) -> Any:
    """``run.json`` of a finished run (`FileNotFoundError` for a folder that is none)."""
    return run_file(run_dir, RUN_INFO)


def read_samples(run_dir: Path, *, skip_torn: bool = False) -> list[Any]:
    """The rows of ``samples.jsonl`` (none when the file is absent).

    Args:
        run_dir: The run folder.
        skip_torn: Leave out lines that do not parse (the last line of a run killed while writing), so the
            rest still shows; otherwise such a line raises `ValueError`.
    """
    path = run_dir / SAMPLES
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            if not skip_torn:
                raise
    return rows

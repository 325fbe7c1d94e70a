"""A run folder holds one run, a sweep folder one sweep: a start into a folder that holds another is refused.

``hydra.run.dir`` is how a run is resumed, so a copied command line or a mistyped strategy would otherwise
write a second run over a finished one. Before anything is written (`experiments.callbacks.Preflight` calls
`claim_run_folder` before Hydra writes ``.hydra/``; `experiments.run.experiment.run_experiment` calls it again
for a sweep's job and a caller in Python), a folder that holds a run is accepted only for
``run.resume=true|force`` (the resume check then compares the configs). ``run.replace=true`` moves the old run
aside, to ``<folder>.replaced-<UTC time>``, and starts afresh in the emptied folder: nothing is deleted.

A folder holds a run when it holds one of `RUN_MARKERS`; a folder holding only a forecast (``run.dry_run``),
Hydra's ``.hydra/`` and log, or the lock file holds no results and is taken over.

Example:
    >>> claim_run_folder({"resume": False}, Path("runs/a"))  # doctest: +SKIP
    FolderHoldsRun: hydra.run.dir=runs/a holds a finished s3 run (started 2026-12-06 21:30:05 UTC); ...
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.atomic import read_json_or_none
from experiments.run.lock import refuse_if_busy
from experiments.run.resume import CONFIG_FILE, resume_mode

__all__ = [
    "RUN_MARKERS",
    "FolderHoldsRun",
    "HeldRun",
    "claim_run_folder",
    "claim_sweep_folder",
    "held_run",
    "replace_mode",
]

RUN_MARKERS = (CONFIG_FILE, "run.json", "metrics.json", "candidates", "selected")
"""Entries whose presence means a run started in the folder (``config.json`` is its first write)."""

SWEEP_FILE = "multirun.yaml"
"""Hydra's record of a sweep's command line, in the sweep folder."""


class FolderHoldsRun(ValueError):
    """The run or sweep folder holds another run (one line: what it holds and the ways on; exit 2)."""


@dataclass(frozen=True)
class HeldRun:
    """What a run folder holds.

    Attributes:
        folder: The run folder.
        strategy: The strategy it ran (``run.json``, else ``config.json``); None when neither says.
        started: When its first start stored its config (None: no ``config.json``).
        finished: It wrote ``run.json`` (its last write), so it ended rather than stopped.
    """

    folder: Path
    strategy: str | None
    started: datetime | None
    finished: bool

    def describe(self) -> str:
        """The run in a few words, e.g. ``a finished s3 run (started 2026-12-06 21:30:05 UTC)``."""
        state = "a finished" if self.finished else "an unfinished"
        what = f"{state} {self.strategy} run" if self.strategy else f"{state} run"
        if self.started is not None:
            what += f" (started {self.started:%Y-%m-%d %H:%M:%S} UTC)"
        return what


def _json(path: Path) -> dict[str, Any]:
    data = read_json_or_none(path)  # a torn or unreadable file still means a run was there
    return data if isinstance(data, dict) else {}


def held_run(run_dir: Path) -> HeldRun | None:
    """Describe the run ``run_dir`` holds (reads only).

    Args:
        run_dir: The run folder.

    Returns:
        The run, or None when the folder is missing or holds none of `RUN_MARKERS`.
    """
    if not any((run_dir / name).exists() or (run_dir / name).is_symlink() for name in RUN_MARKERS):
        return None
    info = _json(run_dir / "run.json")
    config = _json(run_dir / CONFIG_FILE) or info.get("config") or {}
    strategy = info.get("strategy")
    if not strategy and isinstance(config.get("strategy"), dict):
        strategy = config["strategy"].get("name")
    started = None
    stamp = run_dir / CONFIG_FILE
    if stamp.is_file():
        started = datetime.fromtimestamp(stamp.stat().st_mtime, UTC)
    return HeldRun(run_dir, str(strategy) if strategy else None, started, (run_dir / "run.json").is_file())


def replace_mode(run: Mapping[str, Any]) -> bool:
    """``run.replace``: move a run the folder holds aside before starting.

    Args:
        run: The ``run`` node.

    Returns:
        Whether to replace.

    Raises:
        ValueError: Not a boolean, or together with ``run.resume`` (continue a run or replace it, not both).
    """
    value = run.get("replace", False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError(f"run.replace={value!r}: expected true or false")
    if value and resume_mode(run)[0]:
        raise ValueError("run.replace=true and run.resume: continue the run or replace it, not both")
    return value


def _aside(folder: Path) -> Path:
    """A free ``<folder>.replaced-<UTC time>`` beside ``folder``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = folder.with_name(f"{folder.name}.replaced-{stamp}")
    n = 1
    while target.exists() or target.is_symlink():
        target = folder.with_name(f"{folder.name}.replaced-{stamp}-{n}")
        n += 1
    return target


def _ways_on(option: str, folder: Path) -> str:
    return (
        f"continue it with run.resume=true (same config), pick another {option}, or pass run.replace=true "
        f"to move it aside to {folder}.replaced-<time> and start afresh"
    )


def claim_run_folder(run: Mapping[str, Any], run_dir: Path) -> Path | None:
    """Accept ``run_dir`` for this start, or refuse it; with ``run.replace=true`` move the old run aside.

    Nothing is written unless the old run is moved (one rename, in the same parent folder).

    Args:
        run: The ``run`` node of this start.
        run_dir: The run folder.

    Returns:
        Where the old run was moved (``run.replace=true``), else None.

    Raises:
        RunFolderBusy: A live process holds the folder's lock (a run is going on there).
        FolderHoldsRun: The folder holds a run and this start neither resumes nor replaces it.
        ValueError: A bad ``run.resume`` or ``run.replace`` value.
    """
    resume, _ = resume_mode(run)
    replace = replace_mode(run)
    refuse_if_busy(run_dir)  # first: a run going on there is named by its pid, not described as unfinished
    if _sweep_jobs(run_dir):  # a sweep's folder: a run there would file itself among the sweep's jobs
        raise FolderHoldsRun(
            f"hydra.run.dir={run_dir} holds {_describe_sweep(run_dir)}; pick another hydra.run.dir"
        )
    held = held_run(run_dir)
    if held is None or resume:
        return None
    if not replace:
        raise FolderHoldsRun(
            f"hydra.run.dir={run_dir} holds {held.describe()}; {_ways_on('hydra.run.dir', run_dir)}"
        )
    target = _aside(run_dir)
    os.replace(run_dir, target)  # a rename: the old run keeps every byte, under its new name
    return target


def _sweep_jobs(sweep_dir: Path) -> list[Path]:
    if not sweep_dir.is_dir():
        return []
    return sorted(p for p in sweep_dir.iterdir() if p.is_dir() and held_run(p) is not None)


def _describe_sweep(sweep_dir: Path) -> str:
    """``a sweep of 2 run(s) (s0, s3; 1 finished, started ... UTC)``."""
    held = [h for h in (held_run(j) for j in _sweep_jobs(sweep_dir)) if h is not None]
    strategies = ", ".join(sorted({h.strategy or "?" for h in held}))
    finished = sum(1 for h in held if h.finished)
    started = min((h.started for h in held if h.started is not None), default=None)
    when = f", started {started:%Y-%m-%d %H:%M:%S} UTC" if started is not None else ""
    return f"a sweep of {len(held)} run(s) ({strategies}; {finished} finished{when})"


def _sweep_overrides(sweep_dir: Path) -> list[str] | None:
    """The task overrides ``multirun.yaml`` records (None when it is missing or unreadable)."""
    import yaml

    try:
        data = yaml.safe_load((sweep_dir / SWEEP_FILE).read_text(encoding="utf-8"))
        task = data["hydra"]["overrides"]["task"]
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError):
        return None
    return [str(o) for o in task] if isinstance(task, list) else None


def _same_sweep(stored: list[str] | None, current: Sequence[str]) -> bool:
    def key(overrides: Sequence[str]) -> list[str]:
        # How the sweep was started or continued, not what it runs.
        skip = ("run.resume=", "+run.resume=", "run.replace=", "+run.replace=", "hydra.sweep.dir=")
        return sorted(o for o in overrides if not o.startswith(skip))

    return stored is not None and key(stored) == key(current)


def claim_sweep_folder(run: Mapping[str, Any], overrides: Sequence[str], sweep_dir: Path) -> Path | None:
    """Accept ``sweep_dir`` for this sweep, or refuse it; with ``run.replace=true`` move the old sweep aside.

    A sweep folder holds a sweep when one of its sub-folders holds a run. It is accepted for
    ``run.resume=true|force`` with the same overrides (the same sweep, continued; each job's resume check then
    compares its config), so the ablation table never mixes two sweeps and ``multirun.yaml`` keeps describing
    the jobs beside it.

    Args:
        run: The ``run`` node of the sweep's config.
        overrides: The sweep's task overrides (``hydra.overrides.task``).
        sweep_dir: ``hydra.sweep.dir``.

    Returns:
        Where the old sweep was moved (``run.replace=true``), else None.

    Raises:
        FolderHoldsRun: The folder holds another sweep (or this one, neither resumed nor replaced).
        ValueError: A bad ``run.resume`` or ``run.replace`` value.
    """
    resume, _ = resume_mode(run)
    replace = replace_mode(run)
    held = held_run(sweep_dir)
    if held is not None:  # a single run's folder: the sweep's jobs would land inside it
        raise FolderHoldsRun(
            f"hydra.sweep.dir={sweep_dir} holds {held.describe()}; pick another hydra.sweep.dir"
        )
    if not _sweep_jobs(sweep_dir):
        return None
    stored = _sweep_overrides(sweep_dir)
    if resume and _same_sweep(stored, overrides):
        return None
    if not replace:
        what = _describe_sweep(sweep_dir)
        if resume:
            shown = " ".join(stored) if stored is not None else "unknown overrides"
            raise FolderHoldsRun(
                f"hydra.sweep.dir={sweep_dir} holds {what} started with other overrides ({shown}); resume "
                "with the same overrides, pick another hydra.sweep.dir, or pass run.replace=true to move it "
                f"aside to {sweep_dir}.replaced-<time> and start afresh"
            )
        raise FolderHoldsRun(
            f"hydra.sweep.dir={sweep_dir} holds {what}; {_ways_on('hydra.sweep.dir', sweep_dir)}"
        )
    target = _aside(sweep_dir)
    os.replace(sweep_dir, target)
    return target

"""Resume safety: a run folder continues only with the config that started it.

``run.resume=true hydra.run.dir=<run>`` reuses finished candidates and datasets; doing so under another
strategy, agent, reviser, judge, validator, selector, candidate count, seed or benchmark would label old
results with the new config. The first start of a run stores the composed config in ``<run>/config.json``; a
resume compares the new config with it and refuses (exit 2) listing the keys that differ.
``run.resume=force`` skips the check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.atomic import atomic_write_json
from validator.values import get_path

if TYPE_CHECKING:
    from experiments.run.plan import RunSettings

__all__ = [
    "COMPARED",
    "CONFIG_FILE",
    "ResumeMismatch",
    "check_resume",
    "config_diff",
    "resume_mode",
    "store_config",
]

CONFIG_FILE = "config.json"
"""The composed config of the run's first start (``run.json`` of an older run is read as a fallback)."""

COMPARED = ("strategy", "agent", "reviser", "judge", "validator", "selector", "benchmark", "run.seed")
"""Config nodes that decide what a finished candidate or dataset means (the reviser made its revisions, the
judge its decisions: resuming under another would mix two roles under one label)."""


class ResumeMismatch(ValueError):
    """A resume under a config that differs from the stored one (the message lists the differing keys)."""


def resume_mode(run: Mapping[str, Any]) -> tuple[bool, bool]:
    """``run.resume`` as ``(resume, force)``: ``true`` resumes with the check, ``force`` without it.

    Args:
        run: The ``run`` node (`experiments.run.plan.RunSettings.run`).

    Returns:
        Whether to resume and whether to skip the config check.

    Raises:
        ValueError: A value other than true, false or force.
    """
    value = run.get("resume", False)
    if isinstance(value, bool) or value is None:
        return bool(value), False
    if str(value).lower() == "force":
        return True, True
    raise ValueError(f"run.resume={value!r}: expected true, false or force")


def _flatten(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(_flatten(sub, f"{prefix}.{key}"))
        return out
    return {prefix: value}


def config_diff(stored: dict[str, Any], current: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The `COMPARED` keys whose values differ, flattened to dotted leaves.

    Args:
        stored: The config the run started with (plain dict).
        current: The config of this start.

    Returns:
        ``{dotted key: (stored value, current value)}``; a key missing on one side shows as None.
    """
    out: dict[str, tuple[Any, Any]] = {}
    for node in COMPARED:
        old, new = _flatten(get_path(stored, node), node), _flatten(get_path(current, node), node)
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                out[key] = (old.get(key), new.get(key))
    return out


def _stored(run_dir: Path) -> dict[str, Any] | None:
    for path, key in ((run_dir / CONFIG_FILE, None), (run_dir / "run.json", "config")):
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            found = data.get(key) if key else data
            if isinstance(found, dict):
                return found
    return None


def check_resume(settings: RunSettings, run_dir: Path) -> None:
    """Refuse to resume ``run_dir`` under a config that differs from the one it was started with.

    Args:
        settings: The settings of this start (its config, plain).
        run_dir: The run folder.

    Raises:
        ResumeMismatch: The compared keys differ (the message lists them and names ``run.resume=force``).
    """
    resume, force = resume_mode(settings.run)
    if not resume or force:
        return
    stored = _stored(run_dir)
    if stored is None:
        return  # a folder never started (or started before configs were stored): nothing to contradict
    diff = config_diff(stored, dict(settings.config))
    if diff:
        shown = "; ".join(f"{k}: {a!r} → {b!r}" for k, a, b in ((k, *v) for k, v in diff.items()))
        raise ResumeMismatch(
            f"run.resume: {run_dir} was started with another config ({shown}); resume with the same "
            "overrides, or pass run.resume=force to reuse its finished work anyway"
        )


def store_config(settings: RunSettings, run_dir: Path) -> None:
    """Write ``config.json`` at a run's first start (a resume keeps the original).

    Args:
        settings: The run's settings (its config, plain).
        run_dir: The run folder.
    """
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        # `tracking` says where the results are copied, not what they are: a run logged to MLflow keeps the
        # config.json of the same run without tracking, byte for byte (experiments/tracking).
        atomic_write_json(path, {k: v for k, v in settings.config.items() if k != "tracking"})

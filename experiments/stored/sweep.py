"""The runs of a sweep folder, read once: `RunData` per run, `load_runs`, and `groups` of repeats.

What the ablation tables (`experiments.analysis.ablation`), the budget-matched comparison
(`experiments.analysis.budget_matched`) and the sweep report read; a module of its own so that those never
import each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.stored.run_folder import RUN_INFO, USAGE, json_or_empty, read_samples, run_file

__all__ = ["RunData", "groups", "load_runs"]


@dataclass
class RunData:
    """One finished run of the sweep, as read back from its folder.

    Attributes:
        strategy: The strategy name (``run.json``).
        run_dir: The run folder.
        metrics: ``metrics.json``.
        usage: ``usage.json``.
        samples: ``samples.jsonl`` rows.
        seed: ``run.seed`` of the run (None when unknown).
        wall_s: The run's wall-clock seconds (``run.json``).
        label: The row the run belongs to: the strategy plus the sweep overrides that distinguish it from the
            other runs (never the seed: runs that differ only by seed are repeats of one row).
    """

    strategy: str
    run_dir: Path
    metrics: dict[str, Any]
    usage: dict[str, Any]
    samples: list[dict[str, Any]] = field(default_factory=list)
    seed: int | None = None
    wall_s: float | None = None
    label: str = ""
    agent: str = ""

    @property
    def incomplete(self) -> bool:
        """The run stopped early (budget) or lost a dataset."""
        return bool(self.metrics.get("incomplete"))

    def cost(self) -> dict[str, float]:
        """What the run spent: agent invocations (``candidates``), model ``calls``, ``prompt_tokens``,
        ``completion_tokens``, ``USD`` and its wall-clock seconds (``wall_s``)."""
        total = self.usage.get("total", {})
        return {
            "candidates": float(self.usage.get("candidates") or 0),
            "calls": float(total.get("calls") or 0),
            "prompt_tokens": float(total.get("prompt_tokens") or 0),
            "completion_tokens": float(total.get("completion_tokens") or 0),
            "USD": float(total.get("cost_usd") or 0.0),
            "wall_s": float(self.wall_s if self.wall_s is not None else total.get("wall_s") or 0.0),
        }

    def per_dataset(self, metric: str = "E2E") -> dict[str, float]:
        """Dataset → the metric (official profile)."""
        return {d: float(m[metric]) for d, m in self.metrics.get("datasets", {}).items()}


SEED_KEYS = ("run.seed",)
"""Overrides that make a repeat of the same configuration, not a new row."""


def _overrides(run_dir: Path) -> list[str]:
    path = run_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return []
    import yaml

    return [str(o) for o in (yaml.safe_load(path.read_text(encoding="utf-8")) or [])]


def _labels(infos: Sequence[tuple[str, list[str]]]) -> list[str]:
    """Strategy + the overrides not shared by every run (seed and strategy overrides left out)."""

    def keep(o: str) -> bool:
        key = o.split("=", 1)[0].lstrip("+~")
        return key not in SEED_KEYS and key != "strategy"

    kept = [[o for o in ov if keep(o)] for _, ov in infos]
    common = set.intersection(*(set(k) for k in kept)) if kept else set()
    return [
        " ".join([name, *sorted(o for o in k if o not in common)])
        for (name, _), k in zip(infos, kept, strict=True)
    ]


def load_runs(sweep_dir: Path) -> list[RunData]:
    """Every run folder (holding ``metrics.json``) under ``sweep_dir``, sorted by label and seed."""
    runs = []
    infos = []
    for metrics_path in sorted(sweep_dir.rglob("metrics.json")):
        run_dir = metrics_path.parent
        info = json_or_empty(run_dir / RUN_INFO)
        samples = read_samples(run_dir)
        seed = ((info.get("config") or {}).get("run") or {}).get("seed")
        runs.append(
            RunData(
                str(info.get("strategy") or run_dir.name),
                run_dir,
                run_file(run_dir, metrics_path.name),
                json_or_empty(run_dir / USAGE),
                samples,
                int(seed) if seed is not None else None,
                float(info["wall_s"]) if info.get("wall_s") is not None else None,
                agent=_agent_name(info),
            )
        )
        infos.append((runs[-1].strategy, _overrides(run_dir) + _served(info)))
    for run, label in zip(runs, _labels(infos), strict=True):
        run.label = label
    return sorted(runs, key=lambda r: (r.label, r.seed if r.seed is not None else -1, str(r.run_dir)))


def _served(info: dict[str, Any]) -> list[str]:
    """``served=<identity>`` per role whose server served something the config's name does not say.

    Treated as an override in the row label: two runs of one command whose server swapped its weights between
    them (``agent=local`` names both ``openai/local``) are two rows, each naming its model.
    """
    out = []
    for entry in info.get("models") or []:
        served = entry.get("served") if isinstance(entry, dict) else None
        name = str(entry.get("model") or "").split("/", 1)[-1] if isinstance(entry, dict) else ""
        if served and served != f"ids={name}" and f"served={served}" not in out:
            out.append(f"served={served}")
    return out


def _agent_name(info: dict[str, Any]) -> str:
    agent = (info.get("config") or {}).get("agent") or {}
    return str(agent.get("_target_") or agent.get("name") or "") if isinstance(agent, dict) else ""


def groups(runs: Sequence[RunData]) -> dict[str, list[RunData]]:
    """Runs by label (one row of the ablation each), in label order."""
    out: dict[str, list[RunData]] = {}
    for run in runs:
        out.setdefault(run.label, []).append(run)
    return out

"""Combine the runs of a sharded job (``benchmark.shard=k/n``) into one set of metrics.

    medstrat merge RUN_DIR [RUN_DIR ...] --out MERGED_DIR

Per-dataset metrics are taken as they are (each dataset was scored in exactly one shard) and the macro is the
equal-weight mean over all of them, as the scorer computes it; ``samples.jsonl`` is concatenated, usage
summed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmark.score.constants import METRIC_NAMES
from core.atomic import atomic_write_json, atomic_write_text, read_json_or_none
from core.cli_errors import OneLineParser, cli_main, existing_dir
from experiments.run.results import PROFILES, format_table
from experiments.stored.run_folder import METRICS, USAGE, json_or_empty, run_file

__all__ = ["main", "merge_runs"]


def _merge_docs(docs: Sequence[dict[str, Any]], profile: str) -> dict[str, Any]:
    datasets: dict[str, dict[str, float]] = {}
    for doc in docs:
        for name, metrics in doc.get("datasets", {}).items():
            if name in datasets:
                raise ValueError(f"dataset {name} appears in two runs; shards must not overlap")
            datasets[name] = metrics
    merged: dict[str, Any] = {
        "profile": profile,
        "macro": {
            k: (statistics.mean(m[k] for m in datasets.values()) if datasets else None) for k in METRIC_NAMES
        },
        "datasets": dict(sorted(datasets.items())),
    }
    for flag in ("incomplete", "upper_bound", "simulation"):
        if any(d.get(flag) for d in docs):
            merged[flag] = True
    return merged


def merge_runs(run_dirs: Sequence[Path], out: Path) -> dict[str, dict[str, Any]]:
    """Merge shard runs into ``out`` (``metrics.json``, ``metrics_strict.json``, ``samples.jsonl``,
    ``usage.json``).

    Args:
        run_dirs: The shard run folders.
        out: The merged folder (created).

    Returns:
        ``{profile: merged metrics document}``.

    Raises:
        FileNotFoundError: A run folder lacks ``metrics.json``.
        ValueError: Two runs scored the same dataset, or ``out`` is a run folder or holds the merge of other
            runs (nothing is written).
    """
    for run in run_dirs:
        if not (run / "metrics.json").is_file():
            raise FileNotFoundError(f"{run}: no metrics.json (not a finished run folder)")
    _check_out(run_dirs, out)
    docs = {p: _merge_docs([run_file(r, METRICS[p]) for r in run_dirs], p) for p in PROFILES}
    out.mkdir(parents=True, exist_ok=True)
    for p in PROFILES:
        atomic_write_json(out / METRICS[p], docs[p])
    lines: list[str] = []
    for run in run_dirs:
        path = run / "samples.jsonl"
        if path.is_file():
            lines.extend(line for line in path.read_text(encoding="utf-8").splitlines() if line)
    atomic_write_text(out / "samples.jsonl", "".join(line + "\n" for line in lines))
    total: dict[str, float] = {}
    for run in run_dirs:
        for key, value in json_or_empty(run / USAGE).get("total", {}).items():
            total[key] = total.get(key, 0) + value
    atomic_write_json(out / "usage.json", {"total": total, "runs": [str(r) for r in run_dirs]})
    return docs


def _check_out(run_dirs: Sequence[Path], out: Path) -> None:
    """Refuse an ``--out`` whose files the merge would overwrite, unless they are this merge's own.

    A run folder (a shard itself, or any other run) would lose its ``metrics.json``; an earlier merge of
    other runs would lose its numbers. The same runs merged again rewrite the same files.
    """
    from experiments.run.folder import held_run

    usage = read_json_or_none(out / "usage.json")
    before = usage.get("runs") if isinstance(usage, dict) else None
    merge = isinstance(before, list) and not (out / "run.json").exists()  # what this command writes
    if any(out.resolve() == run.resolve() for run in run_dirs) or (held_run(out) is not None and not merge):
        raise ValueError(f"--out {out} is a run folder; merging there would overwrite its metrics.json")
    if not any((out / name).exists() for name in (*METRICS.values(), "samples.jsonl", "usage.json")):
        return
    same = isinstance(before, list) and {Path(str(r)).resolve() for r in before} == {
        r.resolve() for r in run_dirs
    }
    if not same:
        shown = ", ".join(str(r) for r in before) if isinstance(before, list) else "unknown runs"
        raise ValueError(
            f"--out {out} holds the merge of other runs ({shown}); pick another --out or move it away"
        )


@cli_main("medstrat merge", expected=(ValueError,))
def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit code (0 ok, 2 bad input; docs/cli.md)."""
    parser = OneLineParser(prog="medstrat merge", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="shard run folders")
    parser.add_argument(
        "--out", type=Path, default=None, help="merged folder (default: <first run>/../merged)"
    )
    args = parser.parse_args(argv)
    out = args.out or args.runs[0].parent / "merged"
    for run in args.runs:
        existing_dir("RUNS", run)
    docs = merge_runs(args.runs, out)
    print(format_table(docs, f"merged {len(args.runs)} runs · {len(docs['official']['datasets'])} datasets"))
    print(f"wrote {out}")
    return 0

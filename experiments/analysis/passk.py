"""How selection scales with n: pass@k, pass^k and selected@k curves of a stored S3 run.

    medstrat passk RUN [RUN ...] [--selectors a,b] [--validators evidence,mdsbench]
                                 [--max-subsets 256] [--out DIR]

For a dataset with n stored candidates and, per sample, ``c`` of them passing official E2E (ground truth,
through the scorer, as the oracle bound counts it), over all k-subsets of the n candidates (k = 1..n):

- ``pass@k``: some candidate of the subset passes; the unbiased estimator ``1 - C(n-c, k) / C(n, k)``
  (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1), which is exactly the mean
  over all subsets. It is the oracle best-of-k.
- ``pass^k``: every candidate of the subset passes, ``C(c, k) / C(n, k)`` (the reliability a user of one
  unselected candidate sees k times in a row).
- ``selected@k`` per selector and validator profile: the selector chooses among the subset's candidates
  (the very `strategies.selectors.choose` an S3 run calls, on the subset's validator reports) and the
  chosen candidate's sample passes. Exact enumeration of the subsets when there are at most
  ``--max-subsets`` of them, else that many distinct subsets sampled with a fixed seed.

Each value is a per-dataset mean over the dataset's samples (a sample no candidate of the subset wrote
fails), then a macro mean over datasets with a 95 % bootstrap CI resampling datasets (samples of a dataset
share its layout, so datasets are the unit, as in the ablation). ``selected@n`` is the per-sample E2E of the
candidate an S3 run keeps; it can differ slightly from the run's ``metrics.json``, which scores the
assembled folder (the patched ``data_meta.json``, the reference scorer's greedy index matching).

Validator reports come from the candidates' stored reports (`validator.report_store`), so the curves cost
no validation when the run stored them. Writes ``passk.csv``, ``passk.md`` and ``passk.png`` into
``--out`` (default ``<first RUN>/passk``).
"""

from __future__ import annotations

import itertools
import logging
import math
import random
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from benchmark.score.analysis import to_markdown
from benchmark.score.dataset import e2e_pass
from benchmark.score.evaluate import score_candidate
from core.atomic import atomic_write_text
from core.cli_errors import CliError, OneLineParser, cli_main, existing_dir
from experiments.publish.stats import bootstrap_ci
from experiments.publish.tables import write_csv
from experiments.selection.leaderboard import ReportCache, StoredDataset, _selector_names, load_stored
from experiments.selection.reselect import ReselectError
from experiments.stored.run_folder import run_info
from strategies.mechanics import stored_annotations
from strategies.selectors import build_selector, choose
from validator.report import Report

__all__ = [
    "DEFAULT_MAX_SUBSETS",
    "DatasetCurves",
    "candidate_passes",
    "curves_frame",
    "dataset_curves",
    "is_best_of_n_run",
    "pass_at_k",
    "pass_hat_k",
    "passk_curves",
    "subsets",
    "sweep_section",
    "write_passk",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_SUBSETS = 256
"""Above this many k-subsets, selected@k samples this many distinct subsets instead of enumerating them."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate from ``c`` passing of ``n``: ``1 - C(n-c, k) / C(n, k)``.

    Args:
        n: Candidates.
        c: Passing candidates (0 ≤ c ≤ n).
        k: Subset size (1 ≤ k ≤ n).

    Returns:
        The share of k-subsets holding at least one passing candidate.
    """
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the share of k-subsets whose candidates all pass, ``C(c, k) / C(n, k)``.

    Args:
        n: Candidates.
        c: Passing candidates.
        k: Subset size (1 ≤ k ≤ n).

    Returns:
        The share.
    """
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    return math.comb(c, k) / math.comb(n, k)


def subsets(n: int, k: int, max_subsets: int, seed: str) -> Iterator[tuple[int, ...]]:
    """The k-subsets of ``range(n)``: all of them, or ``max_subsets`` distinct ones drawn with ``seed``.

    Args:
        n: Candidates.
        k: Subset size.
        max_subsets: Enumerate when ``C(n, k)`` is at most this.
        seed: The sampling seed (a string: the dataset and k, so tables are reproducible).

    Yields:
        Sorted position tuples.
    """
    total = math.comb(n, k)
    if total <= max_subsets:
        yield from itertools.combinations(range(n), k)
        return
    rng = random.Random(seed)
    seen: set[tuple[int, ...]] = set()
    while len(seen) < max_subsets:
        pick = tuple(sorted(rng.sample(range(n), k)))
        if pick not in seen:
            seen.add(pick)
            yield pick


def candidate_passes(stored: StoredDataset) -> dict[int, list[bool]]:
    """Per manifest index, whether each candidate passes official E2E there (ground truth, via the scorer).

    Args:
        stored: One dataset of a stored run.

    Returns:
        ``{index: [pass of candidate 0, ..., pass of candidate n-1]}``; a sample a candidate did not write,
        or a candidate the scorer cannot read, fails.
    """
    passes = {i: [False] * len(stored.candidates) for i in stored.task.indices}
    for k, cand in enumerate(stored.candidates):
        scored = score_candidate(
            cand.output_dir, stored.task.root, profile="official", unreadable_as_missing=True
        )
        if scored.error:
            log.warning("%s candidate %s: %s (counted as failing)", stored.key, k, scored.error)
            continue
        for s in scored.per_sample:
            if int(s.index) in passes:
                passes[int(s.index)][k] = e2e_pass(s.to_dict())
    return passes


@dataclass
class DatasetCurves:
    """The curves of one dataset: per k, the per-dataset mean of every curve.

    Attributes:
        key: ``<run>/<dataset>``.
        n: Candidates.
        values: ``{curve: {k: value}}``; curves ``pass@k``, ``pass^k`` and ``<validator>/<selector>``.
        subsets: Per k, how many subsets selected@k averaged over.
    """

    key: str
    n: int
    values: dict[str, dict[int, float]]
    subsets: dict[int, int]


def dataset_curves(
    stored: StoredDataset,
    passes: Mapping[int, Sequence[bool]],
    reports: Mapping[str, Sequence[Report]],
    selector_names: Sequence[str],
    max_subsets: int = DEFAULT_MAX_SUBSETS,
) -> DatasetCurves:
    """Every curve of one dataset, k = 1..n.

    Args:
        stored: The dataset and its candidates.
        passes: `candidate_passes` of it.
        reports: Per validator profile, the candidates' reports (candidate order).
        selector_names: Registered selector names.
        max_subsets: Exact enumeration up to this many subsets per k (see `subsets`).

    Returns:
        The curves.
    """
    n = len(stored.candidates)
    indices = list(stored.task.indices)
    values: dict[str, dict[int, float]] = {"pass@k": {}, "pass^k": {}}
    counts: dict[int, int] = {}
    sels = {name: build_selector(name) for name in selector_names}
    # The candidates are finished: each sample's annotation is read from disk once, not once per subset.
    with stored_annotations():
        for k in range(1, n + 1):
            cs = [sum(bool(p) for p in passes[i]) for i in indices]
            values["pass@k"][k] = _mean([pass_at_k(n, c, k) for c in cs])
            values["pass^k"][k] = _mean([pass_hat_k(n, c, k) for c in cs])
            picks = list(subsets(n, k, max_subsets, f"{stored.key}:{k}"))
            counts[k] = len(picks)
            for profile, reps in reports.items():
                for name, sel in sels.items():
                    total = 0.0
                    for pick in picks:
                        cands = [stored.candidates[j] for j in pick]
                        decisions = choose(sel, stored.task, cands, [reps[j] for j in pick])
                        total += _mean(
                            [
                                float(d.candidate is not None and passes[i][pick[d.candidate]])
                                for i, d in ((i, decisions[i]) for i in indices)
                            ]
                        )
                    values.setdefault(f"{Path(profile).stem}/{name}", {})[k] = total / len(picks)
    return DatasetCurves(stored.key, n, values, counts)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def passk_curves(
    runs: Sequence[Path],
    selector_names: Sequence[str] | None = None,
    validators: Sequence[str] = ("evidence", "mdsbench"),
    max_subsets: int = DEFAULT_MAX_SUBSETS,
) -> list[DatasetCurves]:
    """The curves of every dataset of ``runs`` (pooled: each (run, dataset) is one cluster).

    Args:
        runs: Finished S3 (or S4) run folders.
        selector_names: Registered selectors (default: every one but the oracle, whose curve is pass@k).
        validators: Validator profiles whose reports the selectors read.
        max_subsets: See `subsets`.

    Returns:
        One entry per dataset.

    Raises:
        ReselectError: A run holds no finished candidates.
        UnknownNameError: An unknown selector.
    """
    names = _selector_names(selector_names)
    out = []
    for run in runs:
        for stored in load_stored(Path(run)):
            passes = candidate_passes(stored)
            cache = ReportCache()
            reports = {v: [cache.get(c, stored.task, v) for c in stored.candidates] for v in validators}
            out.append(dataset_curves(stored, passes, reports, names, max_subsets))
    return out


def curves_frame(curves: Sequence[DatasetCurves]) -> pd.DataFrame:
    """One row per (curve, k): the macro mean over the datasets that have k candidates, its bootstrap CI.

    Args:
        curves: `passk_curves` output.

    Returns:
        Columns ``curve, k, value, lo, hi, datasets, subsets`` (subsets: the mean number per dataset).
    """
    rows: list[dict[str, Any]] = []
    names = list(dict.fromkeys(name for c in curves for name in c.values))
    ks = sorted({k for c in curves for k in range(1, c.n + 1)})
    for name in names:
        for k in ks:
            per = {c.key: c.values[name][k] for c in curves if k in c.values.get(name, {})}
            if not per:
                continue
            lo, hi = bootstrap_ci(per)
            counts = [c.subsets[k] for c in curves if k in c.subsets]
            rows.append(
                {
                    "curve": name,
                    "k": k,
                    "value": sum(per.values()) / len(per),
                    "lo": lo,
                    "hi": hi,
                    "datasets": len(per),
                    "subsets": sum(counts) / len(counts),
                }
            )
    return pd.DataFrame(rows)


def passk_figure(frame: pd.DataFrame, path: Path) -> Path:
    """The curves against k with their dataset-bootstrap CI bands; pass@k and pass^k dashed."""
    import matplotlib.pyplot as plt

    from experiments.publish.figures import WIDTH_IN, save_figure

    fig, ax = plt.subplots(figsize=(WIDTH_IN * 0.75, 3.8))
    for name, part in frame.groupby("curve", sort=False):
        part = part.sort_values("k")
        oracle = name in ("pass@k", "pass^k")
        label = {"pass@k": "pass@k (oracle best-of-k)", "pass^k": "pass^k (all k pass)"}.get(str(name), name)
        (line,) = ax.plot(
            part["k"], part["value"], marker="o", markersize=3, linestyle="--" if oracle else "-", label=label
        )
        ax.fill_between(part["k"], part["lo"], part["hi"], color=line.get_color(), alpha=0.12, linewidth=0)
    ax.set_xlabel("k (candidates the selector sees)")
    ax.set_ylabel("E2E (macro over datasets, 95 % CI)")
    ax.set_xticks(sorted(frame["k"].unique()))
    ax.set_title("Selection against the number of candidates", fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path)


def passk_markdown(frame: pd.DataFrame) -> str:
    """The table as the sweep report shows it: one row per curve, one column per k (``value [lo, hi]``)."""
    cells = [
        f"{v:.3f} [{lo:.2f}, {hi:.2f}]"
        for v, lo, hi in zip(frame["value"], frame["lo"], frame["hi"], strict=True)
    ]
    table = frame.assign(cell=cells).pivot(index="curve", columns="k", values="cell")
    table = table.reindex(list(dict.fromkeys(frame["curve"]))).fillna("")
    table.columns = [f"k={k}" for k in table.columns]
    return to_markdown(table.reset_index())


def write_passk(frame: pd.DataFrame, out: Path) -> list[Path]:
    """Write ``passk.csv``, ``passk.md`` and ``passk.png`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "passk.csv", out / "passk.md"]
    write_csv(written[0], frame)
    atomic_write_text(
        written[1],
        "# pass@k, pass^k and selected@k (official E2E; macro over datasets, 95 % bootstrap CI over "
        "datasets)\n\n" + passk_markdown(frame) + "\n",
    )
    return [*written, passk_figure(frame, out / "passk.png")]


def _own_validator(run_dir: Path) -> str:
    """The validator profile the run selected with (its written YAML when it has one), else ``evidence``."""
    written = sorted((run_dir / ".validator").glob("*.yaml"))
    if written:
        return str(written[0])
    try:
        info = run_info(run_dir)
        return str(((info.get("config") or {}).get("validator") or {}).get("name") or "evidence")
    except (OSError, ValueError):
        return "evidence"


def is_best_of_n_run(run_dir: Path) -> bool:
    """Whether a run folder holds an S3 (``best_of_n``) run: its candidates are n independent generations."""
    try:
        info = run_info(run_dir)
    except (OSError, ValueError):
        return False
    kind = str(((info.get("config") or {}).get("strategy") or {}).get("kind") or "")
    return kind == "best_of_n" or (not kind and info.get("strategy") == "s3")


def sweep_section(s3_runs: Mapping[str, Sequence[Path]], out: Path) -> tuple[list[str], list[Path]]:
    """The sweep report's pass@k part: per S3 row (its seeds pooled), the curves under the row's own
    validator, a table in Markdown and one figure per row.

    Args:
        s3_runs: Row label → its run folders (S3 rows with at least two candidates).
        out: The sweep folder (``passk[_<i>].{csv,png}`` are written there).

    Returns:
        The Markdown parts and the files written; a row that cannot be computed is logged and skipped.
    """
    parts: list[str] = []
    written: list[Path] = []
    for j, (label, runs) in enumerate(sorted(s3_runs.items())):
        try:
            validator = _own_validator(runs[0])
            frame = curves_frame(passk_curves(runs, None, [validator]))
        except Exception:  # the report's extra section must never cost the sweep its tables
            log.exception("pass@k curves skipped for %s", label)
            continue
        if frame.empty or frame["k"].max() < 2:
            continue
        stem = "passk" if len(s3_runs) == 1 else f"passk_{j}"
        write_csv(out / f"{stem}.csv", frame)
        written += [out / f"{stem}.csv", passk_figure(frame, out / f"{stem}.png")]
        parts += [
            f"## pass@k, pass^k and selected@k: {label} (validator {Path(validator).stem}; official E2E, "
            "macro over datasets with a 95 % bootstrap CI over datasets; every k-subset of the stored "
            f"candidates, no new call; figure `{stem}.png`)",
            passk_markdown(frame),
        ]
    return parts, written


@cli_main("medstrat passk")
def main(argv: Sequence[str] | None = None) -> int:
    """CLI; returns the exit code (0 success, 2 bad input; ``docs/cli.md``)."""
    from core.registry import UnknownNameError

    parser = OneLineParser(prog="medstrat passk", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="finished S3/S4 run folders (pooled)")
    parser.add_argument(
        "--selectors", default=None, help="comma-separated names (default: every registered one)"
    )
    parser.add_argument(
        "--validators", default="evidence,mdsbench", help="comma-separated validator profiles"
    )
    parser.add_argument(
        "--max-subsets", type=int, default=DEFAULT_MAX_SUBSETS, help="enumerate up to this many"
    )
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: <first RUN>/passk)")
    args = parser.parse_args(argv)
    if args.max_subsets < 1:
        raise CliError(f"--max-subsets must be at least 1, got {args.max_subsets}")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    runs = [existing_dir("RUN", r) for r in args.runs]
    try:
        wanted = [s for s in (args.selectors or "").split(",") if s] or None
        validators = [v for v in args.validators.split(",") if v]
        curves = passk_curves(runs, wanted, validators, args.max_subsets)
    except (ReselectError, UnknownNameError, ImportError, ValueError) as exc:
        raise CliError(str(exc)) from exc
    frame = curves_frame(curves)
    out = args.out or runs[0] / "passk"
    written = write_passk(frame, out)
    print((out / "passk.md").read_text(encoding="utf-8"))
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0

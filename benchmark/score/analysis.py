"""Analyses on top of per-sample results, as pandas DataFrames: threshold sensitivity, breakdowns, error
attribution.

Input everywhere is ``{dataset name: score_dataset(...) result}`` (what
:func:`benchmark.score.evaluate.score_root` returns). Every table renders to Markdown, CSV or a LaTeX
``tabular`` with :func:`render`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pandas as pd

from benchmark.score import table as T
from benchmark.score.aggregate import macro, usable

G_GRID: tuple[float, ...] = (0.70, 0.75, 0.80, 0.85, 0.90, 0.95, 1.00)
Q_GRID: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7)
F_GRID: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7)
DEFAULT_THRESHOLDS = {"g": 0.85, "q": 0.5, "f": 0.5}
SETTINGS = {"loose": (0.80, 0.40, 0.40), "default": (0.85, 0.50, 0.50), "strict": (0.90, 0.60, 0.60)}
CAPABILITY_GROUPS: dict[str, tuple[str, ...]] = {
    "Structure": ("SV", "SSC"),
    "Semantic": ("SC",),
    "Content": ("IC", "IV", "INR", "CF"),
    "Metadata": ("MSC", "MSJ"),
    "Joint": ("SCJ", "E2E"),
}
"""Paper Table 3's five capability categories (the main table's weight groups)."""

Results = Mapping[str, Mapping[str, Any]]


def per_sample_frame(results: Results) -> pd.DataFrame:
    """One row per (dataset, model, GT index) with the E2E inputs (columns ``dataset, model, index,
    pair_valid, s, g, q, f``); errored models are left out."""
    rows = []
    for dataset, res in results.items():
        for model, mres in res.get("models", {}).items():
            if not usable(mres):
                continue
            for ps in mres["per_sample"]:
                rows.append(
                    {
                        "dataset": dataset,
                        "model": model,
                        "index": ps["index"],
                        "pair_valid": bool(ps["pair_valid"]),
                        "s": ps["source_score"],
                        "g": ps["schema_valid_score"],
                        "q": ps["semantic_score"],
                        "f": ps["content_fidelity_score"],
                    }
                )
    return pd.DataFrame(rows, columns=["dataset", "model", "index", "pair_valid", "s", "g", "q", "f"])


def _e2e_macro(samples: pd.DataFrame, g: float, q: float, f: float) -> pd.Series:
    ok = (
        samples["pair_valid"]
        & (samples["s"] >= 1.0)
        & (samples["g"] >= g)
        & (samples["q"] >= q)
        & (samples["f"] >= f)
    )
    per_dataset = ok.groupby([samples["model"], samples["dataset"]]).mean()
    return per_dataset.groupby(level="model").mean()


def e2e_grid(
    results: Results,
    g_values: Sequence[float] = G_GRID,
    q_values: Sequence[float] = Q_GRID,
    f_values: Sequence[float] = F_GRID,
) -> pd.DataFrame:
    """Macro E2E per model for every (g, q, f) threshold triple.

    Args:
        results: Scored datasets.
        g_values: Schema thresholds.
        q_values: Semantic thresholds.
        f_values: Content-fidelity thresholds.

    Returns:
        Long table ``model, g, q, f, E2E`` (E2E macro-averaged over the model's datasets).
    """
    samples = per_sample_frame(results)
    rows = []
    for g, q, f in itertools.product(g_values, q_values, f_values):
        for model, value in _e2e_macro(samples, g, q, f).items():
            rows.append({"model": model, "g": g, "q": q, "f": f, "E2E": float(value)})
    return pd.DataFrame(rows, columns=["model", "g", "q", "f", "E2E"])


def threshold_slices(results: Results) -> pd.DataFrame:
    """Paper Table 11 (left): vary one threshold, the others at their defaults; mean E2E over models.

    Returns:
        Columns ``varied, value, mean_E2E`` plus one column per model.
    """
    samples = per_sample_frame(results)
    grids = {"g": G_GRID, "q": Q_GRID, "f": F_GRID}
    rows = []
    for varied, values in grids.items():
        for value in values:
            th = dict(DEFAULT_THRESHOLDS, **{varied: value})
            per_model = _e2e_macro(samples, th["g"], th["q"], th["f"])
            rows.append(
                {"varied": varied, "value": value, "mean_E2E": float(per_model.mean()), **per_model.to_dict()}
            )
    return pd.DataFrame(rows)


def ranking_stability(results: Results) -> pd.DataFrame:
    """Paper Table 11 (right): pairwise model orderings preserved under loose/strict vs default thresholds.

    Returns:
        Columns ``setting, g, q, f, consistent, pairs, consistency``.
    """
    samples = per_sample_frame(results)
    scores = {name: _e2e_macro(samples, *th) for name, th in SETTINGS.items()}
    base = scores["default"]
    pairs = list(itertools.combinations(sorted(base.index), 2))

    def order(s: pd.Series, a: str, b: str) -> int:
        return int(float(s[a]) > float(s[b])) - int(float(s[a]) < float(s[b]))

    rows = []
    for name, th in SETTINGS.items():
        cur = scores[name]
        same = sum(1 for a, b in pairs if order(base, a, b) == order(cur, a, b))
        rows.append(
            {
                "setting": name,
                "g": th[0],
                "q": th[1],
                "f": th[2],
                "consistent": same,
                "pairs": len(pairs),
                "consistency": same / len(pairs) if pairs else None,
            }
        )
    return pd.DataFrame(rows)


def macro_table(results: Results, models: Iterable[str] | None = None) -> pd.DataFrame:
    """The main table (`benchmark.score.table.macro_table`) as a DataFrame."""
    table = T.macro_table(results, models)
    return pd.DataFrame(list(table.rows), columns=list(table.columns))


def breakdown(results: Results, by: str) -> pd.DataFrame:
    """Paper Tables 7/9: Avg of the eleven metrics per model within each group of datasets.

    Args:
        results: Scored datasets (each carries ``info`` from :func:`benchmark.score.evaluate.dataset_info`).
        by: ``task_type``, ``dimension``, ``modality`` or ``source_format``.

    Returns:
        Rows = models, columns = groups (macro Avg over that group's datasets) plus ``n`` counts per group in
        the column names (``CT (n=3)``).
    """
    groups: dict[str, dict[str, Any]] = {}
    for name, res in results.items():
        key = str((res.get("info") or {}).get(by) or "unknown")
        groups.setdefault(key, {})[name] = res
    table: dict[str, dict[str, float]] = {}
    for key in sorted(groups):
        col = f"{key} (n={len(groups[key])})"
        for model, v in macro(groups[key])["models"].items():
            if v["n_datasets"]:
                table.setdefault(model, {})[col] = v["avg_11"]
    frame = pd.DataFrame.from_dict(table, orient="index")
    frame.index.name = "model"
    return frame.reset_index()


def error_attribution(results: Results, threshold: float = 0.5) -> pd.DataFrame:
    """Paper Table 3: mean capability-group score per model and the number of datasets below ``threshold``.

    Args:
        results: Scored datasets.
        threshold: A dataset "fails" a group when its group score is below this.

    Returns:
        Columns ``model`` then ``<group> score`` and ``<group> # fail`` for the five groups.
    """
    per_model: dict[str, list[dict[str, float]]] = {}
    for res in results.values():
        for model, mres in res.get("models", {}).items():
            if usable(mres):
                m = mres["metrics"]
                per_model.setdefault(model, []).append(
                    {g: sum(m[k] for k in keys) / len(keys) for g, keys in CAPABILITY_GROUPS.items()}
                )
    rows = []
    for model in sorted(per_model):
        row: dict[str, Any] = {"model": model}
        for g in CAPABILITY_GROUPS:
            vals = [d[g] for d in per_model[model]]
            row[f"{g} score"] = sum(vals) / len(vals)
            row[f"{g} # fail"] = sum(v < threshold for v in vals)
        rows.append(row)
    return pd.DataFrame(rows)


# --- rendering: the plain writers of benchmark.score.table, so every table looks the same -------------------


def _rows(frame: pd.DataFrame) -> Iterator[tuple[Any, ...]]:
    rows: Iterator[tuple[Any, ...]] = frame.itertuples(index=False, name=None)
    return rows


def to_markdown(frame: pd.DataFrame, digits: int = 4) -> str:
    """A GitHub-flavoured Markdown table."""
    return T.to_markdown(list(frame.columns), _rows(frame), digits)


latex_escape = T.latex_escape


def to_latex(frame: pd.DataFrame, digits: int = 4) -> str:
    """A self-contained ``tabular`` fragment (booktabs rules): first column left-aligned, others right."""
    return T.to_latex(list(frame.columns), _rows(frame), digits)


def render(frame: pd.DataFrame | T.Table, fmt: str = "md", digits: int = 4) -> str:
    """Render a table as ``md`` (Markdown), ``csv`` or ``tex`` (LaTeX tabular).

    Args:
        frame: Any of this module's tables, or a plain `benchmark.score.table.Table`.
        fmt: Output format.
        digits: Decimals for floats (csv keeps full precision).

    Returns:
        The text.

    Raises:
        ValueError: For an unknown format.
    """
    if isinstance(frame, T.Table):
        return T.render(frame, fmt, digits)
    if fmt == "md":
        return to_markdown(frame, digits)
    if fmt == "csv":
        return str(frame.to_csv(index=False))
    if fmt == "tex":
        return to_latex(frame, digits)
    raise ValueError(f"unknown table format {fmt!r}; valid: {', '.join(T.FORMATS)}")

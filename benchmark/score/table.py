"""The CLI's per-model table in plain Python: the macro means and their Markdown, CSV and LaTeX text.

`medstrat score` prints this table after scoring; building it with pandas cost ~0.45 s of imports
per process, more than scoring a whole conformance dataset (docs/performance.md, Scorer). The analyses in
`benchmark.score.analysis` keep pandas and render their DataFrames through the same writers here, so a table
looks the same whichever module built it.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmark.score import constants as C
from benchmark.score.aggregate import macro

FORMATS: tuple[str, ...] = ("md", "csv", "tex")
"""The table formats `render` writes."""

MACRO_COLUMNS: tuple[str, ...] = ("model", *C.METRIC_NAMES, "Avg", "Weighted", "n_datasets")
"""Columns of the main table: the model, the eleven macro means, Avg, Weighted and the dataset count."""


@dataclass(frozen=True)
class Table:
    """A rectangular table: column names and rows of plain values (str, int, float, bool or None).

    Attributes:
        columns: Column names, in order.
        rows: One tuple per row, as long as ``columns``.
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


def macro_table(results: Mapping[str, Mapping[str, Any]], models: Iterable[str] | None = None) -> Table:
    """The main table: one row per model scored on at least one dataset (see `MACRO_COLUMNS`).

    Args:
        results: ``{dataset name: score_dataset(...) result}``.
        models: Restrict to these models, in this order (default: every model seen, sorted).

    Returns:
        The table; models without a usable dataset are left out.
    """
    rows = tuple(
        (m, *(float(v["metrics"][k]) for k in C.METRIC_NAMES), v["avg_11"], v["weighted"], v["n_datasets"])
        for m, v in macro(results, models)["models"].items()
        if v["n_datasets"]
    )
    return Table(MACRO_COLUMNS, rows)


def format_cell(value: Any, digits: int) -> str:
    """One cell as text: floats to ``digits`` decimals, None and NaN empty, everything else ``str`` (NumPy
    scalars behave like the Python ones they subclass or print as)."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def to_markdown(columns: Sequence[Any], rows: Iterable[Sequence[Any]], digits: int = 4) -> str:
    """A GitHub-flavoured Markdown table (``|`` inside a cell escaped).

    Args:
        columns: Column names.
        rows: Row values.
        digits: Decimals for floats.

    Returns:
        The text, one line per row, ending with a newline.
    """
    head = "| " + " | ".join(str(c) for c in columns) + " |"
    sep = "| " + " | ".join("---" for _ in columns) + " |"
    body = ["| " + " | ".join(format_cell(v, digits).replace("|", "\\|") for v in row) + " |" for row in rows]
    return "\n".join([head, sep, *body]) + "\n"


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX special characters (``_`` → ``\\_`` etc.)."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def to_latex(columns: Sequence[Any], rows: Iterable[Sequence[Any]], digits: int = 4) -> str:
    """A self-contained ``tabular`` fragment (booktabs rules): first column left-aligned, others right.

    Args:
        columns: Column names.
        rows: Row values.
        digits: Decimals for floats.

    Returns:
        The text, ending with a newline.
    """
    spec = "l" + "r" * (len(columns) - 1)
    lines = [
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(latex_escape(str(c)) for c in columns) + " \\\\",
        "\\midrule",
    ]
    lines += [" & ".join(latex_escape(format_cell(v, digits)) for v in row) + " \\\\" for row in rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def to_csv(columns: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """CSV with a header line, full float precision (``repr``), empty cells for None, ``\\n`` line ends.

    This is what pandas' ``to_csv(index=False)`` writes for the same plain values.

    Args:
        columns: Column names.
        rows: Row values.

    Returns:
        The text.
    """
    buf = io.StringIO()
    import csv  # here: the per-dataset CLI prints Markdown

    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buf.getvalue()


def render(table: Table, fmt: str = "md", digits: int = 4) -> str:
    """Render a table as ``md`` (Markdown), ``csv`` or ``tex`` (LaTeX tabular).

    Args:
        table: The table.
        fmt: Output format (one of `FORMATS`).
        digits: Decimals for floats (csv keeps full precision).

    Returns:
        The text.

    Raises:
        ValueError: For an unknown format.
    """
    if fmt == "md":
        return to_markdown(table.columns, table.rows, digits)
    if fmt == "csv":
        return to_csv(table.columns, table.rows)
    if fmt == "tex":
        return to_latex(table.columns, table.rows, digits)
    raise ValueError(f"unknown table format {fmt!r}; valid: {', '.join(FORMATS)}")

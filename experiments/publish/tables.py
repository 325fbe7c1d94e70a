"""The one writer of result tables: ``<stem>.csv``, ``<stem>.md`` and ``<stem>.tex`` from one frame.

The ablation (``ablation.*``) and the selector leaderboard (``selectors.*``) publish the same three files: the
CSV holds every column at full precision (what a script reads), the Markdown page holds headed sections of
rendered tables and notes (what a person reads), the LaTeX file holds the headline table (what a paper
includes). Rendering is `benchmark.score.analysis`'s, so every table of the project looks the same; every
file is written atomically.

Example:
    >>> write_tables(out / "selectors", frame, ["# Selectors", frame[head], "a note"], frame[head])
    (PosixPath('.../selectors.csv'), PosixPath('.../selectors.md'), PosixPath('.../selectors.tex'))
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from benchmark.score.analysis import to_latex, to_markdown
from core.atomic import atomic_write_text

__all__ = ["markdown_page", "write_csv", "write_tables"]


def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    """``frame`` as CSV (every column, full precision, no index), written atomically; returns ``path``."""
    atomic_write_text(path, frame.to_csv(index=False))
    return path


def markdown_page(parts: Sequence[str | pd.DataFrame]) -> str:
    """A Markdown page: text parts as written, frames rendered as tables, blank lines between them.

    Args:
        parts: Headings, notes (already Markdown) and tables.

    Returns:
        The page, ending in a newline.
    """
    return "\n\n".join(p if isinstance(p, str) else to_markdown(p) for p in parts) + "\n"


def write_tables(
    stem: Path, data: pd.DataFrame, page: Sequence[str | pd.DataFrame], latex: pd.DataFrame
) -> tuple[Path, Path, Path]:
    """Write ``<stem>.csv`` (``data``), ``<stem>.md`` (``page``) and ``<stem>.tex`` (``latex``).

    Args:
        stem: The files' path without the suffix (``sweep_dir / "ablation"``).
        data: Every column, for the CSV.
        page: The Markdown page's parts (see `markdown_page`).
        latex: The table of the LaTeX fragment (a ``tabular`` with booktabs rules).

    Returns:
        The CSV, Markdown and LaTeX paths.
    """
    csv, md, tex = (stem.with_name(f"{stem.name}.{ext}") for ext in ("csv", "md", "tex"))
    write_csv(csv, data)
    atomic_write_text(md, markdown_page(page))
    atomic_write_text(tex, to_latex(latex) + "\n")
    return csv, md, tex

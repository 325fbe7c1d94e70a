"""``table_head``: the first rows of a label table and a summary of every column, in one tool call.

A label table is where a dataset hides its classes, splits and subject ids. The model needs its columns,
what kind of values each holds and how many distinct ones (a ``label`` column with 4 values is a class
table; an ``id`` column with as many values as rows is a join key), not its raw bytes. The file is read by
`medio.table.read_table`, the project's one table reader (any text encoding, the separator sniffed, a
workbook's sheets, parquet as one batch, never the whole file), keeping the types pandas infers.

The summary covers at most `SUMMARY_ROWS` rows, and says so; the row count is exact for parquet and Excel
(their metadata) and for text tables up to `SandboxLimits.max_search_bytes` (newlines counted), else it is
reported as unknown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from agents.base import Task
from agents.tools.folder_tools import extension
from agents.tools.sandbox import Sandbox, SandboxError
from agents.tools.tool_args import ToolArgs
from medio.errors import MedioError

__all__ = ["SUMMARY_ROWS", "TABLE_TOOLS", "TableHeadArgs", "table_summary"]

SUMMARY_ROWS = 10_000
"""Rows the column summary is computed over."""

_MAX_COLUMNS = 60
_EXAMPLES = 5
_CELL_CHARS = 80
_TEXT_TABLES = frozenset({".csv", ".tsv", ".txt"})


class TableHeadArgs(ToolArgs):
    """Show a table's first rows and a summary of each column (dtype, distinct values, missing, examples,
    min/max) for CSV, TSV, XLSX/XLS and parquet files; reports the total row count and sheet names."""

    path: str = Field(description="Table file relative to the dataset root, e.g. 'data/labels.csv'.")
    rows: int = Field(5, ge=0, le=50, description="How many first rows to show.")
    sheet: str | None = Field(None, description="Excel sheet name (default: the first sheet).")


def _cell(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(value)} bytes>"
    if isinstance(value, float) and value != value:  # NaN
        return None
    if isinstance(value, int | float | bool) or value is None:
        return value
    text = str(value)
    return text if len(text) <= _CELL_CHARS else text[:_CELL_CHARS] + "..."


def _count_lines(path: Path, cap: int) -> int | None:
    """Data rows of a text table (newlines minus the header), or None above ``cap`` bytes."""
    size = path.stat().st_size
    if size > cap:
        return None
    lines = 0
    last = b"\n"
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            lines += block.count(b"\n")
            last = block[-1:]
    lines += last != b"\n"  # a last line without its newline
    return max(lines - 1, 0)


def _read(path: Path, sheet: str | None, cap: int) -> tuple[Any, int | None, list[str] | None]:
    """The first `SUMMARY_ROWS` rows as a DataFrame, the total row count, the sheet names (Excel)."""
    from medio.table import EXCEL_SUFFIXES, read_table

    excel = extension(path.name) in EXCEL_SUFFIXES
    if sheet is not None and not excel:
        raise ValueError("sheet is only for Excel files")
    # One column is still a table here (a list of file names): the model asked to see it.
    first = 0 if sheet is None else sheet
    table = read_table(
        path,
        typed=True,
        max_rows=SUMMARY_ROWS,
        sheet=first if excel else None,
        max_bytes=None,
        one_column=True,
    )
    text = extension(path.name) in _TEXT_TABLES and not table.sheets
    return table.frame, _count_lines(path, cap) if text else table.n_rows, table.sheets


def table_summary(
    path: Path, rows: int = 5, sheet: str | None = None, cap: int = 64 * 1024**2
) -> dict[str, Any]:
    """Summarise a CSV/TSV/XLSX/XLS/parquet table: columns, their dtypes and value statistics, its first
    ``rows`` rows (of ``sheet``, default the first, in a workbook); the rows of a text table up to ``cap``
    bytes are counted.

    Returns:
        ``n_rows`` (None when not counted), ``summarized_rows``, ``n_columns``, ``columns`` (per column:
        ``dtype``, ``n_unique``, ``n_missing``, ``examples``, and ``min``/``max`` for numbers), ``head``, and
        ``sheets`` for Excel.

    Raises:
        ValueError: A sheet asked of a file that is no workbook.
        medio.MedioError: Unknown sheet, or a file that cannot be parsed as a table.
    """
    frame, total, sheets = _read(path, sheet, cap)
    import pandas as pd  # after `medio.table.read_table` imported it whole, under medio's import lock

    columns: dict[str, Any] = {}
    for name in list(frame.columns)[:_MAX_COLUMNS]:
        series = frame[name]
        hashable = series.map(lambda v: v if not isinstance(v, bytes | bytearray | list | dict) else repr(v))
        values = hashable.dropna()
        info: dict[str, Any] = {
            "dtype": str(series.dtype),
            "n_unique": int(values.nunique()),
            "n_missing": int(series.isna().sum()),
            "examples": [_cell(v) for v in values.drop_duplicates().head(_EXAMPLES).tolist()],
        }
        if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series) and len(values):
            info["min"], info["max"] = _cell(values.min().item()), _cell(values.max().item())
        columns[str(name)] = info
    summary: dict[str, Any] = {
        "n_rows": total,
        "summarized_rows": len(frame),
        "n_columns": len(frame.columns),
        "columns": columns,
        "head": [
            {str(k): _cell(v) for k, v in r.items()} for r in frame.head(rows).to_dict(orient="records")
        ],
    }
    if len(frame.columns) > _MAX_COLUMNS:
        summary["columns_not_summarized"] = [str(c) for c in list(frame.columns)[_MAX_COLUMNS:]][:200]
    if sheets is not None:
        summary["sheets"] = sheets
    return summary


def _table_head(sandbox: Sandbox, task: Task, args: TableHeadArgs) -> str:
    target = sandbox.read_path(args.path)
    if not target.is_file():
        raise SandboxError(args.path, "not a file" if target.exists() else "no such file")
    sandbox.check_size(target, args.path)
    if extension(target.name) not in {*_TEXT_TABLES, ".parquet", ".xlsx", ".xls", ".xlsm"}:
        raise ValueError(f"{args.path} is not a CSV/TSV/XLSX/parquet table; use read_text or inspect")
    try:
        summary = table_summary(target, args.rows, args.sheet, sandbox.limits.max_search_bytes)
    except (ValueError, OSError, MedioError) as exc:
        reason = exc.reason if isinstance(exc, MedioError) else exc  # the reason without the absolute path
        raise ValueError(f"cannot read {args.path} as a table: {reason}") from None
    return json.dumps({"path": args.path, **summary}, ensure_ascii=False, default=str)


TABLE_TOOLS: Mapping[str, tuple[type[ToolArgs], Callable[[Sandbox, Task, Any], str]]] = {
    "table_head": (TableHeadArgs, _table_head)
}
"""Tool name → (argument model, handler)."""

"""Cached reads of the small tables under a dataset's ``data/``: label tables, Parquet row cells, box files.

The label evidence that is not in the source file itself. Files are read by `medio.table.read_table` (the
project's one table reader); what counts as evidence in their rows is decided here. Cached per dataset (keyed
by the ``data/`` folder's signature) or per file (``(path, mtime, size)``, the keys of `validator._raw`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medio.dataset_docs import read_text_any
from medio.errors import MedioError
from medio.table import read_table
from validator._raw import LRU, cache_key
from validator.sample import file_signature
from validator.values import norm_token

log = logging.getLogger(__name__)

_TABLES: dict[tuple[str, Any], list[list[str]]] = {}
_CELLS: LRU = LRU(2_000)


def label_tables(dataset_root: Path, max_bytes: int = 2_000_000) -> list[list[str]]:
    """Rows of the small CSV/TSV/TXT/JSON tables under ``data/`` (label evidence), read once per dataset.

    A delimited table gives its header row, then its rows (a text without a separator, one cell per line);
    a JSON document the records `_json_rows` finds, without a header.
    """
    data = dataset_root / "data"
    key = (str(data), file_signature(data))
    if key in _TABLES:
        return _TABLES[key]
    rows: list[list[str]] = []
    base = dataset_root.resolve()
    for path in sorted(data.rglob("*")) if data.is_dir() else []:
        if path.suffix.lower() not in {".csv", ".tsv", ".txt", ".json"} or path.is_symlink():
            continue
        try:
            if not path.resolve().is_relative_to(base) or path.stat().st_size > max_bytes:
                continue
            table = read_table(path, max_bytes=max_bytes, one_column=True)
        except (MedioError, OSError) as exc:
            log.debug("skipping table %s: %s", path, exc)
            continue
        if path.suffix.lower() == ".json":
            rows.extend(_json_rows(table.document))
        else:
            rows.append(list(table.frame.columns))
            rows.extend(table.frame.values.tolist())
    _TABLES[key] = rows
    return rows


def _json_rows(doc: Any) -> list[list[str]]:
    """The records of a JSON label file (a list of objects, or an object holding one such list) as rows of
    their scalar values.

    Not `medio.table.read_table`'s records: a ``{"file.png": "class"}`` mapping is label evidence here, and a
    document holding several lists (COCO) names no per-sample class.
    """
    if isinstance(doc, dict) and doc and all(isinstance(v, dict | str | int | float) for v in doc.values()):
        # {"file.mat": {"label": 0, "label_name": ...}} or {"file.mat": "label"}: the key names the record
        return [[str(k), *_scalars(v if isinstance(v, dict) else {"value": v})] for k, v in doc.items()]
    if isinstance(doc, dict):
        lists = [v for v in doc.values() if isinstance(v, list)]
        doc = lists[0] if len(lists) == 1 else []
    if not isinstance(doc, list):
        return []
    return [_scalars(item) for item in doc if isinstance(item, dict)]


def _scalars(item: dict[str, Any]) -> list[str]:
    return [str(v) for v in item.values() if isinstance(v, str | int | float) and not isinstance(v, bool)]


def table_row_cells(path: Path, row: int) -> list[str]:
    """The non-image cells of one row of a Parquet source (the label columns beside an image cell), cached.

    Args:
        path: A Parquet file whose rows hold images.
        row: The row the sample was read from.

    Returns:
        The row's text and number cells (empty when the table cannot be read).
    """
    key = cache_key(path, {}, "row", row)
    if key is None:
        return []
    cached: list[str] | None = _CELLS.get(key)
    if cached is None:
        from medio.libraries import need

        need("table")  # pandas/pyarrow, imported only for table sources, under medio's import lock
        from medio.table import read_rows

        try:
            frame = read_rows(path, start=row, count=1)
        except (MedioError, OSError, ValueError) as exc:
            log.debug("cannot read row %s of %s: %s", row, path, exc)
            frame = None
        values = [] if frame is None or frame.empty else frame.iloc[0].tolist()
        cached = [str(v) for v in values if isinstance(v, str | int | float) and not isinstance(v, bool)]
        _CELLS.put(key, cached)
    return cached


def bbox_source(path: Path, max_bytes: int = 20_000_000) -> tuple[str, Any]:
    """A raw box file parsed once: ``("table", (header, rows))`` for CSV/TSV, ``("coco", doc)`` for JSON,
    ``("lines", lines)`` for TXT, or ``("", None)`` when it is none of them or cannot be read (cached)."""
    key = cache_key(path, {}, "bbox")
    if key is None:
        return "", None
    cached: tuple[str, Any] | None = _CELLS.get(key)
    if cached is None:
        cached = ("", None)
        suffix = path.suffix.lower()
        try:
            if path.stat().st_size <= max_bytes and suffix in {".csv", ".tsv"}:
                frame = read_table(path, max_bytes=max_bytes, one_column=True).frame
                cached = ("table", (list(frame.columns), frame.values.tolist()))
            elif path.stat().st_size <= max_bytes and suffix == ".json":
                cached = ("coco", read_table(path, max_bytes=max_bytes).document)
            elif path.stat().st_size <= max_bytes and suffix == ".txt":
                lines = read_text_any(path, max_bytes).splitlines()
                cached = ("lines", [ln for ln in lines if ln.strip()])
        except (MedioError, OSError) as exc:
            log.debug("cannot read box file %s: %s", path, exc)
        _CELLS.put(key, cached)
    return cached


@dataclass(frozen=True)
class LabelIndex:
    """The label tables with every cell normalised (`norm_token`), indexed by cell value.

    Attributes:
        rows: Per table row, its non-empty normalised cells.
        by_cell: Normalised cell value → the rows that contain it.
    """

    rows: tuple[frozenset[str], ...]
    by_cell: dict[str, tuple[int, ...]]


_LABEL_INDEX: dict[tuple[str, Any], LabelIndex] = {}


def label_index(dataset_root: Path) -> LabelIndex:
    """`label_tables` normalised and indexed once per dataset (a per-sample scan of every row is slow)."""
    data = dataset_root / "data"
    key = (str(data), file_signature(data))
    cached = _LABEL_INDEX.get(key)
    if cached is None:
        rows = tuple(frozenset(c for c in map(norm_token, row) if c) for row in label_tables(dataset_root))
        by_cell: dict[str, list[int]] = {}
        for r, cells in enumerate(rows):
            for cell in cells:
                by_cell.setdefault(cell, []).append(r)
        cached = LabelIndex(rows, {k: tuple(v) for k, v in by_cell.items()})
        _LABEL_INDEX[key] = cached
    return cached


_CODE_HEADER = ("label", "class", "group", "diagnosis", "target", "category", "grade")


@dataclass(frozen=True)
class LabelCodes:
    """Class ids the CSV/TSV tables under ``data/`` state per row.

    Attributes:
        by_cell: Normalised cell → ``(column, code)`` pairs of the rows holding that cell.
        columns: Per class-like column (``"<header>@<table>"``), every code it holds.
    """

    by_cell: dict[str, tuple[tuple[str, str], ...]]
    columns: dict[str, frozenset[str]]


_CODES: dict[tuple[str, Any], LabelCodes] = {}


def label_codes(dataset_root: Path) -> LabelCodes:
    """The integer values of columns named like a class (``label``, ``group_code``, ``diagnosis`` ...) per
    row of the CSV/TSV tables under ``data/``, once per dataset.

    A table such as ``patient,height,group_code`` names the class by its id; the name is elsewhere (a README),
    so the id itself is the evidence, usable when the column's ids are the candidate's class-table ids.
    """
    data = dataset_root / "data"
    key = (str(data), file_signature(data))
    cached = _CODES.get(key)
    if cached is None:
        found: dict[str, set[tuple[str, str]]] = {}
        columns: dict[str, set[str]] = {}
        header: list[str] = []
        table = 0
        for row in label_tables(dataset_root):
            cells = [c.strip() for c in row]
            if cells and not any(c.lstrip("-").isdigit() for c in cells):
                header, table = [c.lower() for c in cells], table + 1  # a header row starts a new table
                continue
            if len(cells) != len(header):
                continue  # not a row of the table this header starts (another file's rows)
            coded = {
                f"{h}@{table}": cells[k]
                for k, h in enumerate(header)
                if any(w in h for w in _CODE_HEADER) and cells[k].isdigit()
            }
            for column, code in coded.items():
                columns.setdefault(column, set()).add(code)
            for cell in cells:
                if coded and (token := norm_token(cell)):
                    found.setdefault(token, set()).update(coded.items())
        cached = LabelCodes(
            {k: tuple(sorted(v)) for k, v in found.items()}, {k: frozenset(v) for k, v in columns.items()}
        )
        _CODES[key] = cached
    return cached


def clear_caches() -> None:
    """Forget every cached table, index, row and box file (cold-start measurements)."""
    for cache in (_TABLES, _LABEL_INDEX, _CODES, _CELLS):
        cache.clear()

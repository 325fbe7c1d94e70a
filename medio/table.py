"""Tables: label tables (CSV, TSV, TXT, JSON, Excel, parquet) read into frames, and images stored in a cell.

`read_table` is the one reader of a table file: the rules agent's label tables, the ``table_head`` tool,
the validator's label evidence and `read_rows` here use it. What a caller does with the rows (joining them
to a sample, summarising columns, indexing cells as evidence) stays with the caller.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from medio._axes import guess_axes
from medio.errors import CorruptFile, KeyNotFound, MedioError, UnsupportedFormat
from medio.types import MedImage, Meta, jsonable

N_PREVIEW_ROWS = 5
#: The largest table file `read_table` reads whole (a label table is small; larger files are data).
MAX_TABLE_BYTES = 20_000_000
EXCEL_SUFFIXES = (".xlsx", ".xlsm", ".xls")
_SEPARATORS = (",", "\t", ";", "|")
_HEAD_BYTES = 65_536


class TableTooLarge(MedioError):
    """A table file is larger than the size a whole read allows."""


@dataclass
class TableFile:
    """A table file as read.

    Attributes:
        frame: The rows (``typed=False``: every cell a stripped string, empty cells ``""``).
        n_rows: Data rows in the whole file when known without reading them all (parquet and Excel
            metadata; the frame's length when the whole file was read), else None.
        sheets: An Excel workbook's sheet names (None for other formats).
        document: The parsed JSON document when the file is JSON.
    """

    frame: Any
    n_rows: int | None = None
    sheets: list[str] | None = None
    document: Any = None


def _is_parquet(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(4) == b"PAR1"


def read_table(
    path: str | Path,
    *,
    typed: bool = False,
    max_rows: int | None = None,
    sheet: str | int | None = None,
    max_bytes: int | None = MAX_TABLE_BYTES,
    one_column: bool = False,
) -> TableFile:
    """Read a CSV/TSV/TXT, JSON, Excel or parquet table.

    Text is decoded whatever its encoding (`medio.dataset_docs.text_encoding`), classic-Mac CR line ends
    are lines, the separator is the commonest of comma, tab, semicolon and pipe on the first line, and rows
    with too many fields are dropped; headers lose a BOM and padding, blank or repeated ones become unique.

    Args:
        path: The file; its suffix names the format (parquet is also known by its magic bytes), any suffix
            but parquet, JSON and Excel ones is read as delimited text.
        typed: Keep the types pandas/pyarrow infer (numbers, bytes) instead of stripped strings; text cells
            of a typed read keep their padding and empty cells are NaN.
        max_rows: Read only the first rows (text tables are then streamed, not read whole).
        sheet: Excel sheet name or position; None is the first sheet with two columns and a row (a cover
            sheet of notes comes first in some workbooks).
        max_bytes: Refuse larger files (None: no limit); a streamed read of ``max_rows`` is never refused.
        one_column: A text table whose first line holds no separator is one column (default: refused).

    Returns:
        The table; ``typed=False`` leaves out binary columns (images stored in a table are payload).

    Raises:
        TableTooLarge: The file is above ``max_bytes``.
        UnsupportedFormat: A text table's first line has no separator.
        KeyNotFound: An Excel sheet that does not exist.
        CorruptFile: The file cannot be parsed (the reason says how).
    """
    from medio.libraries import need

    # pandas and pyarrow imported whole under medio's lock: agents and checks read tables from threads.
    need("table")
    path = Path(path)
    suffix = path.suffix.lower()
    size = path.stat().st_size
    parquet = suffix == ".parquet" or _is_parquet(path)
    streamed = max_rows is not None and not parquet and suffix not in (".json", *EXCEL_SUFFIXES)
    if max_bytes is not None and size > max_bytes and not streamed:
        raise TableTooLarge(path, f"{size} bytes is above the {max_bytes}-byte table limit")
    try:
        if parquet:
            table = _parquet_table(path, max_rows)
        elif suffix in EXCEL_SUFFIXES:
            table = _excel_table(path, sheet, typed, max_rows)
        elif suffix == ".json":
            table = _json_table(path)
        else:
            table = _text_table(path, typed, max_rows, one_column)
    except MedioError:
        raise
    except Exception as exc:
        # pandas, pyarrow and openpyxl raise a zoo on damaged input (ParserError, ArrowInvalid, BadZipFile,
        # KeyError, struct.error, ...): whatever it is, it says this file cannot be read as a table.
        raise CorruptFile(path, f"cannot parse ({type(exc).__name__}: {exc})") from None
    if not typed and len(table.frame.columns):
        binary = [c for c in table.frame.columns if _is_binary(table.frame[c])]
        table.frame = _text_cells(table.frame.drop(columns=binary))
    table.frame = table.frame.set_axis(_unique_headers(table.frame.columns), axis=1)
    if table.n_rows is None and table.document is None and (max_rows is None or len(table.frame) < max_rows):
        table.n_rows = len(table.frame)
    return table


def _is_binary(column: Any) -> bool:
    return bool(len(column)) and isinstance(column.iloc[0], bytes | bytearray)


def _parquet_table(path: Path, max_rows: int | None) -> TableFile:
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(str(path))
    total = int(parquet.metadata.num_rows)
    if max_rows is None:
        return TableFile(parquet.read().to_pandas(), total)
    # One batch, never the whole file: a parquet table of images may hold gigabytes.
    batch = next(parquet.iter_batches(batch_size=max(max_rows, 1)), None)
    frame = batch.to_pandas() if batch is not None else parquet.schema_arrow.empty_table().to_pandas()
    return TableFile(frame.head(max_rows), total)


def _excel_table(path: Path, sheet: str | int | None, typed: bool, max_rows: int | None) -> TableFile:
    import pandas as pd

    book = pd.ExcelFile(path)
    names = [str(n) for n in book.sheet_names]
    wanted = names[sheet] if isinstance(sheet, int) and 0 <= sheet < len(names) else str(sheet)
    if sheet is not None and wanted not in names:
        raise KeyNotFound(path, f"no sheet {sheet!r}; sheets: {names}")
    for chosen in [wanted] if sheet is not None else names:
        frame = pd.read_excel(book, sheet_name=chosen, dtype=None if typed else str, nrows=max_rows)
        if sheet is not None or (frame.shape[1] >= 2 and len(frame)):
            break
    else:
        raise CorruptFile(path, f"no sheet with two columns and a row (sheets: {names})")
    total = None
    if path.suffix.lower() != ".xls":
        dimension = book.book[chosen].max_row  # openpyxl's sheet dimension, without reading the cells
        total = max(int(dimension) - 1, 0) if dimension is not None else None
    return TableFile(frame, total, names)


def _json_table(path: Path) -> TableFile:
    from medio.dataset_docs import read_text_any

    try:
        doc = json.loads(read_text_any(path, path.stat().st_size))
    except json.JSONDecodeError as exc:
        raise CorruptFile(path, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    return TableFile(_json_records(doc), document=doc)


def _text_table(path: Path, typed: bool, max_rows: int | None, one_column: bool) -> TableFile:
    import pandas as pd

    from medio.dataset_docs import text_encoding

    # A streamed read (``max_rows``) decides the encoding and the separator on the file's head, and pandas
    # reads only the rows it needs; a whole read decodes the whole file (a late cp1252 byte is detected).
    with path.open("rb") as fh:
        raw = fh.read(_HEAD_BYTES if max_rows is not None else -1)
    if max_rows is not None and len(raw) == _HEAD_BYTES:
        raw = raw[: raw.rfind(b"\n") + 1] or raw  # whole lines: no character cut at the end
    encoding = text_encoding(raw)
    text = raw.decode(encoding, errors="replace")
    # Classic Mac OS ends lines with CR alone (pandas reads those too). The commonest separator of the first
    # line wins (ties in `_SEPARATORS` order), but a .tsv is split at tabs whenever its header has one.
    first = text.lstrip("\r\n").replace("\r", "\n").split("\n", 1)[0]
    counts = {sep: first.count(sep) for sep in _SEPARATORS}
    sep = "\t" if path.suffix.lower() == ".tsv" and "\t" in first else max(counts, key=lambda k: counts[k])
    if not counts[sep] and not one_column:
        raise UnsupportedFormat(path, "not a table: no comma, tab, semicolon or pipe on its first line")
    options: dict[str, Any] = {"low_memory": False} if typed else {"dtype": str, "keep_default_na": False}
    source = path if max_rows is not None else io.StringIO(text)
    frame = pd.read_csv(
        source,
        sep=sep,
        nrows=max_rows,
        on_bad_lines="skip",
        encoding=encoding,
        encoding_errors="replace",
        **options,
    )
    return TableFile(frame)


def _text_cells(frame: Any) -> Any:
    """Every cell a stripped string, empty cells ``""`` (pandas 3 keeps them as NaN, a float)."""
    cells = frame.astype(object).where(frame.notna(), "")
    return cells.apply(lambda col: col.astype(str).str.strip())


def _unique_headers(columns: Any) -> list[str]:
    """Headers without BOM or padding, blank or repeated ones made unique (``column_2``, ``name.1``): a
    repeated header would make ``frame[name]`` a frame."""
    names: list[str] = []
    for position, column in enumerate(columns):
        name = str(column).replace("\ufeff", "").strip() or f"column_{position}"
        base, k = name, 1
        while name in names:
            name, k = f"{base}.{k}", k + 1
        names.append(name)
    return names


def _json_records(doc: Any) -> Any:
    """The rows a JSON document holds: a list of records; a dict of records (keys in ``__key__``, scalar
    fields beside); columns as equal-length lists; or the largest list of records in the document."""
    import pandas as pd

    if isinstance(doc, list):
        records = [r for r in doc if isinstance(r, dict)]
        return pd.DataFrame(records, dtype=object) if records and len(records) == len(doc) else pd.DataFrame()
    if not isinstance(doc, dict) or not doc:
        return pd.DataFrame()
    values = list(doc.values())
    if all(isinstance(v, dict) for v in values):
        rows = [
            {"__key__": k, **{kk: vv for kk, vv in v.items() if not isinstance(vv, list | dict)}}
            for k, v in doc.items()
        ]
        return pd.DataFrame(rows, dtype=object)
    columns = all(isinstance(v, list) for v in values) and len({len(v) for v in values}) == 1
    if columns and len(values) > 1 and all(not isinstance(x, list | dict) for v in values for x in v):
        return pd.DataFrame(doc, dtype=object)
    lists = [v for v in values if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)]
    if lists:
        return pd.DataFrame(max(lists, key=len), dtype=object)
    return pd.DataFrame()


def _parquet(path: Path) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(str(path))
    except (pa.ArrowException, OSError) as exc:
        raise CorruptFile(path, f"cannot parse parquet ({exc})") from exc


def read_rows(
    path: str | Path, *, start: int = 0, count: int = N_PREVIEW_ROWS, columns: list[str] | None = None
) -> Any:
    """Read ``count`` rows from ``start`` (only the row groups/lines needed) as a pandas DataFrame.

    Args:
        path: Parquet, CSV or TSV file.
        start: First row (0-based, header excluded).
        count: Number of rows.
        columns: Restrict to these columns.

    Returns:
        A ``pandas.DataFrame``.

    Raises:
        CorruptFile: Malformed table.
        KeyNotFound: Unknown column.
    """
    import pyarrow as pa

    path = Path(path)
    if _is_parquet(path):
        pf = _parquet(path)
        names = pf.schema_arrow.names
        missing = [c for c in columns or [] if c not in names]
        if missing:
            raise KeyNotFound(path, f"column(s) {missing} not found; columns: {names}")
        pieces = []
        offset = 0
        try:
            for group in range(pf.num_row_groups):
                n = pf.metadata.row_group(group).num_rows
                if offset + n > start and offset < start + count:
                    # Stream small batches so a huge row group of images is not decoded whole.
                    position = offset
                    for batch in pf.iter_batches(
                        batch_size=max(count, 16), row_groups=[group], columns=columns
                    ):
                        lo = max(start - position, 0)
                        if lo < batch.num_rows:
                            pieces.append(
                                pa.Table.from_batches([batch.slice(lo, start + count - position - lo)])
                            )
                        position += batch.num_rows
                        if position >= start + count:
                            break
                offset += n
        except (pa.ArrowException, OSError) as exc:
            raise CorruptFile(path, f"cannot read parquet rows ({exc})") from exc
        if not pieces:
            return pf.schema_arrow.empty_table().to_pandas()
        return pa.concat_tables(pieces).to_pandas()
    # Any delimited text medio sniffed as a table, whatever its suffix.
    frame = read_table(path, typed=True, max_rows=start + count, max_bytes=None, one_column=True).frame.iloc[
        start:
    ]
    if columns:
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise KeyNotFound(path, f"column(s) {missing} not found; columns: {list(frame.columns)}")
        frame = frame[columns]
    return frame.reset_index(drop=True)


def cell_bytes(value: Any) -> bytes | None:
    """The encoded image bytes a cell holds (raw bytes, ``{"bytes": ...}`` struct, base64 text), else
    ``None``.
    """
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, dict) and isinstance(value.get("bytes"), bytes | bytearray):
        return bytes(value["bytes"])
    if isinstance(value, str) and len(value) > 32:
        payload = value.split("base64,", 1)[-1]
        try:
            return base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            return None
    return None


def read_table_image(path: str | Path, *, key: str | None = None, index: int | None = None) -> MedImage:
    """Decode the image stored in row ``index`` (default 0), column ``key`` of a table.

    Args:
        path: Parquet/CSV/TSV file.
        key: Column holding encoded images; default the first column whose cell holds bytes.
        index: Row (0-based).

    Returns:
        The decoded image; ``meta.columns`` lists the table's columns and ``meta.header`` the row and column.

    Raises:
        KeyNotFound: Unknown column or row, or no column holding images.
        UnsupportedFormat: The cell's bytes are no image format medio reads.
    """
    from medio.bitmap import decode_bitmap

    path = Path(path)
    row = index or 0
    frame = read_rows(path, start=row, count=1, columns=[key] if key else None)
    columns = [str(c) for c in frame.columns]
    if len(frame) == 0:
        raise KeyNotFound(path, f"row {row} out of range")
    values = frame.iloc[0].to_dict()
    if key is None:
        key = next((c for c, v in values.items() if cell_bytes(v) is not None), None)
        if key is None:
            raise KeyNotFound(path, f"no column holds image bytes in row {row}; columns: {columns}")
    payload = cell_bytes(values[key])
    if payload is None:
        raise UnsupportedFormat(path, f"cell (row {row}, column {key!r}) holds no encoded image")
    if payload.startswith(b"\x93NUMPY"):
        arr = np.load(io.BytesIO(payload), allow_pickle=False)
        image = MedImage(arr, Meta(format="table", path=str(path), axes=guess_axes(arr.shape, arr.dtype)))
    else:
        image = decode_bitmap(path, buffer=payload)
        image.meta.header["cell_format"] = image.meta.header.pop("pillow_format", None)
        image.meta.format = "table"
    if key not in columns:
        columns.append(key)
    image.meta.columns = columns if len(columns) > 1 else None
    image.meta.header.update({"row": row, "column": key})
    return image


def summarize_table(path: str | Path) -> dict[str, Any]:
    """For `medio.inspect`: ``columns``, ``dtypes``, ``n_rows`` (parquet metadata; ``None`` for text tables,
    not counted), ``head`` (5 rows, long values and bytes abbreviated); ``CorruptFile`` for a malformed table.
    """
    path = Path(path)
    head = read_rows(path, start=0, count=N_PREVIEW_ROWS)
    n_rows = _parquet(path).metadata.num_rows if _is_parquet(path) else None
    rows = [{str(k): _preview(v) for k, v in record.items()} for record in head.to_dict(orient="records")]
    return {
        "columns": [str(c) for c in head.columns],
        "dtypes": {str(c): str(t) for c, t in head.dtypes.items()},
        "n_rows": n_rows,
        "head": rows,
    }


def _preview(value: Any) -> Any:
    raw = cell_bytes(value) if not isinstance(value, str) or len(value) > 200 else None
    if raw is not None:
        return f"<{len(raw)} bytes>"
    if isinstance(value, str) and len(value) > 200:
        return value[:200] + "…"
    return jsonable(value)

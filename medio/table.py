"""Parquet, CSV and TSV tables via pyarrow/pandas: columns, first rows, and images stored in a cell."""

from __future__ import annotations

import base64
import binascii
import logging
from pathlib import Path
from typing import Any

import numpy as np

from medio.errors import CorruptFile, KeyNotFound, UnsupportedFormat
from medio.sniff import table_delimiter
from medio.types import MedImage, jsonable

log = logging.getLogger(__name__)

N_PREVIEW_ROWS = 5


def _is_parquet(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(4) == b"PAR1"


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
    import pandas as pd
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
    try:
        frame = pd.read_csv(
            path, sep=table_delimiter(path), skiprows=range(1, start + 1), nrows=count, usecols=columns
        )
    except ValueError as exc:
        if columns and "Usecols" in str(exc):
            raise KeyNotFound(path, f"column(s) {columns} not found ({exc})") from exc
        raise CorruptFile(path, f"cannot parse table ({exc})") from exc
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise CorruptFile(path, f"cannot parse table ({exc})") from exc
    return frame


def cell_bytes(value: Any) -> bytes | None:
    """Return encoded image bytes held by a cell (raw bytes, ``{"bytes": ...}`` struct, base64 text).

    Args:
        value: The cell value.

    Returns:
        The bytes, or ``None`` when the cell does not hold an encoded image.
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
        import io

        arr = np.load(io.BytesIO(payload), allow_pickle=False)
        from medio._axes import guess_axes
        from medio.types import Meta

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
    """Summarise a table: columns, dtypes, row count (parquet metadata) and the first rows.

    Args:
        path: The file.

    Returns:
        ``columns``, ``dtypes``, ``n_rows`` (``None`` for text tables, not counted), ``head`` (5 rows, long
        values and bytes abbreviated).

    Raises:
        CorruptFile: Malformed table.
    """
    path = Path(path)
    head = read_rows(path, start=0, count=N_PREVIEW_ROWS)
    n_rows = _parquet(path).metadata.num_rows if _is_parquet(path) else None
    rows = []
    for record in head.to_dict(orient="records"):
        rows.append({str(k): _preview(v) for k, v in record.items()})
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

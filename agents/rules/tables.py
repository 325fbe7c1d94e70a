"""Label tables found in a raw folder (CSV, TSV, JSON records, Excel, parquet) and joining them to a sample.

A table is joined to a sample through any column whose value names the sample: its path relative to
``data/`` (or to the table's folder), its file name, its stem, a folder on its path, or a header identifier
(DICOM SOP/Series/Study Instance UID, PatientID). When several rows match, a second column naming the sample
too (a session beside a participant) narrows them. The file is read by `medio.table.read_table` (any text
encoding, BOM and padding dropped from headers, the separator sniffed, Excel, JSON records, parquet), whole,
so only files under `MAX_TABLE_BYTES` are used. A file that cannot be read as a table raises `TableSkipped`
with the reason (`read_table`); empty cells, repeated headers and the other shapes real exports take are
read (issue 30).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from medio import table as medio_table
from medio.dataset_docs import bids_entities
from medio.errors import MedioError
from medio.sniff import split_suffix

log = logging.getLogger(__name__)

__all__ = [
    "HEADER_ID_KEYS",
    "MAX_TABLE_BYTES",
    "TABLE_SUFFIXES",
    "Join",
    "Table",
    "TableSkipped",
    "load_table",
    "read_table",
    "sample_ids",
]

#: Header fields whose value may key a label table, with how specific each is (an instance names one image).
HEADER_ID_KEYS = {
    "SOPInstanceUID": 3.0,
    "SeriesInstanceUID": 2.6,
    "StudyInstanceUID": 2.4,
    "AccessionNumber": 2.2,
    "PatientID": 2.0,
}
MAX_TABLE_BYTES = medio_table.MAX_TABLE_BYTES
_EXCEL_SUFFIXES = (".xlsx", ".xlsm")
# Legacy .xls needs xlrd, which is no dependency: such a file is left to the documents, not tried as a table.
TABLE_SUFFIXES = (".csv", ".tsv", ".json", ".parquet", ".txt", *_EXCEL_SUFFIXES)
# An Excel label table is read whole (openpyxl parses the XML of every cell it returns): a workbook beyond
# these is measurement data, not a label table, and would cost a minute to parse.
_MAX_EXCEL_ROWS = 100_000
_MAX_EXCEL_BYTES = 5_000_000


@dataclass
class Table:
    """A table read from the raw folder.

    Attributes:
        relpath: Its path relative to the dataset root (``data/...``).
        frame: The rows (every cell as read; JSON dict-of-records gets its keys in a ``__key__`` column).
        raw: The parsed JSON document when the file was JSON (COCO files are kept whole here).
    """

    relpath: str
    frame: pd.DataFrame
    raw: Any = None
    _lookup: dict[str, tuple[dict[str, list[int]], dict[str, list[int]]]] | None = None

    def lookup(self) -> dict[str, tuple[dict[str, list[int]], dict[str, list[int]]]]:
        """Per column, ``value → row positions`` and ``file stem of the value →
        row positions`` (built once)."""
        if self._lookup is None:
            self._lookup = {}
            for column in self.frame.columns:
                exact: dict[str, list[int]] = {}
                stems: dict[str, list[int]] = {}
                for pos, value in enumerate(self.frame[column].astype(str).str.strip()):
                    for key in _key_forms(value):
                        exact.setdefault(key, []).append(pos)
                    stems.setdefault(split_suffix(value)[0], []).append(pos)
                self._lookup[str(column)] = (exact, stems)
        return self._lookup


def _key_forms(value: str) -> list[str]:
    """A cell as written, lower-cased, and (for paths) below its last ``data/`` segment, ``/``-separated.

    Tables written on other machines key rows by ``IMG_001.PNG``, ``./images/a.png``, a Windows path
    (``C:\\study\\data\\a.png``) or the authors' absolute path; the sample's ids are relative to ``data/``.
    """
    forms = [value, value.lower()]
    if "/" in value or "\\" in value:
        path = value.replace("\\", "/")
        while path.startswith("./"):
            path = path[2:]
        tail = path.rsplit("/data/", 1)[-1] if "/data/" in path else path
        tail = tail[len("data/") :] if tail.startswith("data/") else tail
        forms += [tail, tail.lower()]
    return list(dict.fromkeys(forms))


@dataclass
class Join:
    """Rows of a table that belong to one sample.

    Attributes:
        table: The table.
        column: The column that named the sample.
        value: The matching cell value (the sample's identifier in that table).
        rows: The matching rows.
        strength: How specific the match was (file name 3, stem 2.5, folder 1.5).
    """

    table: Table
    column: str
    value: str
    rows: pd.DataFrame
    strength: float


class TableSkipped(ValueError):
    """A file under a table suffix that is not used as a label table, and why (one line).

    Args:
        relpath: The file, relative to the dataset root.
        reason: Why it was not read (too large, not a table, unparseable, no rows).
    """

    def __init__(self, relpath: str, reason: str) -> None:
        self.relpath = relpath
        self.reason = " / ".join(part.strip() for part in reason.splitlines() if part.strip())
        super().__init__(f"{relpath}: {self.reason}")


def load_table(path: Path, relpath: str) -> Table | None:
    """`read_table`, or None when the file is not used as a table (the reason is logged at DEBUG)."""
    try:
        return read_table(path, relpath)
    except TableSkipped as exc:
        log.debug("%s", exc)
        return None


def read_table(path: Path, relpath: str) -> Table:
    """Read a CSV/TSV/TXT, JSON, Excel or parquet table whatever its cells hold (`medio.table.read_table`).

    Every cell is a stripped string (empty cells ``""``), duplicate or blank headers get unique names, CSV
    rows with a wrong number of fields are dropped, image (bytes) columns are left out, JSON gives its
    records and keeps the document in `Table.raw`, Excel its first sheet with
    two or more columns.

    Args:
        path: The file.
        relpath: Its dataset-relative path.

    Returns:
        The table.

    Raises:
        TableSkipped: The file is too large, unreadable, not a table (one column, no records) or damaged.
    """
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise TableSkipped(relpath, f"{suffix or 'no extension'} is not a table format")
    excel = suffix in _EXCEL_SUFFIXES
    try:
        read = medio_table.read_table(
            path,
            max_rows=_MAX_EXCEL_ROWS if excel else None,
            max_bytes=_MAX_EXCEL_BYTES if excel else MAX_TABLE_BYTES,
        )
    except MedioError as exc:
        raise TableSkipped(relpath, exc.reason) from None
    except OSError as exc:
        raise TableSkipped(relpath, f"cannot read: {exc.strerror or exc}") from None
    table = Table(relpath, read.frame, raw=read.document)
    if table.frame.shape[1] < 2 and table.raw is None:
        raise TableSkipped(relpath, "not a table: fewer than two columns")
    return table


def sample_ids(
    relpath: str, patient_id: str | None = None, header: Mapping[str, Any] | None = None
) -> dict[str, float]:
    """Strings that may name a sample in a table, with how specific each is.

    Args:
        relpath: The sample's source path (``data/...``).
        patient_id: A patient id from the header (DICOM PatientID), if any.
        header: Header facts (`HEADER_ID_KEYS` are used: instance, series, study UIDs, PatientID).

    Returns:
        ``{identifier: strength}``: the path below ``data/`` and every shorter tail of it 3.2, the file name
        3, its stem 2.5, header ids 2-3, each folder on the path 1.5.
    """
    parts = relpath.split("/")
    name = parts[-1]
    ids: dict[str, float] = {}
    for folder in parts[1:-1]:
        ids[folder] = 1.5
    if patient_id:
        ids[patient_id] = 2.0
    for key, strength in HEADER_ID_KEYS.items():
        value = (header or {}).get(key)
        if value:
            ids[str(value)] = max(ids.get(str(value), 0.0), strength)
    stem = split_suffix(name)[0]
    ids[stem] = 2.5
    ids[name] = 3.0
    # Tables keyed by a path relative to data/ or to their own folder (labels.json {"a/b.nrrd": ...}).
    for k in range(1, len(parts) - 1):
        ids["/".join(parts[k:])] = 3.2
    # BIDS entities: "sub-01" names the participant (a bare "01" weakly); other bare values (a session "2")
    # only narrow rows another id matched (strength 0: never a join on their own).
    for key, value in bids_entities(name).items():
        if key == "suffix":
            continue
        ids.setdefault(f"{key}-{value}", 1.5)
        ids.setdefault(value, 1.0 if key == "sub" else 0.0)
    return ids


def join(table: Table, ids: dict[str, float]) -> Join | None:
    """Find the rows of ``table`` that belong to the sample named by ``ids``.

    Args:
        table: The table.
        ids: From `sample_ids`.

    Returns:
        The most specific join (ties: the column with fewer matching rows), or None.
    """
    best: Join | None = None
    for column, (exact, stems) in table.lookup().items():
        for ident, strength in ids.items():
            if strength <= 0.0:
                continue  # narrowing-only ids (a bare session number)
            positions = exact.get(ident)
            if positions is None:
                positions = exact.get(ident.lower())
            if positions is None:
                positions = stems.get(split_suffix(ident)[0])
                strength -= 0.25
            if not positions:
                continue
            if best is None or (strength, -len(positions)) > (best.strength, -len(best.rows)):
                best = Join(table, column, ident, table.frame.iloc[positions], strength)
    if best is not None and len(best.rows) > 1:
        best = _narrow(best, ids)
    return best


def _narrow(found: Join, ids: dict[str, float]) -> Join:
    """Keep the matched rows that another column also ties to the sample (participant + session)."""
    for column in found.rows.columns:
        if column == found.column:
            continue
        values = found.rows[column].astype(str).str.strip()
        keep = values.isin(list(ids))
        if 0 < int(keep.sum()) < len(found.rows):
            return Join(
                found.table, found.column, found.value, found.rows[keep.to_numpy()], found.strength + 0.3
            )
    return found

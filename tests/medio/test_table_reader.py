"""`medio.table.read_table`, the one table reader: encodings, BOMs, separators, workbooks, parquet, limits."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from medio.errors import CorruptFile, KeyNotFound, UnsupportedFormat
from medio.table import TableTooLarge, read_table


def _write(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    "encoded",
    [
        "file,label\ncafé.png,bénin\n".encode("cp1252"),
        "\ufefffile,label\ncafé.png,bénin\n".encode(),
        "file,label\ncafé.png,bénin\n".encode("utf-16"),
    ],
    ids=["cp1252", "utf-8-bom", "utf-16-bom"],
)
def test_text_is_decoded_whatever_its_encoding_and_the_bom_leaves_the_header(
    tmp_path: Path, encoded: bytes
) -> None:
    table = read_table(_write(tmp_path, "labels.csv", encoded))
    assert list(table.frame.columns) == ["file", "label"]
    assert table.frame.iloc[0].tolist() == ["café.png", "bénin"]


@pytest.mark.parametrize("sep", [",", "\t", ";", "|"])
def test_the_separator_is_sniffed_from_the_first_line(tmp_path: Path, sep: str) -> None:
    text = f" file {sep}label\na.png{sep} 1 \n"
    table = read_table(_write(tmp_path, "labels.txt", text.encode()))
    assert list(table.frame.columns) == ["file", "label"]
    assert table.frame.iloc[0].tolist() == ["a.png", "1"]  # padding stripped, every cell text


def test_a_tsv_header_with_commas_is_still_split_at_tabs(tmp_path: Path) -> None:
    text = b"id\tnote, with, commas\n1\tx, y\n"
    assert read_table(_write(tmp_path, "t.tsv", text)).frame.columns.tolist() == ["id", "note, with, commas"]
    assert read_table(_write(tmp_path, "t.csv", text)).frame.columns.tolist()[0] == "id\tnote"


def test_typed_reads_keep_numbers_and_streamed_reads_stop_early(tmp_path: Path) -> None:
    rows = "".join(f"{i};{i * 0.5}\n" for i in range(100))
    path = _write(tmp_path, "t.csv", f"n;half\n{rows}".encode())
    table = read_table(path, typed=True, max_rows=10, max_bytes=10)  # a streamed read is never refused
    assert len(table.frame) == 10 and table.frame["half"].dtype.kind == "f" and table.n_rows is None
    assert read_table(path).n_rows == 100


def test_workbook_gives_its_first_table_sheet_or_the_one_asked(tmp_path: Path) -> None:
    path = tmp_path / "labels.xlsx"
    with pd.ExcelWriter(path) as book:
        pd.DataFrame({"notes": ["read me"]}).to_excel(book, sheet_name="About", index=False)
        pd.DataFrame({"file": ["a.png", "b.png"], "grade": [1, 2]}).to_excel(
            book, sheet_name="Labels", index=False
        )
    table = read_table(path)
    assert table.sheets == ["About", "Labels"] and table.n_rows == 2
    assert read_table(path, sheet=0).frame.columns.tolist() == ["notes"]
    assert read_table(path).frame.columns.tolist() == ["file", "grade"]
    with pytest.raises(KeyNotFound, match="no sheet 'Nope'"):
        read_table(path, sheet="Nope")


def test_parquet_text_read_leaves_image_bytes_out(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"image": [b"\x89PNG"] * 2, "label": [0, None]}), str(path))
    assert read_table(path).frame.to_dict(orient="list") == {"label": ["0.0", ""]}
    assert list(read_table(path, typed=True).frame.columns) == ["image", "label"]


@pytest.mark.parametrize(
    ("name", "content", "error", "reason"),
    [
        ("bad.json", b'{"a": \xe2\x80\x9ccurly\xe2\x80\x9d}', CorruptFile, "invalid JSON"),
        ("bad.xlsx", b"PK\x03\x04 not really a zip", CorruptFile, "cannot parse"),
        ("bad.parquet", b"PAR1 not really parquet", CorruptFile, "cannot parse"),
        ("empty.csv", b"", UnsupportedFormat, "no comma, tab, semicolon or pipe"),
        ("words.csv", b"one column\nper line\n", UnsupportedFormat, "no comma"),
    ],
)
def test_a_file_that_is_no_table_raises_with_the_reason(
    tmp_path: Path, name: str, content: bytes, error: type[Exception], reason: str
) -> None:
    with pytest.raises(error, match=reason):
        read_table(_write(tmp_path, name, content))


def test_one_column_text_is_read_when_asked_and_large_files_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "classes.txt", b"nodule\nbenign\nmalignant\n")
    assert read_table(path, one_column=True).frame["nodule"].tolist() == ["benign", "malignant"]
    with pytest.raises(TableTooLarge, match="above the 10-byte table limit"):
        read_table(path, max_bytes=10)

"""Label tables as people export them (issue 30 item 4): every awkward form is read, or skipped with a reason,
and none raises out of the loader."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from agents.rules.tables import TableSkipped, join, read_table, sample_ids


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def test_bids_sidecar_with_missing_keys_reads_empty_cells_as_empty_text(tmp_path: Path) -> None:
    """The real crash: a dict of records where some records lack a key (pandas 3 keeps NaN floats)."""
    doc = {
        "SP": {"LongName": "Participant", "Levels": {"P": "Patient"}},
        "BDI": {"LongName": "Beck", "Units": "score"},
    }
    table = read_table(_write(tmp_path, "definitions.json", json.dumps(doc)), "data/definitions.json")
    assert list(table.frame["__key__"]) == ["SP", "BDI"]
    assert list(table.frame["Units"]) == ["", "score"]
    assert join(table, sample_ids("data/sub/BDI.png")) is not None  # the lookup no longer meets a float


def test_csv_with_empty_cells_mixed_types_and_a_bom_joins_its_rows(tmp_path: Path) -> None:
    text = "\ufeffimage , label,age\nA.png,1,\nB.png,,37.5\nC.png,tumour,x\n"
    table = read_table(_write(tmp_path, "labels.csv", text), "data/labels.csv")
    assert list(table.frame.columns) == ["image", "label", "age"]
    found = join(table, sample_ids("data/img/B.png"))
    assert found is not None and found.rows.iloc[0]["age"] == "37.5" and found.rows.iloc[0]["label"] == ""


def test_duplicate_and_blank_headers_get_unique_names(tmp_path: Path) -> None:
    text = "file;label;label ; \nA.png;1;2;x\n"
    table = read_table(_write(tmp_path, "t.csv", text), "data/t.csv")
    assert len(set(table.frame.columns)) == 4
    assert join(table, sample_ids("data/A.png")) is not None


def test_classic_mac_cr_line_ends_are_rows(tmp_path: Path) -> None:
    text = "participant\tgroup\rsub-k01\tK\rsub-p02\tP\r"
    table = read_table(_write(tmp_path, "participants.tsv", text), "data/participants.tsv")
    assert list(table.frame["group"]) == ["K", "P"]


def test_rows_with_a_wrong_field_count_are_dropped_not_fatal(tmp_path: Path) -> None:
    text = "file,label\nA.png,1\nB.png,2,extra,fields\nC.png,3\n"
    table = read_table(_write(tmp_path, "t.csv", text), "data/t.csv")
    assert list(table.frame["file"]) == ["A.png", "C.png"]


@pytest.mark.parametrize(
    ("doc", "column", "values"),
    [
        ({"file": ["a.png", "b.png"], "label": [0, 1]}, "label", ["0", "1"]),
        (
            {"info": {"v": 1}, "samples": [{"file": "a.png", "tags": ["x", "y"]}, {"file": "b.png"}]},
            "file",
            ["a.png", "b.png"],
        ),
        ([{"file": "a.png", "label": None}, {"file": "b.png", "label": 2}], "label", ["", "2"]),
    ],
    ids=["columns-as-lists", "records-under-a-key", "records-with-nulls"],
)
def test_json_with_lists_gives_its_rows(tmp_path: Path, doc: object, column: str, values: list[str]) -> None:
    table = read_table(_write(tmp_path, "labels.json", json.dumps(doc)), "data/labels.json")
    assert list(table.frame[column]) == values


def test_excel_label_sheet_after_a_cover_sheet_is_read(tmp_path: Path) -> None:
    path = tmp_path / "labels.xlsx"
    with pd.ExcelWriter(path) as book:
        pd.DataFrame({"notes": ["read me"]}).to_excel(book, sheet_name="About", index=False)
        pd.DataFrame({"file": ["a.png", "b.png"], "grade": [1, None]}).to_excel(
            book, sheet_name="Labels", index=False
        )
    table = read_table(path, "data/labels.xlsx")
    assert list(table.frame["grade"]) == ["1", ""]


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("bad.json", '{"a": “curly”}', "invalid JSON"),
        ("one.csv", "just one column\nper line\n", "no comma, tab, semicolon or pipe"),
        ("bad.xlsx", b"PK\x03\x04 not really a zip", "cannot parse"),
        ("bad.parquet", b"PAR1 not really parquet", "cannot parse"),
        ("empty.csv", b"", "no comma"),
    ],
)
def test_unreadable_tables_are_skipped_with_a_reason(
    tmp_path: Path, name: str, content: str | bytes, reason: str
) -> None:
    with pytest.raises(TableSkipped) as caught:
        read_table(_write(tmp_path, name, content), f"data/{name}")
    assert reason in caught.value.reason
    assert str(caught.value).startswith(f"data/{name}: ")

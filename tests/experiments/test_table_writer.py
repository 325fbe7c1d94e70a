"""The one table writer: ``<stem>.csv`` with every column at full precision, ``<stem>.md`` with text and
rendered tables, ``<stem>.tex`` with the headline table; the ablation and the leaderboard write through it."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pandas as pd

import experiments.analysis.ablation
import experiments.selection.leaderboard
from experiments.publish.tables import markdown_page, write_tables


def test_the_three_files_hold_data_page_and_headline(tmp_path: Path) -> None:
    frame = pd.DataFrame({"strategy": ["s0", "s3_x"], "E2E": [0.123456789, 0.5], "extra": [1, 2]})
    csv, md, tex = write_tables(tmp_path / "t", frame, ["# Title", frame[["strategy", "E2E"]], "note"], frame)
    assert [p.name for p in (csv, md, tex)] == ["t.csv", "t.md", "t.tex"]
    assert pd.read_csv(csv)["E2E"].tolist() == [0.123456789, 0.5]  # full precision, every column
    assert list(pd.read_csv(csv).columns) == ["strategy", "E2E", "extra"]
    page = md.read_text()
    assert page.startswith("# Title\n\n| strategy | E2E |") and page.endswith("\n\nnote\n")
    assert "0.1235" in page and "extra" not in page  # rendered at 4 decimals, only the columns given
    latex = tex.read_text()
    assert "\\toprule" in latex and "s3\\_x" in latex and latex.endswith("\n")


def test_a_page_of_text_only_is_written_as_given() -> None:
    assert markdown_page(["a", "b"]) == "a\n\nb\n"


def test_the_ablation_and_the_leaderboard_write_their_tables_through_it() -> None:
    for module in (experiments.analysis.ablation, experiments.selection.leaderboard):
        tree = ast.parse(inspect.getsource(module))
        called = {getattr(n.func, "id", "") for n in ast.walk(tree) if isinstance(n, ast.Call)}
        assert "write_tables" in called, module.__name__
        assert "to_latex" not in called, module.__name__

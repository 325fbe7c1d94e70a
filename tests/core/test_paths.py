"""`core.paths.resolve_below` gives ``os.path.realpath``'s answer, and says when it followed a link."""

from __future__ import annotations

import os
from pathlib import Path

from core.paths import resolve_below


def test_the_answer_is_realpaths_on_every_kind_of_path(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.txt").write_text("x", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    os.symlink(root / "a", root / "inside_link")
    os.symlink(tmp_path / "outside", root / "a" / "out_link")
    os.symlink(tmp_path / "nowhere", root / "dangling")
    os.symlink("b/../out_link", root / "a" / "relative_link")
    real = os.path.realpath(root)
    cases = {
        "a/b/f.txt": False,
        "a/missing/deeper": False,
        "a/b/f.txt/under_a_file": False,
        "inside_link/b/f.txt": True,
        "a/out_link/x": True,
        "dangling/x": True,
        "a/relative_link": True,
        "": False,
    }
    for relative, followed in cases.items():
        parts = [p for p in relative.split("/") if p]
        got, did_follow = resolve_below(real, parts)
        assert got == os.path.realpath(os.path.join(real, *parts)), relative
        assert did_follow is followed, relative

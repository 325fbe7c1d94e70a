"""Every manifest line form the benchmark uses (issue 30): ``index path``, ``index<TAB>path``, ``index: path``
(LCTSC), Windows paths, and the ambiguous lines where a colon belongs to the path; read as the reference reads
them (SPEC §1 and §4)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmark.errors import ManifestError
from benchmark.manifest import parse_manifest

AUTHORS = "/data4/chenxin/Med-Agent/forth_dataset"


def _manifest(tmp_path: Path, text: str, name: str = "ds") -> Path:
    root = tmp_path / name
    (root / "VLM").mkdir(parents=True)
    (root / "VLM" / "random.txt").write_bytes(text.encode("utf-8"))
    return root / "VLM" / "random.txt"


def reference_reading(line: str) -> tuple[int, str]:
    """The reference's reading of one stripped line, as SPEC describes it.

    SPEC §1 / §4 (S3): ``^(\\d+)\\s+(.+)$``; the colon form, which that pattern does not match, is read with
    ``split(":", 1)`` (issue 30, the LCTSC manifest).
    """
    match = re.match(r"^(\d+)\s+(.+)$", line)
    if match:
        return int(match.group(1)), match.group(2)
    head, rest = line.split(":", 1)
    return int(head), rest.strip()


# (line as written, the dataset-relative path it names). The dataset folder is "ds".
FORMS = {
    "space": (f"0 {AUTHORS}/ds/data/a/x.png", "data/a/x.png"),
    "tab": (f"1\t{AUTHORS}/ds/data/a/y.png", "data/a/y.png"),
    "blanks_and_tabs": (
        f"2 \t {AUTHORS}/ds/data/Dye samples/P001 masks.tif",
        "data/Dye samples/P001 masks.tif",
    ),
    "colon_space": (
        f"3: {AUTHORS}/ds/data/LCTSC/LCTSC-Test-S1-101/1-001.dcm",
        "data/LCTSC/LCTSC-Test-S1-101/1-001.dcm",
    ),
    "colon_tight": (f"4:{AUTHORS}/ds/data/b/z.dcm", "data/b/z.dcm"),
    "colon_tab": (f"5:\t{AUTHORS}/ds/data/b/w.dcm", "data/b/w.dcm"),
    "colon_windows_drive": ("6: D:\\MDS-Bench\\ds\\data\\scan 1\\x.png", "data/scan 1/x.png"),
    "colon_tight_windows": ("7:C:/bench/ds/data/y.png", "data/y.png"),
    "space_windows_drive": ("8 D:\\MDS-Bench\\ds\\data\\c\\v.nii.gz", "data/c/v.nii.gz"),
    "space_unc": ("9 \\\\server\\share\\ds\\data\\u.png", "data/u.png"),
    "colon_in_path_after_colon": (f"10: {AUTHORS}/ds/data/t 10:30/a.png", "data/t 10:30/a.png"),
    "colon_in_path_after_space": (f"11 {AUTHORS}/ds/data/t 10:30/b.png", "data/t 10:30/b.png"),
    "relative_colon": ("12: data/r/q.png", "data/r/q.png"),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_line_form_names_the_file_the_line_means(tmp_path: Path, form: str) -> None:
    line, relpath = FORMS[form]
    (entry,) = parse_manifest(_manifest(tmp_path, line + "\n"))
    assert entry.relpath == relpath
    assert entry.index == int(re.match(r"\d+", line).group(0))  # type: ignore[union-attr]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_index_and_path_agree_with_the_reference_reading(tmp_path: Path, form: str) -> None:
    line, _ = FORMS[form]
    (entry,) = parse_manifest(_manifest(tmp_path, line + "\n"))
    assert (entry.index, entry.raw) == reference_reading(line)


def test_lctsc_style_colon_manifest_parses_every_line(tmp_path: Path) -> None:
    """Expect: a 20-line ``<i>: /abs/path`` manifest (refused before issue 30) gives 20 entries."""
    lines = [f"{i}: {AUTHORS}/ds/data/LCTSC/LCTSC-Train-S1-{i:03d}/1-{i:03d}.dcm" for i in range(20)]
    entries = parse_manifest(_manifest(tmp_path, "\r\n".join(lines) + "\r\n"))
    assert [e.index for e in entries] == list(range(20))
    assert entries[7].relpath == "data/LCTSC/LCTSC-Train-S1-007/1-007.dcm"


def test_one_file_may_mix_the_forms(tmp_path: Path) -> None:
    text = "\ufeff" + "\n".join(FORMS[f][0] for f in sorted(FORMS)) + "\n"
    entries = parse_manifest(_manifest(tmp_path, text))
    assert {e.index: e.relpath for e in entries} == {
        reference_reading(line)[0]: rel for line, rel in FORMS.values()
    }


def test_blank_before_the_colon_reads_the_path_without_the_stray_colon(tmp_path: Path) -> None:
    """The one split that differs: the reference's whitespace rule would keep ``": /abs"`` as the path."""
    line = f"3 : {AUTHORS}/ds/data/a/x.png"
    (entry,) = parse_manifest(_manifest(tmp_path, line + "\n"))
    index, ref_path = reference_reading(line)
    assert (entry.index, entry.relpath) == (index, "data/a/x.png")
    assert ref_path == f": {entry.raw}"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("3:", "index 3 has no path"),
        ("3 :  ", "index 3 has no path"),
        ("C:\\bench\\ds\\data\\x.png", "is not a non-negative integer"),
        ("x3: data/a.png", "is not a non-negative integer"),
        ("3: /home/u/raw/a.png", "no '/data/' segment"),
    ],
)
def test_colon_lines_that_name_nothing_fail_with_file_and_line(
    tmp_path: Path, line: str, reason: str
) -> None:
    manifest = _manifest(tmp_path, f"0 data/ok.png\n{line}\n")
    with pytest.raises(ManifestError) as caught:
        parse_manifest(manifest)
    assert caught.value.line == 2
    assert reason in caught.value.reason

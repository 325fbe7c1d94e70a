"""Manifest parsing and path re-rooting (SPEC §1), including every bad line the issue lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.errors import ManifestError
from benchmark.groundtruth import load_ground_truth
from benchmark.manifest import parse_manifest, reroot, reroot_relpath

AUTHORS_3 = "/data3/chenxin/Agent_test/origin_dataset"
AUTHORS_4 = "/data4/chenxin/Med-Agent/forth_dataset"


def make_dataset(tmp_path: Path, lines: list[str], name: str = "ds", *, raw: str | None = None) -> Path:
    """A dataset folder ``<tmp>/<name>`` whose VLM/random.txt holds ``lines`` (or ``raw`` verbatim)."""
    root = tmp_path / name
    (root / "VLM").mkdir(parents=True)
    text = raw if raw is not None else "\n".join(lines) + "\n"
    (root / "VLM" / "random.txt").write_bytes(text.encode("utf-8"))
    return root


def test_space_separated_authors_paths_reroot_under_dataset_data(tmp_path: Path) -> None:
    root = make_dataset(tmp_path, [f"0 {AUTHORS_3}/ds/data/a/x.png", f"1 {AUTHORS_3}/ds/data/b/y.dcm"])
    entries = parse_manifest(root / "VLM" / "random.txt")
    assert [e.index for e in entries] == [0, 1]
    assert [e.relpath for e in entries] == ["data/a/x.png", "data/b/y.dcm"]
    assert entries[0].path == root.absolute() / "data" / "a" / "x.png"
    assert entries[0].raw == f"{AUTHORS_3}/ds/data/a/x.png"
    assert [e.line for e in entries] == [1, 2]


def test_tab_separator_is_accepted_like_rsna(tmp_path: Path) -> None:
    root = make_dataset(tmp_path, [f"0\t{AUTHORS_4}/ds/data/stage_2_train_images/abc.dcm"])
    (entry,) = parse_manifest(root / "VLM" / "random.txt")
    assert entry.relpath == "data/stage_2_train_images/abc.dcm"


def test_only_the_first_whitespace_run_separates_index_from_a_path_with_spaces(tmp_path: Path) -> None:
    root = make_dataset(tmp_path, [f"7 \t  {AUTHORS_3}/ds/data/Dye samples/P001  masks.tif"])
    (entry,) = parse_manifest(root / "VLM" / "random.txt")
    assert entry.index == 7
    assert entry.relpath == "data/Dye samples/P001  masks.tif"
    assert entry.path.name == "P001  masks.tif"


@pytest.mark.parametrize(
    "raw",
    [
        "/data3/chenxin/Agent_test/third_dataset/echo/data/Dataset/A4C/Videos/CR1-000039.avi",
        "/data4/chenxin/Med-Agent/third_dataset/echo/data/Dataset/A4C/Videos/CR1-000039.avi",
    ],
    ids=["Agent_test-root", "Med-Agent-root"],
)
def test_both_authors_roots_reroot_to_the_same_file(tmp_path: Path, raw: str) -> None:
    assert reroot(raw, tmp_path / "echo") == (tmp_path / "echo" / "data/Dataset/A4C/Videos/CR1-000039.avi")


def test_relative_data_path_is_taken_from_the_dataset_root(tmp_path: Path) -> None:
    root = make_dataset(tmp_path, ["0 data/x/y.nii.gz", "1 ./data/z.png"])
    assert [e.relpath for e in parse_manifest(root / "VLM" / "random.txt")] == [
        "data/x/y.nii.gz",
        "data/z.png",
    ]


def test_nested_data_folders_inside_raw_data_are_kept() -> None:
    # The FIRST "data" component is the dataset's; later ones belong to the raw layout.
    assert reroot_relpath("/data3/u/other/data/train/data/x.png") == "data/train/data/x.png"


def test_dataset_name_anchors_the_cut_when_the_authors_root_is_named_data() -> None:
    assert reroot_relpath("/data/u/grp/kits/data/case_1/seg.nii.gz", "kits") == "data/case_1/seg.nii.gz"


def test_blank_lines_crlf_and_trailing_whitespace_are_ignored(tmp_path: Path) -> None:
    raw = f"\ufeff0 {AUTHORS_3}/ds/data/a.png  \r\n\r\n   \r\n1 {AUTHORS_3}/ds/data/b.png\t\r\n"
    root = make_dataset(tmp_path, [], raw=raw)
    entries = parse_manifest(root / "VLM" / "random.txt")
    assert [(e.index, e.relpath, e.line) for e in entries] == [(0, "data/a.png", 1), (1, "data/b.png", 4)]


def test_entries_come_back_in_index_order(tmp_path: Path) -> None:
    root = make_dataset(tmp_path, ["2 data/c.png", "0 data/a.png", "1 data/b.png"])
    assert [e.relpath for e in parse_manifest(root / "VLM" / "random.txt")] == [
        "data/a.png",
        "data/b.png",
        "data/c.png",
    ]


def test_dotdot_that_stays_inside_data_is_normalised() -> None:
    assert reroot_relpath("/x/ds/data/a/../b.png", "ds") == "data/b.png"


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ("3", "has no path"),
        ("3   ", "has no path"),
        ("x3 data/a.png", "not a non-negative integer"),
        ("-1 data/a.png", "not a non-negative integer"),
        (f"0 {AUTHORS_3}/ds/data/again.png", "duplicated index 0 (first seen on line 1)"),
        ("4 /home/someone/ds/raw/a.png", "no '/data/' segment"),
        ("4 raw/a.png", "must start with 'data/'"),
        ("4 /x/ds/data/../../etc/passwd", "escapes the data/ folder"),
        ("4 data/../secret.txt", "escapes the data/ folder"),
        ("4 /x/ds/data/", "names the data/ folder itself"),
    ],
)
def test_bad_line_raises_manifest_error_naming_file_and_line(
    tmp_path: Path, bad_line: str, reason: str
) -> None:
    root = make_dataset(tmp_path, [f"0 {AUTHORS_3}/ds/data/ok.png", "", bad_line])
    manifest = root / "VLM" / "random.txt"
    with pytest.raises(ManifestError) as caught:
        parse_manifest(manifest)
    err = caught.value
    assert err.path == manifest
    assert err.line == 3
    assert reason in err.reason
    assert str(err).startswith(f"{manifest}:3: ")


def test_missing_raw_file_is_an_error_only_with_check_exists(tmp_path: Path) -> None:
    root = make_dataset(tmp_path, ["0 data/present.png", "1 data/series_folder", "2 data/absent.png"])
    (root / "data" / "series_folder").mkdir(parents=True)
    (root / "data" / "present.png").write_bytes(b"x")
    manifest = root / "VLM" / "random.txt"
    assert len(parse_manifest(manifest)) == 3
    with pytest.raises(ManifestError) as caught:
        parse_manifest(manifest, check_exists=True)
    assert caught.value.line == 3
    assert "absent.png" in caught.value.reason
    assert str(caught.value).startswith(f"{manifest}:3: raw file for index 2 not found")


def test_missing_and_empty_manifests_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="manifest not found") as missing:
        parse_manifest(tmp_path / "nowhere" / "VLM" / "random.txt")
    assert missing.value.path == tmp_path / "nowhere" / "VLM" / "random.txt"
    root = make_dataset(tmp_path, [], raw="\n  \n")
    with pytest.raises(ManifestError, match="no entries"):
        parse_manifest(root / "VLM" / "random.txt")


def test_explicit_dataset_root_overrides_the_grandparent(tmp_path: Path) -> None:
    manifest = tmp_path / "flat_random.txt"
    manifest.write_text(f"0 {AUTHORS_4}/kits23/data/dataset/case_1/segmentation.nii.gz\n")
    (entry,) = parse_manifest(manifest, tmp_path / "kits23")
    assert entry.path == (tmp_path / "kits23" / "data/dataset/case_1/segmentation.nii.gz").absolute()


def test_public_reroot_error_names_the_raw_path() -> None:
    with pytest.raises(ManifestError) as caught:
        reroot("/somewhere/else.png", "/bench/ds")
    assert caught.value.path == Path("/somewhere/else.png")
    assert caught.value.line is None


def _real_manifests(mdsbench_dir: Path) -> list[tuple[Path, Path]]:
    """(manifest, dataset root) for every published manifest: examples/<D>/ and conformance/cases/<D>/VLM/."""
    pairs = [(m, m.parent) for m in sorted((mdsbench_dir / "examples").glob("*/random.txt"))]
    pairs += [
        (m, m.parent.parent) for m in sorted((mdsbench_dir / "conformance/cases").glob("*/VLM/random.txt"))
    ]
    return pairs


def test_every_real_manifest_reroots_onto_the_ground_truth_source_file(mdsbench_dir: Path) -> None:
    pairs = _real_manifests(mdsbench_dir)
    assert pairs, f"no random.txt found under {mdsbench_dir}"
    for manifest, root in pairs:
        entries = parse_manifest(manifest, root)
        assert [e.index for e in entries] == list(range(20)), manifest
        gt = load_ground_truth(next(manifest.parent.glob("ground_truth*.json")))
        for e in entries:
            assert e.relpath.startswith("data/"), (manifest, e)
            assert e.path.is_relative_to(root.absolute() / "data"), (manifest, e)
            # The re-rooted path is exactly what the GT expects the agent to report as the source.
            assert e.relpath == gt.sample(e.index).expected_extra["source_file"], (manifest, e)


def test_manifest_errors_survive_pickling_for_process_pools() -> None:
    import pickle

    err = pickle.loads(pickle.dumps(ManifestError("/b/ds/VLM/random.txt", "duplicated index 3", line=4)))
    assert isinstance(err, ManifestError)
    assert (str(err), err.line, err.reason) == (
        "/b/ds/VLM/random.txt:4: duplicated index 3",
        4,
        "duplicated index 3",
    )


@pytest.mark.parametrize(
    "raw",
    [
        r"D:\MDS-Bench\forth_dataset\ds\data\case 1\x.nii.gz",
        "D:/MDS-Bench/forth_dataset/ds/data/case 1/x.nii.gz",
        r"\\nas01\share\forth_dataset\ds\data\case 1\x.nii.gz",
        r"data\case 1\x.nii.gz",
    ],
)
def test_windows_manifest_paths_reroot_at_their_data_segment(tmp_path: Path, raw: str) -> None:
    root = make_dataset(tmp_path, [f"0 {raw}"])
    (entry,) = parse_manifest(root / "VLM" / "random.txt")
    assert entry.relpath == "data/case 1/x.nii.gz"
    assert entry.path == root.absolute() / "data" / "case 1" / "x.nii.gz"


def test_windows_path_without_a_data_segment_is_refused_for_that_reason() -> None:
    with pytest.raises(ManifestError, match="no '/data/' segment"):
        reroot_relpath(r"D:\MDS-Bench\ds\images\x.png", "ds")

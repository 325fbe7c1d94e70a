"""Dataset discovery under a benchmark root: nesting, pruning, broken datasets, runs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from benchmark.discover import Dataset, discover, discover_with_problems
from benchmark.errors import BenchmarkError, LayoutError, ManifestError


def add_dataset(parent: Path, name: str, lines: list[str] | None = None) -> Path:
    """A dataset folder with a manifest (two good lines by default)."""
    root = parent / name
    (root / "VLM").mkdir(parents=True)
    body = (
        lines if lines is not None else [f"0 /data3/a/{name}/data/x0.png", f"1 /data3/a/{name}/data/x1.png"]
    )
    (root / "VLM" / "random.txt").write_text("\n".join(body) + "\n")
    return root


def test_datasets_are_found_at_any_depth_and_sorted_by_name(tmp_path: Path) -> None:
    add_dataset(tmp_path / "datasets" / "fifth_dataset", "rsna")
    add_dataset(tmp_path / "datasets" / "forth_dataset", "kits23")
    add_dataset(tmp_path, "alpha")
    found = discover(tmp_path)
    assert [d.name for d in found] == ["alpha", "kits23", "rsna"]
    kits = found[1]
    assert kits.root == (tmp_path / "datasets" / "forth_dataset" / "kits23").absolute()
    assert kits.manifest_path == kits.root / "VLM" / "random.txt"
    assert kits.vlm_dir == kits.root / "VLM"
    assert kits.indices == [0, 1]
    assert kits.entries()[1].path == kits.root / "data" / "x1.png"


def test_a_dataset_folder_itself_can_be_the_root(tmp_path: Path) -> None:
    root = add_dataset(tmp_path, "solo")
    assert [d.root for d in discover(root)] == [root.absolute()]


def test_discovery_does_not_descend_into_data_or_vlm(tmp_path: Path) -> None:
    outer = add_dataset(tmp_path, "outer")
    # Folders that merely look like datasets inside raw data or run outputs are not datasets.
    add_dataset(outer / "data", "raw_lookalike")
    add_dataset(outer / "VLM" / "run1", "run_lookalike")
    add_dataset(tmp_path / ".cache", "hidden")
    assert [d.name for d in discover(tmp_path)] == ["outer"]


def test_broken_dataset_is_skipped_with_a_warning_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    add_dataset(tmp_path, "good_a")
    add_dataset(tmp_path, "broken", ["0 data/a.png", "0 data/b.png"])
    add_dataset(tmp_path, "good_b")
    with caplog.at_level(logging.WARNING, logger="benchmark.discover"):
        datasets, problems = discover_with_problems(tmp_path)
    assert [d.name for d in datasets] == ["good_a", "good_b"]
    assert [p.name for p in problems] == ["broken"]
    manifest = tmp_path.absolute() / "broken" / "VLM" / "random.txt"
    assert isinstance(problems[0].error, ManifestError)
    assert problems[0].reason.startswith(f"{manifest}:2: duplicated index 0")
    assert any("broken" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    assert [d.name for d in discover(tmp_path)] == ["good_a", "good_b"]


def test_missing_root_raises_saying_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError, match="does not exist") as caught:
        discover(tmp_path / "nope")
    assert caught.value.path == (tmp_path / "nope").absolute()
    assert "VLM/random.txt" in str(caught.value)


def test_names_filter_keeps_only_the_requested_datasets(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        add_dataset(tmp_path, name)
    assert [d.name for d in discover(tmp_path, names=["c", "a"])] == ["a", "c"]


def test_unknown_requested_name_lists_the_available_ones(tmp_path: Path) -> None:
    add_dataset(tmp_path, "kits23")
    with pytest.raises(BenchmarkError, match=r"no dataset named kits24 \(available: kits23\)"):
        discover(tmp_path, names=["kits24"])


def test_runs_are_vlm_subfolders_holding_agent_outputs(tmp_path: Path) -> None:
    ds = Dataset.from_root(add_dataset(tmp_path, "ds"))
    (ds.vlm_dir / "s3" / "agent1_data_organization").mkdir(parents=True)
    (ds.vlm_dir / "oracle" / "agent1_data_organization").mkdir(parents=True)
    (ds.vlm_dir / "notes").mkdir()
    assert ds.runs() == ["oracle", "s3"]
    assert ds.prediction_dir("s3") == ds.vlm_dir / "s3" / "agent1_data_organization"
    with pytest.raises(LayoutError, match="plain folder name"):
        ds.prediction_dir("../escape")


def test_entries_are_parsed_once_and_looked_up_by_index(tmp_path: Path) -> None:
    ds = Dataset.from_root(add_dataset(tmp_path, "ds"))
    assert ds.entries() is ds.entries()
    assert ds.entry(1).relpath == "data/x1.png"
    with pytest.raises(KeyError, match="no index 5"):
        ds.entry(5)


def test_same_name_in_two_groups_keeps_both_and_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    add_dataset(tmp_path / "group_b", "kits23")
    add_dataset(tmp_path / "group_a", "kits23")
    with caplog.at_level(logging.WARNING, logger="benchmark.discover"):
        found = discover(tmp_path)
    assert [d.root.parent.name for d in found] == ["group_a", "group_b"]
    assert any("two datasets are named 'kits23'" in r.getMessage() for r in caplog.records)


def test_folders_that_look_like_datasets_but_lack_a_manifest_are_named_in_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    add_dataset(tmp_path, "good")
    (tmp_path / "no_manifest" / "data").mkdir(parents=True)
    (tmp_path / "empty_vlm" / "VLM").mkdir(parents=True)
    (tmp_path / "just_files").mkdir()
    with caplog.at_level(logging.WARNING, logger="benchmark.discover"):
        found = discover(tmp_path)
    assert [d.name for d in found] == ["good"]
    lines = [r.getMessage() for r in caplog.records if "not a dataset" in r.getMessage()]
    assert len(lines) == 1
    assert "skipped 2 folder(s)" in lines[0]
    assert "no_manifest" in lines[0] and "empty_vlm" in lines[0] and "just_files" not in lines[0]


def test_linked_dataset_folders_are_found_and_a_loop_or_second_link_is_skipped_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    add_dataset(store, "alpha")
    add_dataset(store / "group", "beta")
    subset = tmp_path / "subset"  # how a subset of a large benchmark is picked: a folder of links
    (subset / "nested").mkdir(parents=True)
    (subset / "alpha").symlink_to(store / "alpha", target_is_directory=True)
    (subset / "nested" / "beta").symlink_to(store / "group" / "beta", target_is_directory=True)
    (subset / "nested" / "up").symlink_to(subset, target_is_directory=True)  # a loop
    (subset / "alpha_again").symlink_to(store / "alpha", target_is_directory=True)
    with caplog.at_level(logging.WARNING, logger="benchmark.discover"):
        found = discover(subset)
    assert [(d.name, d.root) for d in found] == [
        ("alpha", subset / "alpha"),
        ("beta", subset / "nested" / "beta"),
    ]
    assert found[1].entries()[0].path == subset / "nested" / "beta" / "data" / "x0.png"
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("skipped 2 linked folder(s) leading to a folder already walked")
    assert f"{subset / 'alpha_again'} -> {store / 'alpha'}" in line and f"{subset / 'nested' / 'up'}" in line


def test_a_real_folder_is_walked_under_its_own_name_before_a_link_to_it(tmp_path: Path) -> None:
    add_dataset(tmp_path, "real")
    # The link sorts first, yet the real folder is the one found.
    (tmp_path / "a_link").symlink_to(tmp_path / "real", target_is_directory=True)
    assert [d.root for d in discover(tmp_path)] == [(tmp_path / "real").absolute()]

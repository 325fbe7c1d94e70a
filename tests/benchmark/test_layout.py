"""The output layout (agent1_data_organization) and the atomic writes underneath it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from benchmark.errors import LayoutError
from benchmark.layout import AGENT_DIR, OutputLayout
from core.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text


def test_for_run_builds_the_reference_scorer_paths(tmp_path: Path) -> None:
    out = OutputLayout.for_run(tmp_path / "kits23", "s3")
    assert out.root == tmp_path / "kits23" / "VLM" / "s3" / AGENT_DIR
    assert out.images_dir == out.root / "images"
    assert out.masks_dir == out.root / "masks"
    assert out.annotations_dir == out.root / "standardized_annotations"
    assert out.data_meta_path == out.root / "data_meta.json"
    assert out.image_path(4) == out.root / "images" / "4.png"
    assert out.image_path(4, ".jpg") == out.root / "images" / "4.jpg"
    assert out.mask_path(4) == out.root / "masks" / "4.png"
    assert out.annotation_path(4) == out.root / "standardized_annotations" / "4.json"
    with pytest.raises(LayoutError, match="plain folder name"):
        OutputLayout.for_run(tmp_path, "a/b")


def test_resolve_accepts_the_agent_folder_or_its_run_folder(tmp_path: Path) -> None:
    agent = tmp_path / "run" / AGENT_DIR
    agent.mkdir(parents=True)
    assert OutputLayout.resolve(agent).root == agent
    assert OutputLayout.resolve(tmp_path / "run").root == agent


def test_resolve_explains_what_it_expected(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(LayoutError, match=f"expected a folder named {AGENT_DIR}") as caught:
        OutputLayout.resolve(tmp_path / "plain")
    assert caught.value.path == tmp_path / "plain"
    with pytest.raises(LayoutError, match="does not exist"):
        OutputLayout.resolve(tmp_path / "missing")


def test_annotation_and_data_meta_round_trip(tmp_path: Path) -> None:
    out = OutputLayout(tmp_path / AGENT_DIR)
    annotation = {
        "record": {"image_path": "images/0.png"},
        "context": {"sample": {"site_id": "NA", "名": "值"}},
    }
    out.write_annotation(0, {**annotation, "n": np.int64(3), "size": np.array([2, 3])})
    out.write_data_meta({"dataset_name": "Toy", "data_volume": {"total": 1}})
    assert out.read_annotation(0) == {**annotation, "n": 3, "size": [2, 3]}
    assert out.read_data_meta() == {"dataset_name": "Toy", "data_volume": {"total": 1}}
    assert "名" in out.annotation_path(0).read_text(encoding="utf-8")  # ensure_ascii=False


def test_read_annotation_returns_any_top_level_type(tmp_path: Path) -> None:
    out = OutputLayout(tmp_path)
    out.write_annotation(1, [{"record": {}}])
    assert out.read_annotation(1) == [{"record": {}}]


def test_missing_and_malformed_annotations_raise_layout_errors_with_the_reason(tmp_path: Path) -> None:
    out = OutputLayout(tmp_path)
    with pytest.raises(LayoutError, match="annotation not found") as missing:
        out.read_annotation(5)
    assert missing.value.path == out.annotation_path(5)
    out.annotations_dir.mkdir()
    out.annotation_path(6).write_text('{\n  "record": {\n    "x": 1,,\n  }\n}', encoding="utf-8")
    with pytest.raises(LayoutError) as malformed:
        out.read_annotation(6)
    assert malformed.value.line == 3
    assert str(malformed.value).startswith(f"{out.annotation_path(6)}:3: malformed JSON")
    with pytest.raises(LayoutError, match=r"data_meta\.json not found"):
        out.read_data_meta()


@pytest.mark.parametrize("shape", [(5, 7), (5, 7, 3)], ids=["grey", "rgb"])
def test_written_image_is_a_png_with_the_same_pixels(tmp_path: Path, shape: tuple[int, ...]) -> None:
    pixels = np.arange(np.prod(shape), dtype=np.uint8).reshape(shape)
    out = OutputLayout(tmp_path)
    path = out.write_image(2, pixels)
    assert path == out.image_path(2)
    with Image.open(path) as img:
        assert img.format == "PNG"
        assert img.size == (7, 5)
        assert np.array_equal(np.asarray(img), pixels)


def test_written_mask_keeps_class_ids(tmp_path: Path) -> None:
    mask = np.zeros((6, 4), dtype=np.uint8)
    mask[1:3, 1:3] = 2
    out = OutputLayout(tmp_path)
    with Image.open(out.write_mask(0, mask)) as img:
        assert np.array_equal(np.asarray(img), mask)


@pytest.mark.parametrize(
    ("method", "pixels", "reason"),
    [
        ("write_image", np.zeros((4, 4), dtype=np.uint16), "must be a uint8 array"),
        ("write_image", np.zeros((4, 4, 2), dtype=np.uint8), "has shape|have shape"),
        ("write_mask", np.zeros((4, 4, 3), dtype=np.uint8), r"expected a non-empty \(H, W\) array"),
        ("write_mask", np.zeros((0, 4), dtype=np.uint8), "non-empty"),
    ],
)
def test_bad_pixel_arrays_are_rejected_before_writing(
    tmp_path: Path, method: str, pixels: np.ndarray, reason: str
) -> None:
    out = OutputLayout(tmp_path)
    with pytest.raises(LayoutError, match=reason):
        getattr(out, method)(0, pixels)
    assert not out.images_dir.exists() and not out.masks_dir.exists()


def test_png_writes_go_through_medio_write_png(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import medio

    calls: list[Path] = []

    def fake_write_png(pixels: np.ndarray, path: str | Path) -> None:
        calls.append(Path(path))
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(b"png")

    monkeypatch.setattr(medio, "write_png", fake_write_png)
    out = OutputLayout(tmp_path)
    out.write_image(3, np.zeros((2, 2), dtype=np.uint8))
    assert calls == [out.image_path(3)]


def test_find_image_follows_the_reference_order_case_sensitively(tmp_path: Path) -> None:
    out = OutputLayout(tmp_path)
    out.images_dir.mkdir()
    for name in ("0.jpg", "0.png", "1.jpeg", "1.jpg", "2.jpeg", "3.PNG"):
        (out.images_dir / name).write_bytes(b"x")
    assert out.find_image(0) == out.images_dir / "0.png"
    assert out.find_image(1) == out.images_dir / "1.jpg"
    assert out.find_image(2) == out.images_dir / "2.jpeg"
    assert out.find_image(3) is None
    assert out.find_image(9) is None


def test_annotation_indices_are_canonical_integer_stems(tmp_path: Path) -> None:
    out = OutputLayout(tmp_path)
    out.annotations_dir.mkdir()
    for name in ("10.json", "2.json", "0.json", "007.json", "case_1.json", "notes.txt"):
        (out.annotations_dir / name).write_text("{}")
    (out.annotations_dir / "5.json").mkdir()  # a folder is not an annotation
    assert out.annotation_indices() == [0, 2, 10]
    assert out.annotation_stems() == ["0", "2", "10", "007", "case_1"]
    assert OutputLayout(tmp_path / "empty").annotation_indices() == []


def test_negative_or_boolean_indices_are_refused(tmp_path: Path) -> None:
    out = OutputLayout(tmp_path)
    with pytest.raises(ValueError, match="non-negative int"):
        out.annotation_path(-1)
    with pytest.raises(ValueError, match="non-negative int"):
        out.image_path(True)


# ---------------------------------------------------------------------------------------------- atomic writes
def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_atomic_writes_create_parents_and_leave_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    atomic_write_bytes(target / "x.bin", b"\x00\x01")
    atomic_write_text(target / "x.txt", "héllo\n")
    atomic_write_json(target / "x.json", {"k": "v"}, indent=None)
    assert (target / "x.bin").read_bytes() == b"\x00\x01"
    assert (target / "x.txt").read_bytes() == "héllo\n".encode()
    assert (target / "x.json").read_text() == '{"k": "v"}'
    assert leftovers(target) == []


def test_failed_replace_keeps_the_old_file_and_removes_the_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "data_meta.json"
    atomic_write_json(path, {"version": "old"})

    def broken_replace(src: Any, dst: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_json(path, {"version": "new"})
    assert json.loads(path.read_text()) == {"version": "old"}
    assert leftovers(tmp_path) == []


def test_destination_is_never_seen_half_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "0.json"
    atomic_write_json(path, {"v": "old"})
    new = {"v": "new", "pad": "x" * 100_000}
    seen: list[tuple[Any, Any]] = []
    real_replace = os.replace

    def watching_replace(src: Any, dst: Any) -> None:
        # Just before the swap: the destination still holds the old content, the temp the complete new one.
        seen.append((json.loads(Path(dst).read_text()), json.loads(Path(src).read_text())))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", watching_replace)
    atomic_write_json(path, new)
    assert seen == [({"v": "old"}, new)]
    assert json.loads(path.read_text()) == new


def test_unserialisable_json_leaves_nothing_behind(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="not JSON serialisable"):
        atomic_write_json(tmp_path / "bad.json", {"x": object()})
    assert list(tmp_path.iterdir()) == []

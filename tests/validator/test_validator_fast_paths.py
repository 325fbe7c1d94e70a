"""The speed-ups give the same answers as the slow paths they replace: PNG verification, the BOX shrink, path
resolution, the content caches, the per-call stat cache and the label-table index."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from validator import _raw, _tables
from validator._png import verified_png_size
from validator.sample import _resolve_inside, safe_join
from validator.validate import clear_cache, validate
from validator.values import norm_token

CLS = "synth-histology-png"


def _pil_verdict(data: bytes) -> tuple[int, int] | None:
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.verify()
            return (int(im.size[0]), int(im.size[1]))
    except Exception:  # any refusal counts as invalid, as in the benchmark
        return None


def _pngs() -> list[bytes]:
    rng = np.random.default_rng(0)
    images = [
        Image.fromarray((rng.random((4, 5, 3)) * 255).astype(np.uint8)),
        Image.fromarray((rng.random((3, 7)) * 255).astype(np.uint8)),
        Image.fromarray((rng.random((4, 4)) * 4).astype(np.uint8), "L").convert("P"),
        Image.fromarray((rng.random((3, 3)) * 60000).astype(np.uint16)),
        Image.fromarray(rng.random((5, 9)) > 0.5),
    ]
    out = []
    for im in images:
        for options in ({}, {"optimize": True}):
            buffer = io.BytesIO()
            im.save(buffer, format="PNG", **options)
            out.append(buffer.getvalue())
    return out


@pytest.mark.parametrize("data", _pngs(), ids=lambda d: f"{len(d)}B")
def test_png_fast_verify_never_disagrees_with_pil_on_flipped_or_truncated_bytes(data: bytes) -> None:
    assert verified_png_size(data) == _pil_verdict(data)  # intact files take the fast path
    variants = [data[:k] for k in range(len(data))] + [data + b"trailing"]
    for i in range(len(data)):
        for bit in (0x01, 0x80):
            corrupted = bytearray(data)
            corrupted[i] ^= bit
            variants.append(bytes(corrupted))
    for variant in variants:
        fast = verified_png_size(variant)
        if fast is not None:
            assert fast == _pil_verdict(variant)


def test_png_fast_verify_leaves_non_png_and_text_chunks_to_pil() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (3, 2)).save(buffer, format="JPEG")
    assert verified_png_size(buffer.getvalue()) is None
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("k", "v")
    buffer = io.BytesIO()
    Image.new("L", (3, 2)).save(buffer, format="PNG", pnginfo=info)
    assert verified_png_size(buffer.getvalue()) is None
    assert _pil_verdict(buffer.getvalue()) == (3, 2)


def _pil_shrink(arr: np.ndarray, size: int) -> np.ndarray:
    grey = arr[..., :3].astype(np.float32).mean(axis=2) if arr.ndim == 3 else arr.astype(np.float32)
    im = Image.fromarray(grey, mode="F")
    return np.asarray(im.resize((size, size), Image.Resampling.BOX), dtype=np.float32)


@pytest.mark.parametrize("shape", [(64, 64), (96, 128), (7, 300), (513, 97), (1, 1), (20, 20), (33, 31)])
@pytest.mark.parametrize("channels", [0, 1, 3, 4])
def test_shrink_equals_pils_box_resize_of_the_channel_mean(shape: tuple[int, int], channels: int) -> None:
    rng = np.random.default_rng(sum(shape) + channels)
    full = shape if channels == 0 else (*shape, channels)
    for dtype, top in ((np.uint8, 255), (np.uint16, 60000), (np.float32, 1.0)):
        arr = (rng.random(full) * top).astype(dtype)
        for size in (16, 32):
            got = _raw.shrink(arr, size)
            assert got.dtype == np.float32 and got.shape == (size, size)
            np.testing.assert_allclose(got, _pil_shrink(arr, size), rtol=1e-5, atol=1e-3 * top / 255)


def test_box_windows_are_contiguous_equal_weights_that_tile_the_axis_when_shrinking() -> None:
    for n in range(1, 400):
        for size in (8, 32):
            weights = _raw.box_weights(n, size)
            lo, hi, count = _raw.box_windows(n, size)
            for k in range(size):
                nonzero = np.flatnonzero(weights[k])
                assert list(nonzero) == list(range(lo[k], hi[k]))
                np.testing.assert_allclose(weights[k, nonzero], 1.0 / count[k])
            if n >= size:
                assert lo[0] == 0 and hi[-1] == n and list(hi[:-1]) == list(lo[1:])


def test_safe_join_matches_realpath_with_symlinks_dots_and_missing_files(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.png").write_bytes(b"x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "in_link").symlink_to(root / "a")
    (root / "out_link").symlink_to(outside)
    base = os.path.realpath(root)
    cases = [
        "a/b/f.png",
        "./a/./b/f.png",
        "a//b/f.png",
        "a/missing/f.png",
        "a/b/f.png/x",
        "in_link/b/f.png",
        "out_link/f.png",
        "a/../a/b/f.png",
        "a/../../outside",
        ".",
    ]
    for relative in cases:
        _resolve_inside.cache_clear()
        target = os.path.realpath(os.path.join(base, relative))
        inside = target == base or target.startswith(base + os.sep)
        got = safe_join(root, relative)
        assert (str(got) if got is not None else None) == (target if inside else None), relative


def test_byte_identical_candidate_gets_the_identical_report(oracle_copy: Any, tmp_path: Path) -> None:
    first = oracle_copy(CLS)
    second = tmp_path / "second"
    shutil.copytree(first.root, second)
    clear_cache(evidence=True)
    a = validate(first.root, first.dataset, use_cache=False)
    b = validate(second, first.dataset, use_cache=False)  # image facts and grey copies come from the cache
    assert a.to_json()["samples"] == b.to_json()["samples"]
    assert [s.checks["source_renders_like_image"].result.details for s in a.samples.values()] == [
        s.checks["source_renders_like_image"].result.details for s in b.samples.values()
    ]


def test_a_changed_image_is_not_hidden_by_the_content_or_stat_caches(oracle_copy: Any) -> None:
    c = oracle_copy(CLS)
    clear_cache(evidence=True)
    assert validate(c.root, c.dataset).samples[1].total == pytest.approx(1.0)
    other = (c.root / "images" / "2.png").read_bytes()
    (c.root / "images" / "1.png").write_bytes(other)  # another sample's picture
    changed = validate(c.root, c.dataset, use_cache=False).samples[1]
    assert changed.checks["source_renders_like_image"].score < 1.0
    (c.root / "images" / "1.png").unlink()
    assert validate(c.root, c.dataset, use_cache=False).samples[1].checks["image_path"].score == 0.0


def test_label_index_finds_the_rows_a_naive_scan_finds(tmp_path: Path) -> None:
    data = tmp_path / "ds" / "data"
    data.mkdir(parents=True)
    (data / "labels.csv").write_text("image,dx\nISIC_1,Melanoma\nISIC_2,nevus\nisic-1,Basal cell\n,\n")
    (data / "more.tsv").write_text("file\tlabel\nISIC_2\tMelanoma\n")
    index = _tables.label_index(tmp_path / "ds")
    rows = _tables.label_tables(tmp_path / "ds")
    for stem, name in (("isic 1", "isic 1 png"), ("isic 2", ""), ("none", "")):
        naive = [
            {c for c in map(norm_token, row) if c}
            for row in rows
            if any(c and c in (stem, name) for c in map(norm_token, row))
        ]
        hits = sorted({r for t in (stem, name) if t for r in index.by_cell.get(t, ())})
        assert sorted(sorted(index.rows[r]) for r in hits) == sorted(map(sorted, naive))


def test_distinct_values_matches_numpy_unique() -> None:
    rng = np.random.default_rng(3)
    for arr in (
        (rng.random((9, 7)) * 5).astype(np.uint8),
        (rng.random((9, 7)) * 3000).astype(np.uint16),
        (rng.random((9, 7)) * 5).astype(np.int32) - 2,
        rng.random((9, 7)) > 0.5,
    ):
        assert _raw.distinct_values(arr) == [int(v) for v in np.unique(arr)]

"""The render cache: a later candidate's render is byte-for-byte the first one's, and never stale."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from agent_scripts import make_task
from PIL import Image

from agents.tools.render_cache import RENDERS, RenderCache, RenderedFile
from agents.tools.sandbox import Sandbox
from agents.tools.tools import ToolBox


@pytest.fixture(autouse=True)
def _empty_cache():
    RENDERS.clear()
    yield
    RENDERS.clear()


def _toolbox(root: Path, out: Path, vision: bool = False) -> ToolBox:
    task = make_task(root, out)
    return ToolBox(task, Sandbox(task.root, task.output_dir), vision=vision)


def _render(box: ToolBox, **args: object) -> tuple[str, bytes]:
    result = box.run("render", json.dumps(args))
    assert result.error is None, result.text
    payload = json.loads(result.text)
    return result.text, (box.sandbox.output_dir / payload["written"]).read_bytes()


RENDERS_OF_SEG = [
    {"index": 0, "source": "data/case0/image.nii.gz", "axis": 2},
    {"index": 0, "source": "data/case0/mask.nii.gz", "kind": "mask", "axis": 2},
    {"index": 1, "source": "data/case1/image.nii.gz", "mask_source": "data/case1/mask.nii.gz"},
    {"index": 1, "source": "data/case1/image.nii.gz", "window_center": 500, "window_width": 400},
    {"index": 0, "source": "data/preview.png"},
]


def test_a_later_candidate_gets_the_same_bytes_and_result_as_an_uncached_render(seg_dataset, tmp_path):
    first = _toolbox(seg_dataset, tmp_path / "c0")
    made = [_render(first, **args) for args in RENDERS_OF_SEG]
    assert RENDERS.misses == len(RENDERS_OF_SEG) and RENDERS.hits == 0
    again = _toolbox(seg_dataset, tmp_path / "c1")
    assert [_render(again, **args) for args in RENDERS_OF_SEG] == made
    assert RENDERS.hits == len(RENDERS_OF_SEG)
    # The same, with the cache emptied before every call: the uncached path agrees byte for byte.
    fresh = _toolbox(seg_dataset, tmp_path / "c2")
    uncached = []
    for args in RENDERS_OF_SEG:
        RENDERS.clear()
        uncached.append(_render(fresh, **args))
    assert uncached == made


def test_arguments_that_change_the_pixels_are_not_confused(seg_dataset, tmp_path):
    box = _toolbox(seg_dataset, tmp_path / "c0")
    source = "data/case0/image.nii.gz"
    variants = [{"slice_index": k} for k in range(3)] + [
        {"axis": 1},
        {"window_center": 10, "window_width": 50},
    ]
    images = set()
    for options in variants:
        _, png = _render(box, index=0, source=source, **options)
        images.add(png)
    assert len(images) == len(variants) and RENDERS.hits == 0


def test_a_changed_source_file_is_read_again(seg_dataset, tmp_path):
    box = _toolbox(seg_dataset, tmp_path / "c0")
    source = seg_dataset / "data" / "preview.png"
    _, before = _render(box, index=0, source="data/preview.png")
    replacement = np.full((12, 10), 77, np.uint8)
    Image.fromarray(replacement).save(source)  # same size on disk is not needed: the identity changes
    os.utime(source, ns=(1, 1))  # even an old modification time differs from the one kept
    _, after = _render(box, index=0, source="data/preview.png")
    assert after != before and RENDERS.hits == 0
    with Image.open(box.sandbox.output_dir / "images" / "0.png") as img:
        np.testing.assert_array_equal(np.asarray(img), replacement)


def test_a_dicom_folder_is_never_cached(tmp_path, seg_dataset):
    from pydicom.data import get_testdata_file

    found = get_testdata_file("CT_small.dcm", download=False)
    if found is None:
        pytest.skip("pydicom does not ship CT_small.dcm")
    series = seg_dataset / "data" / "series"
    series.mkdir()
    shutil.copy(found, series / "1.dcm")
    box = _toolbox(seg_dataset, tmp_path / "c0")
    _render(box, index=0, source="data/series")
    _render(box, index=0, source="data/series")
    assert len(RENDERS) == 0 and RENDERS.hits == 0


def _view(box: ToolBox, **args: object) -> tuple[str, str | None]:
    result = box.run("view_image", json.dumps(args))
    assert result.error is None, result.text
    return result.text, result.image_url


VIEWS = [
    {"path": "images/0.png"},
    {"path": "masks/0.png"},
    {"path": "data/preview.png", "where": "dataset"},
    {"path": "data/case1/image.nii.gz", "where": "dataset"},
]


@pytest.mark.parametrize("vision", [True, False])
def test_a_later_view_is_the_same_text_and_image_as_an_uncached_one(seg_dataset, tmp_path, vision):
    boxes = [_toolbox(seg_dataset, tmp_path / f"c{k}", vision) for k in range(3)]
    for box in boxes:
        for args in RENDERS_OF_SEG[:2]:
            _render(box, **args)
    first = [_view(boxes[0], **args) for args in VIEWS]
    hits = RENDERS.hits
    assert [_view(boxes[1], **args) for args in VIEWS] == first
    assert RENDERS.hits == hits + len(VIEWS)
    uncached = []
    for args in VIEWS:
        RENDERS.clear()
        uncached.append(_view(boxes[2], **args))
    assert uncached == first
    assert all((url is not None) == vision for _, url in first)


def test_a_view_follows_the_bytes_of_the_output_image(seg_dataset, tmp_path):
    box = _toolbox(seg_dataset, tmp_path / "c0", vision=True)
    _render(box, index=0, source="data/case0/image.nii.gz", axis=2)
    before = _view(box, path="images/0.png")
    _render(box, index=0, source="data/case0/image.nii.gz", axis=2, window_center=100, window_width=50)
    after = _view(box, path="images/0.png")
    assert after != before
    with Image.open(box.sandbox.output_dir / "images" / "0.png") as img:
        pixels = np.asarray(img)
    assert json.loads(after[0])["max"] == int(pixels.max())


def test_inspect_is_kept_by_file_identity_and_its_failures_are_not(seg_dataset, tmp_path):
    boxes = [_toolbox(seg_dataset, tmp_path / f"c{k}") for k in range(2)]
    paths = ["data/case0/image.nii.gz", "data/preview.png", "data/case1/mask.nii.gz"]
    first = [boxes[0].run("inspect", json.dumps({"path": p})).text for p in paths]
    assert [boxes[1].run("inspect", json.dumps({"path": p})).text for p in paths] == first
    assert RENDERS.hits == len(paths)
    RENDERS.clear()
    assert [boxes[1].run("inspect", json.dumps({"path": p})).text for p in paths] == first
    assert "data/preview.png" in first[1]  # relative paths, as the uncached tool reports them
    broken = seg_dataset / "data" / "broken.nii.gz"
    broken.write_bytes(b"not a nifti at all")
    for _ in range(2):
        assert "error" in json.loads(boxes[0].run("inspect", json.dumps({"path": "data/broken.nii.gz"})).text)
    assert len(RENDERS) == len(paths)  # the failure was not kept


def test_the_cache_keeps_at_most_max_bytes_least_recently_used_first():
    def item(size: int) -> RenderedFile:
        return RenderedFile(b"x" * size, 1, 1, {}, {}, None)

    cache = RenderCache(max_bytes=100)
    cache.put("a", item(40))
    cache.put("b", item(40))
    assert cache.get("a") is not None  # a is now the most recently used
    cache.put("c", item(40))  # 120 > 100: b goes
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    cache.put("huge", item(101))  # larger than the whole cache: not kept, nothing dropped
    assert cache.get("huge") is None and len(cache) == 2


def _item(tag: bytes) -> RenderedFile:
    return RenderedFile(png=tag, width=1, height=1, info={}, source={}, label_values=None)


def test_threads_asking_for_the_same_render_at_once_make_it_once() -> None:
    import threading
    import time

    cache = RenderCache()
    made: list[int] = []
    start = threading.Barrier(4)

    def make() -> RenderedFile:
        made.append(1)
        time.sleep(0.2)  # long enough for every other thread to arrive while it is being made
        return _item(b"png")

    got: list[object] = []

    def ask() -> None:
        start.wait()
        got.append(cache.get_or_make("k", make))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(got) == 4 and all(g is got[0] for g in got)
    assert (cache.misses, cache.hits) == (1, 3)


def test_when_the_first_maker_fails_a_waiting_thread_makes_the_render_itself() -> None:
    import threading
    import time

    cache = RenderCache()
    calls: list[str] = []
    first_started = threading.Event()

    def failing() -> RenderedFile:
        calls.append("fail")
        first_started.set()
        time.sleep(0.2)
        raise OSError("unreadable")

    def working() -> RenderedFile:
        calls.append("ok")
        return _item(b"png")

    errors: list[BaseException] = []

    def first() -> None:
        try:
            cache.get_or_make("k", failing)
        except OSError as exc:
            errors.append(exc)

    t = threading.Thread(target=first)
    t.start()
    first_started.wait()
    assert cache.get_or_make("k", working).png == b"png"  # waited for the failure, then made it
    t.join()
    assert calls == ["fail", "ok"] and len(errors) == 1
    assert cache.get_or_make("k", failing).png == b"png"  # kept: not made again


def test_candidates_rendering_the_same_files_concurrently_decode_each_once(seg_dataset, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    boxes = [_toolbox(seg_dataset, tmp_path / f"c{k}") for k in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        outputs = list(pool.map(lambda box: [_render(box, **args)[1] for args in RENDERS_OF_SEG], boxes))
    assert all(out == outputs[0] for out in outputs)
    assert RENDERS.misses == len(RENDERS_OF_SEG)
    assert RENDERS.hits == 3 * len(RENDERS_OF_SEG)

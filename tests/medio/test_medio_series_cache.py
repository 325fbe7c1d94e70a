"""A series read again comes from the decoded-volume cache (`medio._volume_cache`), exactly as read the first
time, and never when a file changed; each reader owns what it gets; concurrent readers decode once."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import medio
from medio import _volume_cache, dicom

UID = "1.2.826.0.1.3680043.8.498.77"


def _series(folder: Path, make_dicom: Callable[..., Path], n: int = 4, base: int = 100) -> list[Path]:
    files = []
    for z in range(n):
        files.append(
            make_dicom(
                folder / f"slice_{z:02d}.dcm",
                np.full((6, 5), base + z, dtype=np.int16),
                series_uid=UID,
                ImagePositionPatient=[0.0, 0.0, 2.0 * z],
                ImageOrientationPatient=[1, 0, 0, 0, 1, 0],
                PixelSpacing=[0.5, 0.5],
                InstanceNumber=z + 1,
            )
        )
    return files


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    _volume_cache.clear()
    yield
    _volume_cache.clear()


@pytest.fixture
def slice_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose pixels the reader decodes (counted at the slice readers `read_series` calls)."""
    from medio import dicom_series

    seen: list[str] = []
    for name in ("read_dicom", "read_slice"):
        real = getattr(dicom, name)

        def counted(path: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            seen.append(str(path))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(dicom_series, name, counted)
    return seen


def test_a_second_read_is_a_copy_of_the_first_without_decoding_again(
    tmp_path: Path, make_dicom: Callable[..., Path], slice_reads: list[str]
) -> None:
    _series(tmp_path, make_dicom)
    first = medio.read(tmp_path)
    decoded = len(slice_reads)
    assert decoded == 4
    second = medio.read(tmp_path)
    assert len(slice_reads) == decoded  # nothing decoded again
    assert np.array_equal(first.array, second.array) and first.array.dtype == second.array.dtype
    assert first.meta == second.meta
    assert _volume_cache.held_bytes() == first.array.nbytes
    # Each reader owns its copy: writing into one changes neither the next read nor the other copy.
    second.array[:] = 0
    second.meta.header["written"] = True
    third = medio.read(tmp_path)
    assert np.array_equal(third.array, first.array) and "written" not in third.meta.header


def test_a_rewritten_slice_is_read_again(
    tmp_path: Path, make_dicom: Callable[..., Path], slice_reads: list[str]
) -> None:
    files = _series(tmp_path, make_dicom)
    before = medio.read(tmp_path)
    make_dicom(
        files[2],
        np.full((6, 5), 999, dtype=np.int16),
        series_uid=UID,
        ImagePositionPatient=[0.0, 0.0, 4.0],
        ImageOrientationPatient=[1, 0, 0, 0, 1, 0],
        PixelSpacing=[0.5, 0.5],
        InstanceNumber=3,
    )
    stat = files[2].stat()
    os.utime(files[2], ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a coarse clock still moves on
    after = medio.read(tmp_path)
    assert len(slice_reads) == 8
    assert after.array[2, 0, 0] == 999 and before.array[2, 0, 0] == 102


def test_a_failed_read_keeps_nothing_and_fails_again(tmp_path: Path, make_dicom: Callable[..., Path]) -> None:
    files = _series(tmp_path, make_dicom, n=3)
    files[1].write_bytes(files[1].read_bytes()[:-20])  # pixel data cut short
    for _ in range(2):
        with pytest.raises(medio.MedioError):
            medio.read(tmp_path)
    assert _volume_cache.held_bytes() == 0


def test_the_least_recently_used_volume_goes_when_the_bound_is_reached(
    tmp_path: Path, make_dicom: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, slice_reads: list[str]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    _series(a, make_dicom)
    _series(b, make_dicom, base=500)
    size = medio.read(a).array.nbytes
    monkeypatch.setattr(_volume_cache, "MAX_BYTES", size)  # room for one volume
    medio.read(b)  # evicts a
    assert _volume_cache.held_bytes() == size
    medio.read(b)
    assert len(slice_reads) == 8  # b was kept
    medio.read(a)
    assert len(slice_reads) == 12  # a was not
    monkeypatch.setattr(_volume_cache, "MAX_ENTRY_BYTES", size - 1)
    _volume_cache.clear()
    medio.read(a)
    assert _volume_cache.held_bytes() == 0  # too large to keep at all


def test_readers_of_one_series_at_once_decode_it_once(
    tmp_path: Path, make_dicom: Callable[..., Path], slice_reads: list[str]
) -> None:
    _series(tmp_path, make_dicom)
    start = threading.Barrier(6)
    arrays: list[np.ndarray] = []

    def read() -> None:
        start.wait()
        arrays.append(medio.read(tmp_path).array)

    threads = [threading.Thread(target=read) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(arrays) == 6 and all(np.array_equal(x, arrays[0]) for x in arrays)
    assert len(slice_reads) == 4
    assert len({id(x) for x in arrays}) == 6  # six copies, not one shared array


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_forked_child_starts_with_an_empty_cache(tmp_path: Path, make_dicom: Callable[..., Path]) -> None:
    _series(tmp_path, make_dicom)
    medio.read(tmp_path)
    assert _volume_cache.held_bytes() > 0
    pid = os.fork()
    if pid == 0:  # the child: nothing kept, and its lock is free (a read completes)
        code = 0 if _volume_cache.held_bytes() == 0 else 3
        try:
            medio.read(tmp_path)
        except BaseException:
            code = 4
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _volume_cache.held_bytes() > 0  # the parent keeps its own

"""A one-file image read again comes from the decoded-image cache (`medio._volume_cache`, through
`medio.read`), exactly as read the first time; never when the file changed, was replaced or was read with
other options; never for a format whose image depends on another file (a ``.hdr``/``.img`` pair)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nibabel as nib
import numpy as np
import pytest

import medio
from core.environment import READ_CACHE_ENV
from core.errors import InputError
from medio import _volume_cache, arrays, nifti


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    _volume_cache.clear()
    yield
    _volume_cache.clear()


def _counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[str]:
    """The paths the reader ``module.name`` decodes from now on (`medio.read` resolves it at each call)."""
    seen: list[str] = []
    real = getattr(module, name)

    def counted(path: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return seen


def _nifti(path: Path, value: int) -> Path:
    data = np.arange(4 * 5 * 3, dtype=np.int16).reshape(4, 5, 3) + value
    image = nib.Nifti1Image(data, np.diag([0.5, 0.5, 2.0, 1.0]))  # type: ignore[no-untyped-call]
    nib.save(image, path)
    return path


def test_a_second_read_is_a_copy_of_the_first_without_decoding_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _nifti(tmp_path / "ct.nii.gz", 0)
    decoded = _counted(monkeypatch, nifti, "read_nifti")
    first = medio.read(path)
    second = medio.read(path)
    assert decoded == [str(path)]
    assert np.array_equal(first.array, second.array) and first.array.dtype == second.array.dtype
    assert first.meta == second.meta
    assert _volume_cache.held_bytes() == first.array.nbytes
    # Each reader owns its copy: writing into one changes neither the next read nor the other copy.
    second.array[...] = 0
    second.meta.header["written"] = True
    third = medio.read(path)
    assert np.array_equal(third.array, first.array) and "written" not in third.meta.header


def test_the_path_as_given_is_what_the_image_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _nifti(tmp_path / "ct.nii", 0)
    monkeypatch.chdir(tmp_path)
    assert medio.read("ct.nii").meta.path == "ct.nii"
    assert medio.read(tmp_path / "ct.nii").meta.path == str(tmp_path / "ct.nii")


def test_a_file_rewritten_in_place_or_replaced_is_decoded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.npy"
    np.save(path, np.zeros((6, 7), dtype=np.uint8))
    decoded = _counted(monkeypatch, arrays, "read_npy")
    assert medio.read(path).array.max() == 0
    before = path.stat()
    # Same size and modification time, other bytes, in place: the change time still moves on.
    time.sleep(0.05)  # past a coarse file-system clock
    np.save(path, np.ones((6, 7), dtype=np.uint8))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert medio.read(path).array.max() == 1
    # Replaced by another file of the same size and times (a new inode), as an atomic write does.
    other = tmp_path / "b.npy"
    np.save(other, np.full((6, 7), 2, dtype=np.uint8))
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    other.replace(path)
    assert medio.read(path).array.max() == 2
    assert len(decoded) == 3


def test_other_options_are_other_images(tmp_path: Path) -> None:
    path = tmp_path / "pair.npz"
    np.savez(path, image=np.zeros((4, 4), dtype=np.uint8), mask=np.ones((4, 4), dtype=np.uint8))
    assert medio.read(path, key="image").array.max() == 0
    assert medio.read(path, key="mask").array.max() == 1
    assert medio.read(path, key="image").array.max() == 0


def test_a_header_and_image_pair_is_never_kept(tmp_path: Path) -> None:
    """The image of a ``.hdr``/``.img`` pair is in the ``.img``: reading the ``.hdr`` again must see it."""
    hdr = tmp_path / "scan.hdr"
    data = np.zeros((4, 5, 3), dtype=np.int16)
    nib.save(nib.Nifti1Pair(data, np.eye(4)), hdr)  # type: ignore[no-untyped-call]
    assert medio.read(hdr).array.max() == 0
    nib.save(nib.Nifti1Pair(data + 7, np.eye(4)), tmp_path / "new.hdr")  # type: ignore[no-untyped-call]
    (tmp_path / "new.img").replace(tmp_path / "scan.img")  # the header file is untouched
    assert medio.read(hdr).array.max() == 7
    assert _volume_cache.held_bytes() == 0


def test_a_failed_read_keeps_nothing_and_fails_again(tmp_path: Path) -> None:
    path = tmp_path / "cut.npy"
    np.save(path, np.zeros((50, 50), dtype=np.float32))
    path.write_bytes(path.read_bytes()[:-100])
    for _ in range(2):
        with pytest.raises(medio.MedioError):
            medio.read(path)
    assert _volume_cache.held_bytes() == 0


def test_the_bound_is_set_by_the_environment_and_zero_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, large = tmp_path / "small.npy", tmp_path / "large.npy"
    np.save(small, np.zeros((100, 100), dtype=np.uint8))  # 10 kB
    np.save(large, np.zeros((1100, 1000), dtype=np.uint8))  # 1.1 MB: over a 1 MiB bound
    decoded = _counted(monkeypatch, arrays, "read_npy")
    monkeypatch.setenv(READ_CACHE_ENV, "1")
    for path in (small, small, large, large):
        medio.read(path)
    assert decoded == [str(small), str(large), str(large)]
    assert _volume_cache.held_bytes() == 100 * 100
    monkeypatch.setenv(READ_CACHE_ENV, "0")
    _volume_cache.clear()
    medio.read(small)
    medio.read(small)
    assert decoded[3:] == [str(small), str(small)] and _volume_cache.held_bytes() == 0


@pytest.mark.parametrize("raw", ["-1", "1.5", "lots"])
def test_a_bound_that_is_not_a_whole_number_fails_every_read_naming_it(
    raw: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.npy"
    np.save(path, np.zeros((4, 4), dtype=np.uint8))
    monkeypatch.setenv(READ_CACHE_ENV, raw)
    message = rf"MEDSTRAT_READ_CACHE_MB must be a whole number of MiB >= 0 \(0 keeps nothing\), got '{raw}'"
    with pytest.raises(InputError, match=message):
        medio.read(path)

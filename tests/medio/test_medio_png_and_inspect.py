"""PNG output (atomic write, header size) and safe inspection summaries."""

from __future__ import annotations

import io
import json
import os
import stat

import numpy as np
import pytest
from PIL import Image

import medio


def test_write_png_is_atomic_and_round_trips(tmp_path):
    pixels = np.random.default_rng(0).integers(0, 256, (7, 9, 3), dtype=np.uint8)
    dest = tmp_path / "out" / "img.png"
    medio.write_png(pixels, dest)
    np.testing.assert_array_equal(np.asarray(Image.open(dest)), pixels)
    assert medio.read_png_size(dest) == (9, 7)
    assert [p.name for p in dest.parent.iterdir()] == ["img.png"]  # no temp file left behind


def test_failed_write_leaves_the_old_file_intact(tmp_path, monkeypatch):
    import medio.png

    dest = tmp_path / "img.png"
    medio.write_png(np.zeros((2, 2), np.uint8), dest)
    before = dest.read_bytes()
    real_fdopen = os.fdopen

    class DiskFull:
        def __init__(self, fd, mode):
            self.handle = real_fdopen(fd, mode)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, data):
            self.handle.write(data[:7])
            self.handle.flush()
            raise OSError("disk full")

    monkeypatch.setattr(medio.png.os, "fdopen", DiskFull)
    with pytest.raises(medio.MedioError, match="disk full"):
        medio.write_png(np.ones((2, 2), np.uint8), dest)
    assert dest.read_bytes() == before and len(list(tmp_path.iterdir())) == 1


def test_an_encoder_failure_is_a_one_line_write_error(tmp_path, monkeypatch):
    def broken_save(self, fh, format=None, **params):
        raise OSError("encoder error -2")

    monkeypatch.setattr(Image.Image, "save", broken_save)
    with pytest.raises(medio.MedioError, match="encoder error"):
        medio.write_png(np.ones((2, 2), np.uint8), tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


def _default_png_size(pixels: np.ndarray) -> int:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")  # Pillow's defaults: deflate level 6, default strategy
    return len(buffer.getvalue())


def test_fast_png_keeps_every_pixel_of_pydicom_and_nibabel_renders(tmp_path, pydicom_file, nibabel_data):
    """The run-length deflate of `write_png` changes bytes, never pixels, and keeps files about as small."""
    sources = [
        (medio.read(pydicom_file("CT_small.dcm")), {}),
        (medio.read(pydicom_file("MR_small.dcm")), {}),
        (medio.read(pydicom_file("SC_rgb_rle_32bit_2frame.dcm"), frame=1), {}),  # colour
        (medio.read(nibabel_data / "example4d.nii.gz"), {}),
        (medio.read(nibabel_data / "anatomical.nii"), {"axis": 2}),
    ]
    rendered = [medio.render(image, **options).pixels for image, options in sources]
    rendered.append(np.arange(256, dtype=np.uint16).reshape(16, 16) * 257)  # 16-bit grey is kept 16-bit
    for k, pixels in enumerate(rendered):
        dest = medio.write_png(pixels, tmp_path / f"{k}.png")
        with Image.open(dest) as img:
            assert img.format == "PNG"
            np.testing.assert_array_equal(np.asarray(img), pixels)
        assert dest.stat().st_size <= 1.1 * _default_png_size(pixels) + 64, k


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_write_png_follows_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        path = medio.write_png(np.zeros((4, 4), np.uint8), tmp_path / "a.png")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_write_png_refuses_non_8bit_pixels(tmp_path):
    with pytest.raises(ValueError, match="uint8"):
        medio.write_png(np.zeros((2, 2), np.float32), tmp_path / "x.png")


def test_read_png_size_errors(tmp_path):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not a png at all, really")
    with pytest.raises(medio.UnsupportedFormat):
        medio.read_png_size(bad)


def test_inspect_dicom_reads_headers_only(pydicom_file):
    summary = medio.inspect(pydicom_file("CT_small.dcm"))
    assert summary["format"] == "dicom" and summary["shape"] == [128, 128]
    assert summary["rescale"] == [1.0, -1024.0] and summary["modality"] == "CT"
    json.dumps(summary)


def test_inspect_never_raises_on_bad_input(tmp_path):
    empty = tmp_path / "empty.nii"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"garbage" * 20)
    unknown = tmp_path / "what.xyz"
    unknown.write_bytes(b"\x01\x02\x03" * 50)
    for path, kind in [(empty, "EmptyFile"), (junk, "CorruptFile"), (unknown, "UnsupportedFormat")]:
        summary = medio.inspect(path)
        assert summary["error_type"] == kind and summary["error"], summary
        json.dumps(summary)
    assert "error" in medio.inspect(tmp_path / "missing.png")


def test_inspect_nifti_and_png_headers(tmp_path, nibabel_data):
    summary = medio.inspect(nibabel_data / "example4d.nii.gz")
    assert summary["n_volumes"] == summary["shape_on_disk"][3] and summary["axes_on_disk"] == "XYZT"
    # One axis convention: inspect's shape is the array read() returns (and render --axis counts in).
    image = medio.read(nibabel_data / "example4d.nii.gz")
    assert summary["shape"] == list(image.array.shape) and summary["axes"] == image.meta.axes
    png = tmp_path / "a.png"
    Image.fromarray(np.zeros((3, 5), np.uint16)).save(png)
    assert medio.inspect(png)["size"] == [5, 3]


def test_meta_to_dict_is_json_able(pydicom_file):
    meta = medio.read(pydicom_file("MR_small.dcm")).meta
    data = json.loads(json.dumps(meta.to_dict()))
    assert data["modality"] == "MR" and data["shape"] == [64, 64] and data["axes"] == "YX"

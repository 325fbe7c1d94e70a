"""DICOM single files: bundled pydicom files and test-built bad inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import medio


def test_ct_small_is_read_in_hounsfield_units(pydicom_file):
    import pydicom

    path = pydicom_file("CT_small.dcm")
    stored = pydicom.dcmread(path).pixel_array
    image = medio.read(path)
    assert image.meta.rescale_applied is True
    assert image.meta.rescale_intercept == -1024.0
    np.testing.assert_array_equal(image.array.astype(np.int32), stored.astype(np.int32) - 1024)
    assert image.meta.modality == "CT"
    assert image.meta.axes == "YX"
    assert image.meta.spacing == pytest.approx((0.661468, 0.661468))


def test_ct_small_renders_with_a_ct_window_on_hu_values(pydicom_file):
    image = medio.read(pydicom_file("CT_small.dcm"))
    shown = medio.render(image)
    assert shown.info["method"].startswith("ct_preset")
    center, width = shown.info["window"]
    assert (center, width) == (40.0, 400.0)
    assert shown.pixels.dtype == np.uint8 and shown.pixels.shape == (128, 128)
    # Soft-tissue window: HU below -160 are black, above 240 white.
    hu = image.array
    assert np.all(shown.pixels[hu <= -160] == 0)
    assert np.all(shown.pixels[hu >= 241] == 255)


def test_mr_small_uses_the_header_window(pydicom_file):
    image = medio.read(pydicom_file("MR_small.dcm"))
    shown = medio.render(image)
    assert image.meta.window_center == 600.0 and image.meta.window_width == 1600.0
    assert shown.info["method"] == "dicom_window" and shown.info["window"] == [600.0, 1600.0]


def test_big_endian_file_reads_like_its_little_endian_twin(pydicom_file):
    little = medio.read(pydicom_file("MR_small.dcm"))
    big = medio.read(pydicom_file("MR_small_bigendian.dcm"))
    assert big.meta.header["big_endian"] is True
    np.testing.assert_array_equal(big.array, little.array)
    np.testing.assert_array_equal(medio.render(big).pixels, medio.render(little).pixels)


def test_rgb_two_frame_file_reads_one_frame_and_stays_rgb(pydicom_file):
    path = pydicom_file("SC_rgb_rle_32bit_2frame.dcm")
    one = medio.read(path, frame=1)
    assert one.array.shape == (100, 100, 3) and one.meta.axes == "YXC"
    assert one.meta.n_frames == 2 and one.meta.frame_index == 1
    shown = medio.render(one)
    assert shown.pixels.shape == (100, 100, 3) and shown.info["frame"] == 1
    # Frame 1 of this file is the colour inverse of frame 0: the top-left pixel is cyan.
    assert shown.pixels[0, 0].tolist() == [0, 255, 255]
    both = medio.read(path)
    assert both.array.shape == (2, 100, 100, 3)
    np.testing.assert_array_equal(medio.render(both, frame=1).pixels, shown.pixels)


@pytest.mark.parametrize(
    ("name", "plugin"),
    [("MR_small_jpeg_ls_lossless.dcm", "pylibjpeg-libjpeg"), ("JPEG-lossy.dcm", "pylibjpeg-libjpeg")],
)
def test_compressed_without_decoder_names_the_plugin(pydicom_file, name, plugin):
    path = pydicom_file(name)
    try:
        medio.read(path)
    except medio.UnsupportedTransferSyntax as err:
        assert plugin in str(err) and str(path) in str(err)
        assert err.transfer_syntax.startswith("1.2.840.10008.1.2.4.")
        assert any(plugin in p for p in err.plugins)
    else:
        pytest.skip(f"a decoder for {name} is installed here")


def test_missing_preamble_is_read_with_force(tmp_path, make_dicom):
    full = make_dicom(tmp_path / "full.dcm", np.arange(16, dtype=np.uint16).reshape(4, 4), modality="MR")
    bare = tmp_path / "bare.dcm"
    bare.write_bytes(full.read_bytes()[132:])  # drop the 128-byte preamble and "DICM"
    image = medio.read(bare)
    assert image.meta.header["preamble_missing"] is True
    np.testing.assert_array_equal(image.array, np.arange(16).reshape(4, 4))
    no_ext = tmp_path / "bare_no_extension"
    no_ext.write_bytes(bare.read_bytes())
    assert medio.read(no_ext).meta.format == "dicom"


def test_multi_valued_decimal_string_window_uses_the_first_value(tmp_path, make_dicom):
    pixels = np.linspace(-200, 300, 64, dtype=np.float32).astype(np.int16).reshape(8, 8)
    path = make_dicom(
        tmp_path / "w.dcm", pixels, WindowCenter=[" 40.5", "300"], WindowWidth=["400 ", "1500"], modality="CT"
    )
    image = medio.read(path)
    assert (image.meta.window_center, image.meta.window_width) == (40.5, 400.0)
    assert medio.render(image).info["window"] == [40.5, 400.0]


def test_ybr_full_is_converted_to_rgb(tmp_path, make_dicom):
    from pydicom.pixels import convert_color_space

    rgb = np.zeros((8, 8, 3), dtype=np.uint8)
    rgb[..., 0] = 200  # red
    rgb[4:, :, 2] = 180
    ybr = convert_color_space(rgb, "RGB", "YBR_FULL")
    image = medio.read(make_dicom(tmp_path / "ybr.dcm", ybr, photometric="YBR_FULL", modality="OT"))
    assert image.meta.photometric == "RGB" and image.meta.header["photometric_original"] == "YBR_FULL"
    assert np.abs(image.array.astype(int) - rgb.astype(int)).max() <= 2
    assert medio.render(image).pixels.shape == (8, 8, 3)


def test_bundled_ybr_422_file_is_rgb(pydicom_file):
    image = medio.read(pydicom_file("SC_ybr_full_422_uncompressed.dcm"))
    assert image.meta.photometric == "RGB"
    assert image.array[0, 0].tolist() == pytest.approx([254, 0, 0], abs=2)  # pure red stripe


def _enhanced(tmp_path: Path, make_dicom) -> Path:
    from pydicom.dataset import Dataset
    from pydicom.sequence import Sequence

    frames = np.stack([np.full((4, 4), 100, np.uint16), np.full((4, 4), 100, np.uint16)])
    per_frame = []
    for slope, intercept in [(1.0, -1000.0), (2.0, 0.0)]:
        transform = Dataset()
        transform.RescaleSlope = slope
        transform.RescaleIntercept = intercept
        transform.RescaleType = "HU"
        item = Dataset()
        item.PixelValueTransformationSequence = Sequence([transform])
        per_frame.append(item)
    return make_dicom(
        tmp_path / "enhanced.dcm",
        frames,
        NumberOfFrames=2,
        PerFrameFunctionalGroupsSequence=Sequence(per_frame),
    )


def test_enhanced_multiframe_applies_rescale_per_frame(tmp_path, make_dicom):
    path = _enhanced(tmp_path, make_dicom)
    image = medio.read(path)
    assert image.array.shape == (2, 4, 4) and image.meta.axes == "ZYX"
    assert image.array[0, 0, 0] == pytest.approx(-900.0) and image.array[1, 0, 0] == pytest.approx(200.0)
    assert image.meta.header["rescale_per_frame"] == [[1.0, -1000.0], [2.0, 0.0]]
    second = medio.read(path, frame=1)
    assert second.array.shape == (4, 4) and second.array[0, 0] == pytest.approx(200.0)
    assert medio.render(image, frame=1).info["frame"] == 1


def test_monochrome1_is_inverted_after_windowing(tmp_path, make_dicom):
    pixels = np.array([[0, 100], [200, 300]], dtype=np.uint16)
    path = make_dicom(tmp_path / "m1.dcm", pixels, photometric="MONOCHROME1", modality="DX")
    path2 = make_dicom(tmp_path / "m2.dcm", pixels, photometric="MONOCHROME2", modality="DX")
    one, two = medio.read(path), medio.read(path2)
    assert one.meta.photometric == "MONOCHROME1"
    shown = medio.render(one)
    assert shown.info["inverted"] is True
    np.testing.assert_array_equal(shown.pixels, 255 - medio.render(two).pixels)
    assert shown.pixels[0, 0] == 255  # lowest value is white in MONOCHROME1


def test_truncated_pixel_data_is_a_corrupt_file(pydicom_file, tmp_path):
    with pytest.raises(medio.CorruptFile) as err:
        medio.read(pydicom_file("MR_truncated.dcm"))
    assert "MR_truncated.dcm" in str(err.value) and "less than expected" in err.value.reason
    good = pydicom_file("CT_small.dcm").read_bytes()
    cut = tmp_path / "cut.dcm"
    cut.write_bytes(good[:700])  # the header itself is cut short
    with pytest.raises(medio.MedioError) as err2:
        medio.read(cut)
    assert str(cut) in str(err2.value)


def test_dicom_without_pixel_data_is_unsupported(pydicom_file):
    with pytest.raises(medio.UnsupportedFormat, match="without pixel data"):
        medio.read(pydicom_file("rtplan.dcm"))


def test_frame_out_of_range_is_key_not_found(pydicom_file):
    with pytest.raises(medio.KeyNotFound, match="frame 5 out of range"):
        medio.read(pydicom_file("SC_rgb_rle_32bit_2frame.dcm"), frame=5)


def test_one_frame_is_size_checked_before_it_is_decoded(pydicom_file, monkeypatch):
    from medio import _axes

    path = pydicom_file("SC_rgb_rle_2frame.dcm")  # 2 frames of 100 x 100 RGB: 30 000 bytes each
    monkeypatch.setattr(_axes, "MAX_BYTES", 20_000)
    with pytest.raises(medio.ImageTooLarge) as err:
        medio.read(path, frame=1)
    assert "SC_rgb_rle_2frame.dcm" in str(err.value)
    monkeypatch.setattr(_axes, "MAX_BYTES", 40_000)
    assert medio.read(path, frame=1).array.shape == (100, 100, 3)

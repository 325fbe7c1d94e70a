"""Format detection and the errors for empty, truncated and unknown files."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import medio
from medio.sniff import sniff


def test_unknown_extension_is_sniffed_from_magic_bytes(tmp_path):
    png = tmp_path / "scan.dat"
    Image.fromarray(np.zeros((3, 4), np.uint8)).save(png, format="PNG")
    npy = tmp_path / "array.bin"
    with npy.open("wb") as fh:
        np.save(fh, np.ones((2, 2)))
    assert sniff(png) == "bitmap" and sniff(npy) == "npy"
    assert medio.read(png).array.shape == (3, 4)
    assert medio.read(npy).array.sum() == 4


@pytest.mark.parametrize(
    ("head", "family"),
    [
        (b"\x00" * 128 + b"DICM", "dicom"),
        (b"\x89HDF\r\n\x1a\n", "hdf5"),
        (b"MATLAB 5.0 MAT-file", "matlab"),
        (b"II*\x00", "tiff"),
        (b"MM\x00*", "tiff"),
        (b"P5\n4 4\n255\n", "bitmap"),
        (b"BM" + b"\x00" * 12 + (40).to_bytes(4, "little") + (8).to_bytes(4, "little") * 2, "bitmap"),
        (b"GIF89a", "bitmap"),
        (b"\xff\xd8\xff\xe0", "bitmap"),
        (b"PAR1", "table"),
        (b"PK\x03\x04", "npz"),
        (b"RIFF\x00\x00\x00\x00AVI ", "video"),
        (b"\x00\x00\x00\x18ftypmp42", "video"),
        (b"NRRD0004\n", "itk"),
        (b"\x00" * 344 + b"n+1\x00", "nifti"),
    ],
)
def test_magic_bytes_identify_the_family(tmp_path, head, family):
    path = tmp_path / "mystery"
    path.write_bytes(head + b"\x00" * 16)
    assert sniff(path) == family


def test_unrecognised_content_gives_up_with_unsupported_format(tmp_path):
    path = tmp_path / "mystery.xyz"
    path.write_bytes(b"\x01\x02\x03 just some bytes \xfe\xff" * 10)
    with pytest.raises(medio.UnsupportedFormat) as err:
        medio.read(path)
    assert str(path) in str(err.value) and "no known magic bytes" in err.value.reason


def test_zero_byte_file_is_an_empty_file_error(tmp_path):
    for name in ("empty.dcm", "empty.png", "empty"):
        path = tmp_path / name
        path.write_bytes(b"")
        with pytest.raises(medio.EmptyFile) as err:
            medio.read(path)
        assert err.value.path == str(path) and "0 bytes" in str(err.value)


@pytest.mark.parametrize("suffix", [".nii", ".nii.gz", ".npy", ".h5", ".mat", ".parquet", ".mp4", ".mha"])
def test_truncated_files_fail_with_a_named_error(tmp_path, suffix):
    import h5py
    import nibabel as nib
    import scipy.io
    import SimpleITK as sitk

    path = tmp_path / f"whole{suffix}"
    vol = np.arange(4000, dtype=np.int16).reshape(10, 20, 20)
    if suffix.startswith(".nii"):
        nib.save(nib.Nifti1Image(vol, np.eye(4)), path)
    elif suffix == ".npy":
        np.save(path, vol)
    elif suffix == ".h5":
        with h5py.File(path, "w") as h5:
            h5["x"] = vol
    elif suffix == ".mat":
        scipy.io.savemat(path, {"x": vol})
    elif suffix == ".parquet":
        import pandas as pd

        pd.DataFrame({"a": range(100)}).to_parquet(path)
    elif suffix == ".mha":
        sitk.WriteImage(sitk.GetImageFromArray(vol), str(path))
    else:
        path.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64)
    data = path.read_bytes()
    cut = tmp_path / f"cut{suffix}"
    cut.write_bytes(data[: max(len(data) // 3, 30)])
    with pytest.raises(medio.MedioError) as err:
        medio.read(cut)
    assert str(cut) in str(err.value) and err.value.reason


def test_missing_path_is_reported(tmp_path):
    with pytest.raises(medio.MedioError, match="no such file"):
        medio.read(tmp_path / "nope.dcm")


def test_split_suffix_keeps_compound_suffixes_whole() -> None:
    from medio.sniff import split_suffix

    assert split_suffix("data/case_1/image.nii.gz") == ("image", ".nii.gz")
    assert split_suffix("b.seg.nrrd") == ("b", ".seg.nrrd")
    assert split_suffix("c.OME.TIF") == ("c", ".OME.TIF")
    assert split_suffix("scan.mhd") == ("scan", ".mhd")
    assert split_suffix("folder\\name.png") == ("name", ".png")
    assert split_suffix(".hidden") == (".hidden", "")
    assert split_suffix("data/series/") == ("series", "")


@pytest.mark.parametrize(
    "head",
    [
        b"BM" + b"\xff" * 40,  # "BM" then garbage: Pillow used to read a width and height of millions
        b"BMW\x00\x01\x02 binary log\xfe\xff",
        b"P5 is not a header\n",
    ],
)
def test_two_letter_bitmap_magic_alone_is_not_a_bitmap(tmp_path, head):
    path = tmp_path / "mystery.bin"
    path.write_bytes(head * 4)
    with pytest.raises(medio.UnsupportedFormat):
        medio.read(path)


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("tiny.mnc", "nibabel"),
        ("small.mnc", "nibabel"),
        ("test.mgz", "nibabel"),
        ("phantom_varscale.PAR", "nibabel"),
        ("scaled+tlrc.HEAD", "nibabel"),
        ("example4d+orig.BRIK.gz", "nibabel"),
        ("tinypet.v", "nibabel"),
        ("analyze.hdr", "nibabel"),
        ("nifti1.hdr", "nifti"),
        ("nifti2.hdr", "nifti"),
    ],
)
def test_nibabel_formats_are_recognised(nibabel_data, name, family):
    assert sniff(nibabel_data / name) == family

"""Fuzz every reader (issue 30 item 4): empty, random, wrong-magic, truncated and bit-flipped files under
every extension `medio.sniff.EXTENSIONS` knows (so a reader added later is covered once it registers its
suffix), through `medio.read`, `medio.inspect` and the rules agent's label-table loader.

The contract (docs/medio.md, "Errors"): `read` raises only `MedioError` subclasses, `inspect` never raises
(its dict carries ``error``), `read_table` raises only `TableSkipped`. Seeded: a failure reproduces.
"""

from __future__ import annotations

import gzip
import io
import random
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import medio
from agents.rules.tables import TABLE_SUFFIXES, TableSkipped, load_table, read_table
from medio.sniff import EXTENSIONS

SEED = 30

# The first bytes of each format medio sniffs by content (medio.sniff.sniff_bytes), to put under a wrong name.
MAGICS = {
    "dicom": b"\0" * 128 + b"DICM\x02\x00\x00\x00UL\x04\x00",
    "nifti1": b"\x5c\x01\x00\x00" + b"\0" * 340 + b"n+1\0",
    "matlab": b"MATLAB 5.0 MAT-file, Platform: GLNXA64".ljust(116, b" ") + b"\0" * 8 + b"\x00\x01IM",
    "hdf5": b"\x89HDF\r\n\x1a\n",
    "npy": b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (4000, 4000), }",
    "zip": b"PK\x03\x04\x14\x00\x00\x00",
    "parquet": b"PAR1",
    "tiff": b"II*\x00\x08\x00\x00\x00",
    "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x10\x00\x00\x00\x10\x00\x08\x00",
    "jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF",
    "gif": b"GIF89a\x10\x00\x10\x00",
    "bmp": b"BM" + b"\0" * 12 + (40).to_bytes(4, "little") + (16).to_bytes(4, "little") * 2,
    "pgm": b"P5\n16 16\n255\n",
    "avi": b"RIFF\x00\x01\x00\x00AVI LIST",
    "mp4": b"\x00\x00\x00\x18ftypisom",
    "nrrd": b"NRRD0004\ntype: short\ndimension: 3\nsizes: 4000 4000 4000\nencoding: raw\n\n",
    "mha": b"ObjectType = Image\nNDims = 2\nDimSize = 16 16\n"
    b"ElementType = MET_UCHAR\nElementDataFile = LOCAL\n",
    "csv": b"a,b,c\n1,2\n",
    "gzip": b"\x1f\x8b\x08\x00\x00\x00\x00\x00",
}


def _array() -> np.ndarray:
    return (np.arange(16 * 16 * 4, dtype=np.int16).reshape(4, 16, 16) % 251).astype(np.int16)


def _dicom(path: Path) -> None:
    import pydicom
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = pydicom.uid.CTImageStorage
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(str(path), {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.Modality, ds.PatientID, ds.Rows, ds.Columns = "CT", "P1", 16, 16
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 1
    ds.RescaleSlope, ds.RescaleIntercept = 1, -1024
    ds.PixelData = _array()[0].tobytes()
    ds.save_as(str(path), enforce_file_format=True)


def _nifti(path: Path) -> None:
    import nibabel as nib

    nib.save(nib.Nifti1Image(_array(), np.eye(4)), str(path))


def _mgh(path: Path) -> None:
    import nibabel as nib

    nib.save(nib.MGHImage(_array().astype(np.float32), np.eye(4)), str(path))


def _itk(path: Path) -> None:
    import SimpleITK as sitk

    sitk.WriteImage(sitk.GetImageFromArray(_array()), str(path))


def _tiff(path: Path) -> None:
    import tifffile

    tifffile.imwrite(str(path), _array().astype(np.uint16))


def _bitmap(path: Path) -> None:
    from PIL import Image

    mode = "1" if path.suffix == ".pbm" else "L"
    fmt = {".pgm": "PPM", ".pbm": "PPM", ".pnm": "PPM", ".ppm": "PPM", ".jpg": "JPEG"}.get(path.suffix)
    image = Image.fromarray(_array()[0].astype(np.uint8)).convert(mode if path.suffix != ".ppm" else "RGB")
    image.save(path, format=fmt)


def _npy(path: Path) -> None:
    np.save(path, _array())


def _npz(path: Path) -> None:
    np.savez(path, image=_array(), label=np.zeros((4, 16, 16), np.uint8))


def _hdf5(path: Path) -> None:
    import h5py

    with h5py.File(path, "w") as f:
        f.create_dataset("image", data=_array())
        f.create_dataset("label", data=np.zeros((4, 16, 16), np.uint8))


def _matlab(path: Path) -> None:
    import scipy.io

    scipy.io.savemat(str(path), {"img": _array(), "axis": np.arange(64.0)[None, :]})


def _table(path: Path) -> None:
    if path.suffix in (".parquet", ".pq"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        png = io.BytesIO()
        from PIL import Image

        Image.fromarray(_array()[0].astype(np.uint8)).save(png, format="PNG")
        pq.write_table(pa.table({"image": [png.getvalue()] * 3, "label": [0, 1, None]}), str(path))
    else:
        sep = "\t" if path.suffix == ".tsv" else ","
        path.write_text(
            sep.join(["file", "label", "age"]) + "\na.png" + sep + "1" + sep + "\n", encoding="utf-8"
        )


def _video(path: Path) -> None:
    import av

    codec = {".webm": "libvpx", ".avi": "mjpeg"}.get(path.suffix, "mpeg4")
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=5)
        stream.width, stream.height = 16, 16
        stream.pix_fmt = "yuvj420p" if codec == "mjpeg" else "yuv420p"
        for k in range(4):
            frame = av.VideoFrame.from_ndarray(np.full((16, 16, 3), 40 * k, np.uint8), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


# Writers of a valid file per format family; a family without one (a reader added later) is still fuzzed
# with the empty, random and wrong-magic files.
WRITERS: dict[str, Callable[[Path], None]] = {
    "dicom": _dicom,
    "nifti": _nifti,
    "itk": _itk,
    "tiff": _tiff,
    "bitmap": _bitmap,
    "npy": _npy,
    "npz": _npz,
    "hdf5": _hdf5,
    "matlab": _matlab,
    "table": _table,
    "video": _video,
}
_NIBABEL_WRITERS = {".mgh": _mgh, ".mgz": _mgh}


def _valid(ext: str, path: Path) -> bytes | None:
    """The bytes of a small valid file with this extension, or None when the test has no writer for it."""
    writer = _NIBABEL_WRITERS.get(ext) if EXTENSIONS[ext] == "nibabel" else WRITERS.get(EXTENSIONS[ext])
    if writer is None or ext in (".mhd", ".nhdr"):  # detached headers: the data file is another file
        return None
    try:
        writer(path)
    except Exception as exc:  # a writer this machine lacks (a codec): the other cases still run
        warnings.warn(f"no valid {ext} sample: {exc}", stacklevel=1)
        return None
    data = path.read_bytes()
    path.unlink()
    return data


def fuzz_inputs(ext: str, tmp: Path) -> list[tuple[str, bytes]]:
    """Named byte strings to write under ``ext``: empty, random, wrong magic, truncated, bit-flipped."""
    rng = random.Random(f"{SEED}{ext}")
    cases = [("empty", b""), ("random-64", rng.randbytes(64)), ("random-4k", rng.randbytes(4096))]
    cases += [(f"magic-{name}", magic + rng.randbytes(300)) for name, magic in MAGICS.items()]
    valid = _valid(ext, tmp / f"valid{ext}")
    if valid is not None:
        if ext.endswith(".gz") or ext == ".mgz":
            cases.append(("gzip-of-truncated", gzip.compress(gzip.decompress(valid)[: len(valid) // 3])))
        for cut in (8, len(valid) // 4, len(valid) // 2, len(valid) - 5):
            cases.append((f"truncated-{cut}", valid[:cut]))
        for k in range(4):
            flipped = bytearray(valid)
            for pos in rng.sample(range(len(valid)), max(1, len(valid) // 50)):
                flipped[pos] ^= 1 << rng.randrange(8)
            cases.append((f"bitflip-{k}", bytes(flipped)))
    return cases


def _check(path: Path) -> list[str]:
    """The contract violations of the three entry points on one file."""
    bad: list[str] = []
    try:
        image = medio.read(path)
        np.asarray(image.array)  # a lazily decoded array must decode (or have raised) here
    except medio.MedioError:
        pass
    except Exception as exc:
        bad.append(f"read {path.name}: {type(exc).__name__}: {exc}")
    try:
        summary = medio.inspect(path)
        assert isinstance(summary, dict)
    except Exception as exc:
        bad.append(f"inspect {path.name}: {type(exc).__name__}: {exc}")
    if path.name.lower().endswith(TABLE_SUFFIXES):
        try:
            read_table(path, f"data/{path.name}")
        except TableSkipped:
            pass
        except Exception as exc:
            bad.append(f"read_table {path.name}: {type(exc).__name__}: {exc}")
    return bad


@pytest.mark.parametrize("ext", sorted(EXTENSIONS))
def test_damaged_files_raise_only_documented_errors(tmp_path: Path, ext: str) -> None:
    bad: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the libraries warn on damaged input; warnings are not the contract
        for name, data in fuzz_inputs(ext, tmp_path):
            path = tmp_path / f"{name}{ext}"
            path.write_bytes(data)
            bad += _check(path)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("magic", sorted(MAGICS))
def test_files_without_a_known_extension_are_sniffed_safely(tmp_path: Path, magic: str) -> None:
    """No extension: the magic bytes route the file (medio.sniff.sniff_bytes) to a reader that must cope."""
    rng = random.Random(f"{SEED}{magic}")
    path = tmp_path / "blob"
    path.write_bytes(MAGICS[magic] + rng.randbytes(2000))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad = _check(path)
    assert not bad, "\n".join(bad)


def test_a_dicom_folder_of_damaged_files_fails_with_a_medio_error(tmp_path: Path) -> None:
    series = tmp_path / "series"
    series.mkdir()
    valid = _valid(".dcm", tmp_path / "v.dcm")
    assert valid is not None
    (series / "1.dcm").write_bytes(valid[: len(valid) // 2])
    (series / "2.dcm").write_bytes(random.Random(SEED).randbytes(900))
    (series / "3.dcm").write_bytes(b"")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad = _check(series)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("ext", sorted(set(TABLE_SUFFIXES) - set(EXTENSIONS)))
def test_label_table_loader_never_raises_on_damaged_tables(tmp_path: Path, ext: str) -> None:
    rng = random.Random(f"{SEED}{ext}")
    for name, data in [("empty", b""), ("random", rng.randbytes(3000)), *((k, m) for k, m in MAGICS.items())]:
        path = tmp_path / f"{name}{ext}"
        path.write_bytes(data)
        table = load_table(path, f"data/{path.name}")  # None or a table, never an exception
        assert table is None or table.frame.shape[1] >= 2 or table.raw is not None
        bad = _check(path)
        assert not bad, "\n".join(bad)

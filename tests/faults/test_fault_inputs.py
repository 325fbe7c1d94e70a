"""Raw-data pitfalls (zero-byte file, truncated DICOM, compressed DICOM without a decoder, unknown extension,
decompression-bomb PNG, truncated NIfTI) planted into a bundled dataset, standardized by the rules agent."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

import nibabel as nib
import numpy as np
import pydicom
from pydicom.dataset import FileDataset, FileMetaDataset
from pydicom.encaps import encapsulate
from pydicom.uid import ExplicitVRLittleEndian, JPEG2000Lossless, generate_uid
from test_fault_scorer_validator import huge_png_header

from agents.base import Task
from agents.rules import RulesAgent
from benchmark.discover import Dataset
from testbed.synth.suite import generate_suite

DATASET = "synth-histology-png"
FOLDER = "data/Kather Tiles/TRAIN/Adipose"


def _dicom(path: Path, syntax: str, pixel_bytes: bytes, rows: int = 16, cols: int = 16) -> None:
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = pydicom.uid.SecondaryCaptureImageStorage
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = syntax
    ds = FileDataset(str(path), {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.Modality, ds.PatientID = "OT", "X"
    ds.Rows, ds.Columns, ds.SamplesPerPixel, ds.PhotometricInterpretation = rows, cols, 1, "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 8, 8, 7, 0
    ds.PixelData = pixel_bytes
    if syntax != ExplicitVRLittleEndian:
        ds["PixelData"].is_undefined_length = True
    ds.save_as(str(path), enforce_file_format=True)


def plant_pitfalls(folder: Path) -> dict[str, str]:
    """Write one file per pitfall into ``folder``; return ``{pitfall: file name}``."""
    names = {
        "zero_byte": "ADI-TCGA 2001.png",
        "truncated_dicom": "ADI-TCGA 2002.dcm",
        "compressed_dicom": "ADI-TCGA 2003.dcm",
        "unknown_extension": "ADI-TCGA 2004.xyz",
        "decompression_bomb": "ADI-TCGA 2005.png",
        "truncated_nifti": "ADI-TCGA 2006.nii.gz",
    }
    (folder / names["zero_byte"]).write_bytes(b"")
    whole = folder / "whole.tmp"
    _dicom(whole, ExplicitVRLittleEndian, bytes(range(256)))
    data = whole.read_bytes()
    whole.unlink()
    (folder / names["truncated_dicom"]).write_bytes(data[: len(data) - 200])
    _dicom(
        folder / names["compressed_dicom"], JPEG2000Lossless, encapsulate([b"\xff\x4f\xff\x51" + b"\0" * 60])
    )
    (folder / names["unknown_extension"]).write_bytes(b"\x00\x01binary blob of an unknown format" * 10)
    (folder / names["decompression_bomb"]).write_bytes(huge_png_header())
    nii = folder / "whole.nii.gz"
    nib.save(nib.Nifti1Image(np.arange(16 * 16 * 8, dtype=np.int16).reshape(16, 16, 8), np.eye(4)), str(nii))
    raw = gzip.decompress(nii.read_bytes())
    nii.unlink()
    (folder / names["truncated_nifti"]).write_bytes(gzip.compress(raw[: 352 + 100]))
    return names


def test_each_raw_pitfall_fails_its_sample_with_a_reason_and_the_rest_is_standardized(tmp_path: Path) -> None:
    """Expect: the six planted samples are skipped, each with a ``sample_error`` in the trace naming the
    file; the ten original samples are all written (image + JSON) and ``data_meta.json`` counts them;
    the candidate is ``ok``."""
    generate_suite(tmp_path / "suite", only=[DATASET])
    root = tmp_path / "suite" / DATASET
    names = plant_pitfalls(root / FOLDER)
    manifest = root / "VLM" / "random.txt"
    lines = manifest.read_text(encoding="utf-8").splitlines()
    planted = {10 + n: name for n, name in enumerate(names.values())}
    lines += [f"{i} /authors/x/{DATASET}/{FOLDER}/{name}" for i, name in planted.items()]
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")

    task = Task.from_dataset(Dataset.from_root(root), tmp_path / "cand", temperature=0.0)
    cand = asyncio.run(asyncio.wait_for(RulesAgent().generate(task), 120))

    assert cand.status == "ok", cand.reason
    errors = {}
    for line in Path(cand.trace_path).read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["event"] == "sample_error":
            errors[int(event["sample"])] = event["error"]
    assert set(errors) == set(planted), errors
    for index, message in errors.items():
        assert message.strip(), index
    out = cand.output_dir
    for i in range(10):
        assert (out / "images" / f"{i}.png").is_file() and (
            out / "standardized_annotations" / f"{i}.json"
        ).is_file()
    for i in planted:
        assert not (out / "standardized_annotations" / f"{i}.json").exists()
    meta = json.loads((out / "data_meta.json").read_text(encoding="utf-8"))
    assert meta["data_volume"]["total"] == 10
    print("\n" + "\n".join(f"{planted[i]}: {errors[i]}" for i in sorted(errors)))

"""The replica suite (issue 30, item 1): real MDS-Bench trees rebuilt from shared/mdsbench/replica, with real
paths and text files, and every binary in its real container format, readable by the field's library."""

from __future__ import annotations

import gzip
import hashlib
import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmark.manifest import parse_manifest
from testbed.replica import BUILD_REPORT, ReplicaSourceError, build_replica, find_replica_source
from testbed.replica.source import load_replica_dataset, replica_dataset_names

pytestmark = pytest.mark.heavy
SCALE = 1 / 16  # a shrunk build: same trees and formats, a sixteenth of the pixels per axis


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def material(mdsbench_dir: Path) -> Path:
    path = mdsbench_dir / "replica"
    if not (path / "MANIFEST.sha256").is_file():
        pytest.skip(f"no replica material at {path}")
    return path


@pytest.fixture(scope="module")
def replica(material: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("replica")
    build_replica(out, material, scale=SCALE, progress=False)
    return out


def _binaries(material: Path, suffix: str) -> list[str]:
    return [
        f.relpath
        for name in replica_dataset_names(material)
        for f in load_replica_dataset(material, name).files
        if f.is_binary and f.relpath.lower().endswith(suffix)
    ]


def test_build_is_deterministic(material: Path, replica: Path, tmp_path: Path) -> None:
    # Every writer pins what would vary (gzip and ZIP times, openpyxl's dates, CZI GUIDs): same bytes again.
    build_replica(tmp_path, material, scale=SCALE, progress=False)
    again, first = _hashes(tmp_path), _hashes(replica)
    assert again == first and len(first) == 556 + 1  # every listed file, plus the build report


def test_trees_have_every_real_path_and_byte_identical_text(material: Path, replica: Path) -> None:
    for name in replica_dataset_names(material):
        dataset = load_replica_dataset(material, name)
        for file in dataset.files:
            built = replica / name / file.relpath
            assert built.is_file(), built
            if file.text is not None:
                assert built.read_bytes() == file.text.read_bytes(), file.relpath
    assert (replica / "5005236_folder/data/Neurophysiological and MRI data 1/Data 1/sub-k01/anat").is_dir()
    assert (replica / "5002837_folder/data/SymphonyWeb204877_72-2.TIF").is_file()  # upper-case extension kept


def test_manifests_reroot_onto_existing_files(material: Path, replica: Path) -> None:
    for name in replica_dataset_names(material):
        entries = parse_manifest(replica / name / "VLM" / "random.txt", check_exists=True)
        assert len(entries) == 20
        gt = json.loads(
            next((replica / name / "VLM").glob("ground_truth_*.json")).read_text(encoding="utf-8")
        )
        for entry in entries:
            truth = gt["samples"][str(entry.index)]["expected_extra"]
            assert truth["source_file"] == entry.relpath
            for key in ("seg_file", "mask_file", "label_file"):
                if truth.get(key):
                    assert (replica / name / truth[key]).is_file()


def test_metaimage_volumes_and_lesions_share_geometry_and_lesions_are_not_empty(replica: Path) -> None:
    sitk = pytest.importorskip("SimpleITK")
    base = replica / "10602767_folder/data/BONBID2023_Test"
    adc = sitk.ReadImage(str(base / "1ADC_ss/MGHNICU_001-VISIT_01-ADC_ss.mha"))
    lesion = sitk.ReadImage(str(base / "3LABEL/MGHNICU_001-VISIT_01_lesion.mha"))
    assert adc.GetSize() == lesion.GetSize() and adc.GetSpacing() == lesion.GetSpacing()
    assert adc.GetPixelIDTypeAsString() == lesion.GetPixelIDTypeAsString() == "32-bit float"
    mask = sitk.GetArrayFromImage(lesion)
    assert set(np.unique(mask)) == {0.0, 1.0}  # class ids of the GT's table: background, lesion
    values = sitk.GetArrayFromImage(adc)
    assert values[mask > 0].mean() < values[(values > 0) & (mask == 0)].mean()  # restricted diffusion


def _open(path: Path) -> object:
    """Open one synthesized binary with the library its field reads it with; returns what was read."""
    import czifile
    import nibabel as nib
    import openpyxl
    import SimpleITK as sitk
    import tifffile
    from PIL import Image

    name = path.name.lower()
    if name.startswith("._"):
        return struct.unpack(">I", path.read_bytes()[:4])[0] == 0x00051607
    if name.endswith(".mha"):
        return sitk.ReadImage(str(path)).GetSize()  # type: ignore[no-untyped-call]
    if name.endswith((".nii", ".nii.gz")):
        raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
        # The fixed 348-byte NIfTI-1 header.
        header: Any = nib.Nifti1Header(binaryblock=raw[:348], check=False)  # type: ignore[no-untyped-call]
        if header["datatype"] == 1:  # DT_BINARY: nibabel parses the header, not the bits; count them
            voxels = int(np.prod(header.get_data_shape()))
            return len(raw) - int(header["vox_offset"]) == (voxels + 7) // 8
        image: Any = nib.load(path)
        return np.asarray(image.dataobj).shape
    if name.endswith(".czi"):
        return czifile.imread(str(path)).shape
    if name.endswith((".tif", ".tiff")):
        return tifffile.imread(path).shape
    if name.endswith(".png"):
        with Image.open(path) as png:
            png.verify()
            return png.size
    if name.endswith(".xlsx"):
        return openpyxl.load_workbook(path).sheetnames
    if name.endswith(".docx"):
        with zipfile.ZipFile(path) as docx:
            return docx.read("word/document.xml")[:40]
    raise AssertionError(f"no opener for {path}")


def test_every_binary_opens_in_its_real_format(material: Path, replica: Path) -> None:
    for name in replica_dataset_names(material):
        for file in load_replica_dataset(material, name).files:
            if file.is_binary:
                assert _open(replica / name / file.relpath), file.relpath


def test_nifti_t1w_is_3d_dti_has_one_volume_per_gradient_and_masks_are_one_bit(replica: Path) -> None:
    nib = pytest.importorskip("nibabel")
    subject = replica / "5005236_folder/data/Neurophysiological and MRI data 1/Data 1/sub-k01"
    assert nib.load(subject / "anat/sub-k01_T1w.nii.gz").ndim == 3
    dti = nib.load(subject / "dti/sub-k01_dti.nii.gz")
    columns = len((subject / "dti/sub-k01_dti.bvec").read_text(encoding="utf-8").split("\n")[0].split())
    assert dti.ndim == 4 and dti.shape[3] == columns == 93
    atlases = replica / "10602767_folder/data/atlases"
    mask = atlases / "normal_atlases/brainmask_week0-1.nii"
    header = mask.read_bytes()[:348]
    datatype, bitpix = struct.unpack("<hh", header[70:74])
    assert (datatype, bitpix) == (1, 1)  # DT_BINARY, 1 bit per voxel
    assert nib.load(atlases / "lesion_atlases/lesion_atlas.nii").get_fdata().max() > 0


def test_czi_slides_open_with_czifile(material: Path, replica: Path) -> None:
    czifile = pytest.importorskip("czifile")
    base = replica / "4975777_folder"
    for relpath in (
        "data/Images for quantification/CD31/IBMI_Huang_liver_CD31_ND30M.czi",
        "data/Images for quantification/ICG/IBMI_Huang_liver_ICG750_ND194.czi",
    ):
        pixels = czifile.imread(str(base / relpath))
        assert pixels.size > 0 and pixels.max() > 0
    rgb = np.squeeze(czifile.imread(str(base / _binaries(material, ".czi")[0])))
    assert rgb.ndim == 3 and rgb.shape[-1] == 3  # brightfield BGR24


def test_photographs_are_rgb_or_palette_as_their_real_sizes_say(replica: Path) -> None:
    from PIL import Image

    tifffile = pytest.importorskip("tifffile")
    data = replica / "5002837_folder/data"
    assert tifffile.TiffFile(data / "SymphonyWeb204877_1.TIF").pages[0].photometric.name == "RGB"
    assert tifffile.TiffFile(data / "SymphonyWeb204877_11.TIF").pages[0].photometric.name == "PALETTE"
    with Image.open(data / "OCT_OD.png") as png:
        assert png.mode == "RGB"


def test_office_files_and_appledouble_stubs_are_valid(replica: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    root = replica / "10602767_folder/data"
    book = openpyxl.load_workbook(root / "BONBID2023_Train/BONBID2023_clinicaldata_train.xlsx")
    rows = list(book.active.iter_rows(values_only=True))
    assert rows[0][0] == "Patient ID" and len(rows) == 1 + 85  # one row per training case of the tree
    with zipfile.ZipFile(replica / "5002837_folder/data/README_file.docx") as docx:
        assert b"<w:document" in docx.read("word/document.xml")
    stub = (root / "__MACOSX/._BONBID2023_clinicaldata_val.xlsx").read_bytes()
    assert len(stub) == 344  # the real stub's size, from its Git-LFS pointer
    magic, version, _, entries = struct.unpack(">II16sH", stub[:26])
    assert (magic, version, entries) == (0x00051607, 0x00020000, 2)
    assert struct.unpack(">I", stub[26:30])[0] == 9  # Finder Info entry


def test_build_report_names_what_each_binary_is(replica: Path) -> None:
    report = json.loads((replica / BUILD_REPORT).read_text(encoding="utf-8"))
    entry = report["datasets"]["5002837_folder"]["data/SymphonyWeb204877_23.TIF"]
    assert entry["real_bytes"] == 4_900_626 and "palette" in entry["written"]


def test_missing_material_is_one_error_naming_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(ReplicaSourceError, match="no replica material here") as info:
        find_replica_source(tmp_path / "absent")
    assert str(tmp_path / "absent") in str(info.value) and "\n" not in str(info.value)

"""`medio.libraries.families_for`: the format families a run preloads for its files (by name, none opened).

A run imports only these before its threads start (`experiments.run.suite.format_families`); any other family
is imported under medio's lock on first use (`test_medio_import_lock.py`)."""

from __future__ import annotations

import pytest

from medio.libraries import ALWAYS, LIBRARIES, families_for


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("data/case_1/image.nii.gz", "nifti"),
        ("scan.DCM", "dicom"),
        ("stage_2_train_labels.csv", "table"),
        ("mask.seg.nrrd", "itk"),
        ("slide.ome.tiff", "tiff"),
        ("._slide.tif", "tiff"),
        ("cine.mp4", "video"),
        ("volume.mat", "matlab"),
        ("IM0001", "dicom"),  # no extension: most often DICOM
        ("1.2.840.10008.5.1", "dicom"),  # named by its UID
        ("brain.hdr", "nifti"),  # Analyze or ENVI: the content tells
        ("brain.hdr", "envi"),
    ],
)
def test_a_file_name_adds_the_family_its_reader_needs(name: str, family: str) -> None:
    assert family in families_for([name])


def test_text_files_add_nothing_and_the_cheap_families_are_always_there() -> None:
    found = families_for(["README.txt", "meta.json", "notes.md", "fundus_012.npy"])
    assert found == set(ALWAYS) | {"npy"}
    # The expensive libraries stay unimported for a suite without their formats.
    assert not found & {"table", "matlab", "itk", "video", "hdf5", "nifti", "dicom"}
    assert set(ALWAYS) <= set(LIBRARIES)

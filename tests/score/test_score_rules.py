"""Reference-scorer rules that the conformance vectors exercise only indirectly."""

from __future__ import annotations

import pytest

from benchmark.score.fields import field_score
from benchmark.score.normalize import is_placeholder, nonmissing, norm_modality
from benchmark.score.source import expand_aliases, match_annotations, normalize_source_stem


@pytest.mark.parametrize(
    ("raw", "stem"),
    [
        ("data/dataset/case_00286/segmentation.nii.gz", "segmentation"),
        ("Raw measurement data/P001.dat", "p001dat"),  # .dat is not a stripped extension
        ("x/expert_annotation_test_01.nii", "test_01"),  # test_NN collapses distinct files
        ("brain_p12_0000.nii.gz", "brain_p12"),
        ("BraTS_001_flair.nii.gz", "brats_001"),
        ("data/dynamicnuclearnet/test_1/frame_0001.tif", "dynamicnuclearnet_test_1_frame_0001"),
        ("radial_128_2/10/3DMR_Chest.mat", "radial_128_2_10_3dmr_chest"),
        ("3DMR_Chest_radial_128_2_spokes10", "radial_128_2_10_3dmr_chest"),
        ("C:\\data\\CR32a7555-CR32a97af-000033.avi", "cr32a7555_cr32a97af_000033"),
    ],
)
def test_source_stem_normalisation(raw: str, stem: str) -> None:
    assert normalize_source_stem(raw) == stem


def test_bids_aliases_are_equivalent() -> None:
    assert {"p23", "sub_p23_dti", "sub_p23"} <= expand_aliases("p023")


def test_greedy_matching_prefers_stem_then_same_index() -> None:
    expected = {"0": {"a"}, "1": {"b"}, "2": {"c"}}
    stems = {"1": "a", "2": "b", "5": None}
    assert match_annotations(["0", "1", "2"], expected, stems) == {"0": "1", "1": "2", "2": None}


def test_placeholders_follow_key_rules() -> None:
    assert (
        is_placeholder(0, "age_years") and not is_placeholder(0, "total") and not is_placeholder(-1, "label")
    )
    assert is_placeholder("<fill me>") and is_placeholder(["NA", None]) and not is_placeholder("x")
    assert nonmissing(0) and not nonmissing("unknown") and not nonmissing(False)


def test_field_matcher_dispatches_on_key_name() -> None:
    assert field_score("dataset_name", "x-ray", "X-ray") == 1.0
    assert field_score("modality_primary", "Xray", "X-ray") == 0.0  # enum keys are exact
    assert field_score("source_file", "/abs/data/a.png", "data/a.png") == 0.0  # full-path equality
    assert field_score("label_file", "A_b", "a-b") == 1.0  # text match, not path
    assert field_score("subject_id", None, "NA") == 0.0 and field_score("subject_id", "NA", None) == 1.0
    assert field_score("label", "4", 4) == 1.0
    assert norm_modality("MR") == "mri" and norm_modality("XR") == "xr"

"""benchmark.normalize: one copy of the SPEC §3.1 normalisers for scorer, validator and suite generator."""

from __future__ import annotations

import subprocess
import sys

import pytest

import benchmark.normalize as shared
import benchmark.score.constants as score_constants
import benchmark.score.normalize as score_normalize
import benchmark.score.source as score_source
import validator.values as validator_values
from testbed.synth.stems import check_generic
from testbed.synth.stems import normalize_source_stem as synth_stem


@pytest.mark.parametrize(
    "name", ["is_placeholder", "nonmissing", "norm_text", "norm_token", "norm_dim", "norm_modality"]
)
def test_scorer_and_validator_use_the_same_normaliser(name: str) -> None:
    assert getattr(score_normalize, name) is getattr(shared, name)
    assert getattr(validator_values, name) is getattr(shared, name)


def test_scorer_and_validator_use_the_same_stem_rule() -> None:
    assert score_source.normalize_source_stem is shared.normalize_source_stem
    assert validator_values.source_stem is shared.normalize_source_stem
    assert score_source.expand_aliases is shared.expand_aliases


def test_scorer_constants_are_the_shared_ones_from_one_data_file() -> None:
    assert score_constants.MISSING_TOKENS is shared.MISSING_TOKENS
    assert score_constants.STEM_EXTENSIONS is shared.STEM_EXTENSIONS
    assert score_constants.raw() is shared.load_constants()
    assert validator_values.ALLOWED_DIMS == ("2d", "3d", "video")


def test_percent_encoded_names_are_unquoted_before_normalising() -> None:
    # SPEC §3.1: "unquote, \\ → /" is the first step of the reference's normalize_source_stem.
    assert shared.normalize_source_stem("data/My%20Scan-01.nii.gz") == "my_scan_01"


def test_validator_source_aliases_follow_the_scorers_dataset_rules() -> None:
    scorer = shared.expand_aliases(shared.normalize_source_stem("radial_128_2/10/3DMR_Chest.mat"))
    assert validator_values.source_aliases("radial_128_2/10/3DMR_Chest.mat") == scorer
    assert validator_values.source_aliases("3DMR_Chest_radial_128_2_spokes10") == scorer
    assert validator_values.source_aliases("sub-p023") >= {"p23", "sub_p23_dti"}


def test_token_cache_does_not_change_results() -> None:
    shared.clear_token_cache()
    cold = shared.norm_token("  Left_Kidney/Tumour (T2) ")
    warm = shared.norm_token("  Left_Kidney/Tumour (T2) ")
    assert cold == warm == "left kidney tumour t2"


def test_synth_names_a_folder_by_its_last_part_where_the_scorer_keeps_nothing() -> None:
    assert synth_stem("data/Case-01/") == "case_01"
    assert shared.normalize_source_stem("data/Case-01/") is None


def test_synth_stems_equal_the_scorers_for_generic_names() -> None:
    for name in ("data/a b/Scan-3.ome.tif", "imgs\\X_T1.nii.gz", "data/case.nrrd"):
        assert check_generic(name) == shared.normalize_source_stem(name)


@pytest.mark.parametrize(
    "name", ["data/dynamicnuclearnet/test_1/frame_0000.tif", "x/expert_test_01.nii", "sub-p023.nii.gz"]
)
def test_synth_refuses_names_that_hit_a_dataset_specific_rule(name: str) -> None:
    with pytest.raises(ValueError, match="special rule"):
        check_generic(name)


def test_importing_the_shared_module_stays_light_and_ground_truth_free() -> None:
    code = (
        "import sys, benchmark.normalize, validator.values\n"
        "bad = [m for m in ('numpy', 'pandas', 'PIL', 'benchmark.groundtruth', 'benchmark.score') "
        "if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == ""

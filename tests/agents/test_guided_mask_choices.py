"""The mask files the guided mode offers for a segmentation sample: the sample's own mask first."""

from __future__ import annotations

from agents.base import ManifestEntry
from agents.llm.guided import mask_choices


def test_the_mask_that_shares_the_samples_id_comes_before_its_sibling_images() -> None:
    sample = ManifestEntry(0, "data/Test/1ADC_ss/CASE_001-VISIT_01-ADC_ss.mha")
    files = [
        "data/Train/1ADC_ss/CASE_069-VISIT_01-ADC_ss.mha",  # another image of the series: most alike by name
        "data/Test/1ADC_ss/CASE_002-VISIT_01-ADC_ss.mha",
        "data/Test/3LABEL/CASE_002-VISIT_01_lesion.mha",  # another sample's mask
        "data/Test/3LABEL/CASE_001-VISIT_01_lesion.mha",  # its mask: its id, an annotation word (3LABEL)
        "data/Test/2Z_ADC/Zmap_CASE_001-VISIT_01-ADC_ss.mha",  # its id, no annotation word
    ]

    ranked = mask_choices(files, sample)

    assert ranked[:2] == [
        "data/Test/3LABEL/CASE_001-VISIT_01_lesion.mha",
        "data/Test/2Z_ADC/Zmap_CASE_001-VISIT_01-ADC_ss.mha",
    ]
    assert ranked[-1] == "data/Test/1ADC_ss/CASE_002-VISIT_01-ADC_ss.mha"  # a sibling image of the series


def test_at_most_twelve_files_are_offered() -> None:
    sample = ManifestEntry(3, "data/images/img_3.png")
    files = [f"data/masks/img_{i}_mask.png" for i in range(40)]

    ranked = mask_choices(files, sample)

    assert len(ranked) == 12 and ranked[0] == "data/masks/img_3_mask.png"

"""Words the rules baseline recognises in names and READMEs: modalities, anatomy, annotation and id tokens.

This is general domain vocabulary (what "echo" or "HU" means), applied to whatever text is on disk (the
dataset folder name, folder and file names, README text, DICOM tags). It is not a table of
the bundled suite's answers.
"""

from __future__ import annotations

import itertools
import re

__all__ = [
    "ANNOTATION_TOKENS",
    "DICOM_MODALITY",
    "GENERIC_NAMES",
    "MODALITY_WORDS",
    "NORMAL_FIRST",
    "ORGAN_REGION",
    "anatomy_from_words",
    "modality_scores",
    "tokens",
]

# DICOM Modality (0008,0060) codes → the names the benchmark uses (PS3.3 C.7.3.1.1.1).
DICOM_MODALITY = {
    "CT": "CT",
    "MR": "MRI",
    "CR": "X-ray",
    "DX": "X-ray",
    "RG": "X-ray",
    "MG": "Mammography",
    "US": "Ultrasound",
    "PT": "PET",
    "NM": "Nuclear medicine",
    "XA": "X-ray angiography",
    "OP": "Fundus",
    "OPT": "OCT",
    "SM": "Microscopy",
    "ES": "Endoscopy",
    "GM": "Microscopy",
    "XC": "Photography",
}

# token → (modality, weight in nats). Several words may vote; the weights add up.
MODALITY_WORDS: dict[str, tuple[str, float]] = {
    "ct": ("CT", 2.0),
    "hu": ("CT", 1.0),
    "cta": ("CT", 1.5),
    "lidc": ("CT", 1.0),
    "luna": ("CT", 1.0),
    "kits": ("CT", 1.0),
    "abdomen": ("CT", 0.5),
    "liver": ("CT", 0.3),
    "kidney": ("CT", 0.3),
    "spleen": ("CT", 0.3),
    "organ": ("CT", 0.3),
    "mr": ("MRI", 2.0),
    "mri": ("MRI", 2.0),
    "t1": ("MRI", 1.5),
    "t2": ("MRI", 1.5),
    "t1w": ("MRI", 1.5),
    "t2w": ("MRI", 1.5),
    "flair": ("MRI", 1.5),
    "dwi": ("MRI", 1.5),
    "adc": ("MRI", 1.5),
    "cine": ("MRI", 1.5),
    "glioma": ("MRI", 1.0),
    "brats": ("MRI", 1.5),
    "recon": ("MRI", 0.5),
    "kspace": ("MRI", 1.5),
    # BIDS suffixes and datatypes (the specification's names for MR contrasts and runs).
    "bold": ("MRI", 1.5),
    "fmri": ("MRI", 2.0),
    "asl": ("MRI", 1.0),
    "pdw": ("MRI", 1.0),
    "mprage": ("MRI", 1.5),
    "pet": ("PET", 2.0),
    "portal": ("RTIMAGE", 0.8),
    "spine": ("MRI", 0.4),
    "meniscus": ("MRI", 0.8),
    "prostate": ("MRI", 0.6),
    "xray": ("X-ray", 2.0),
    "cxr": ("X-ray", 2.0),
    "radiograph": ("X-ray", 2.0),
    "pneumonia": ("X-ray", 0.8),
    "us": ("Ultrasound", 1.5),
    "ultrasound": ("Ultrasound", 2.0),
    "echo": ("Ultrasound", 1.5),
    "echocardiography": ("Ultrasound", 2.0),
    "sonography": ("Ultrasound", 2.0),
    "bmode": ("Ultrasound", 1.5),
    "elastography": ("Ultrasound", 1.5),
    "thyroid": ("Ultrasound", 0.4),
    "dermoscopy": ("Dermoscopy", 2.0),
    "isic": ("Dermoscopy", 1.5),
    "skin": ("Dermoscopy", 0.6),
    "histology": ("Histopathology", 2.0),
    "histopathology": ("Histopathology", 2.0),
    "immunohistochemistry": ("Histopathology", 1.5),
    "ihc": ("Histopathology", 1.0),
    "slide": ("Histopathology", 0.5),
    "tcga": ("Histopathology", 0.8),
    "microscopy": ("Microscopy", 2.0),
    "nuclei": ("Microscopy", 1.5),
    "confocal": ("Microscopy", 1.5),
    "cell": ("Microscopy", 0.8),
    "fluorescence": ("Microscopy", 1.5),
    "fundus": ("Fundus", 2.0),
    "retina": ("Fundus", 1.0),
    "retinal": ("Fundus", 1.0),
    "oct": ("OCT", 2.0),
    "endoscopy": ("Endoscopy", 2.0),
    "polyp": ("Endoscopy", 1.2),
    "colonoscopy": ("Endoscopy", 2.0),
    "laparoscopy": ("Endoscopy", 1.5),
    "laparoscopic": ("Endoscopy", 1.5),
    "mammography": ("Mammography", 2.0),
    "dbt": ("Mammography", 1.5),
    "tomosynthesis": ("Mammography", 1.5),
    "breast": ("Mammography", 0.4),
}

# organ word → "Organ (Region)" (the benchmark's anatomical_structure style).
ORGAN_REGION: dict[str, str] = {
    "liver": "Liver (Abdomen)",
    "kidney": "Kidney (Abdomen)",
    "spleen": "Spleen (Abdomen)",
    "abdomen": "Abdomen (Abdomen)",
    "pancreas": "Pancreas (Abdomen)",
    "organ": "Abdomen (Abdomen)",
    "brain": "Brain (Head)",
    "glioma": "Brain (Head)",
    "head": "Head (Head)",
    "lung": "Lung (Chest)",
    "chest": "Lung (Chest)",
    "pneumonia": "Lung (Chest)",
    "heart": "Heart (Chest)",
    "cardiac": "Heart (Chest)",
    "echo": "Heart (Chest)",
    "breast": "Breast (Chest)",
    "prostate": "Prostate (Pelvis)",
    "spine": "Spine (Back)",
    "knee": "Knee (Lower limb)",
    "hand": "Hand (Upper limb)",
    "thyroid": "Thyroid (Neck)",
    "skin": "Skin (Body surface)",
    "dermoscopy": "Skin (Body surface)",
    "fundus": "Retina (Eye)",
    "retina": "Retina (Eye)",
    "polyp": "Colon (Abdomen)",
    "colon": "Colon (Abdomen)",
    "laparoscopy": "Gallbladder (Abdomen)",
    "histology": "Colon (Abdomen)",
    "nuclei": "Cell (Microscopic)",
    "cell": "Cell (Microscopic)",
    "confocal": "Cell (Microscopic)",
    "elastography": "Breast (Chest)",
}

# Folder/file words that mark an annotation (mask, label map, boxes) rather than an image.
ANNOTATION_TOKENS = frozenset(
    {
        "mask",
        "masks",
        "label",
        "labels",
        "labelstr",
        "labelsts",
        "seg",
        "segmentation",
        "segmentations",
        "annot",
        "annotation",
        "annotations",
        "gt",
        "groundtruth",
        "manual",
        "lesion",
        "roi",
        # BIDS derivatives suffixes of label maps (discrete and probabilistic segmentations).
        "dseg",
        "probseg",
        "ground_truth",
        "ground-truth",
        "truth",
    }
)

# File names that say nothing about the sample (the folder above identifies it).
GENERIC_NAMES = frozenset(
    {
        "segmentation",
        "imaging",
        "image",
        "img",
        "mask",
        "label",
        "labels",
        "data",
        "volume",
        "scan",
        "t1",
        "t2",
        "flair",
        "ct",
        "mr",
        "seg",
    }
)

# Class names that conventionally take id 0 (the "negative" class).
NORMAL_FIRST = (
    "normal",
    "healthy",
    "negative",
    "benign",
    "intact",
    "no finding",
    "none",
    "absent",
    "control",
)

_SPLIT = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def tokens(text: str) -> list[str]:
    """Lower-case alphanumeric tokens of a name or sentence (``"BrTumor_017.nii"`` → ``br``, ``tumor`` ...).

    Args:
        text: Any text.

    Returns:
        The tokens, camel case split, in order.
    """
    spaced = _CAMEL.sub(" ", text)
    return [t for t in _SPLIT.split(spaced.lower()) if t]


def modality_scores(words: list[str], weight: float = 1.0) -> dict[str, float]:
    """``{modality: score}``: the modality votes of ``words`` (`tokens`; ``x`` followed by ``ray`` counts as
    ``xray``), times ``weight`` (a folder name counts less than a DICOM tag).
    """
    joined = list(words) + [a + b for a, b in itertools.pairwise(words)]
    scores: dict[str, float] = {}
    for word in joined:
        hit = MODALITY_WORDS.get(word)
        if hit is not None:
            scores[hit[0]] = scores.get(hit[0], 0.0) + hit[1] * weight
    return scores


def anatomy_from_words(words: list[str]) -> list[str]:
    """The distinct ``"Organ (Region)"`` entries named by ``words``, first mention first."""
    found: list[str] = []
    for word in words:
        entry = ORGAN_REGION.get(word)
        if entry is not None and entry not in found:
            found.append(entry)
    return found

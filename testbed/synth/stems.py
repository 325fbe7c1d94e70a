"""Source stems for the ground truth of the bundled suite (SPEC §3.1, "Source stem").

The generator writes each ground-truth ``source_stem`` already normalised the way the reference scorer
normalises a prediction's source, so a prediction that names the right file passes the source gate. The
normalisation itself is the shared one (`benchmark.normalize.normalize_source_stem`, also used by the
scorer); :func:`check_generic` rejects names that would trigger a dataset-specific rule of the reference
(medical-7 radial paths, DynamicNuclearNet, ``test_NN``, ``brain_pN``, BIDS ``p``/``k`` aliases), so the suite
never depends on those quirks and only the generic rules (basename, one known extension, punctuation, channel
suffix) apply.
"""

from __future__ import annotations

import re

from benchmark import normalize

# Deliberately broader than the reference's own regexes: a special token anywhere in the name (a folder
# included) is refused, so a name is accepted only when it is plainly generic.
_SPECIAL = re.compile(r"radial_\d+_\d+|dynamicnuclearnet|test_\d+|brain_p\d+", re.I)
_SHORT_ID = re.compile(r"(sub_)?[pk]0*\d+(_dti)?")


def normalize_source_stem(value: str) -> str:
    """Normalise a path or id as the reference scorer does, naming a folder written with a trailing ``/``.

    Args:
        value: A path (``data/a/B-1.nii.gz``) or an id.

    Returns:
        The basename without one known extension, lower-cased, ``-``/space turned into ``_``, other
        punctuation dropped, and one channel suffix (``_t1``, ``_seg``, ...) stripped; "" when nothing is
        left.
    """
    # The generator's one difference from the scorer: a folder record ("data/case_01/") is named by its
    # folder, where the scorer's basename rule would leave nothing.
    text = str(value).strip().replace("\\", "/").rstrip("/")
    return normalize.normalize_source_stem(text) or ""


def check_generic(value: str) -> str:
    """Normalise ``value`` and make sure no dataset-specific rule of the reference scorer applies to it.

    Args:
        value: A path or id the ground truth will use as a source.

    Returns:
        The normalised stem.

    Raises:
        ValueError: When the value would hit a special rule or normalises to nothing.
    """
    stem = normalize_source_stem(value)
    base = value.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    if (
        not stem
        or _SPECIAL.search(value)
        or _SHORT_ID.fullmatch(stem)
        or normalize.FRAME_TOKEN_RE.search(base)
    ):
        raise ValueError(
            f"synthetic source name {value!r} would trigger a special rule of the reference scorer"
        )
    return stem

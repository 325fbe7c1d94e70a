"""Replica recipes for 3-D and 4-D volumes: MetaImage ADC maps, Z-maps and lesion masks (BONBID-HIE),
NIfTI atlases beside them (1-bit masks included), and BIDS-style T1w and DTI NIfTI series.

Geometry comes from the real files where the listing tells it:

- MetaImage: the Git-LFS pointers give each real byte size. A lesion file is exactly 14 bytes larger than its
  ADC volume, for every case: so both are uncompressed, hold the same number of voxels of the same byte width,
  and differ only in header text. The voxel count is ``(size - ~1100) / 4`` (the real headers come out at
  1045-1234 bytes under that reading, which fits MetaImage headers that carry a metadata dictionary), and the
  slabs are 128 x 128 or 256 x 256 float32 slices (every large size is a whole number of 256 x 256 x 4-byte
  slices). So the ADC map is float32 and the lesion mask is float32 0/1 of the same geometry.
- T1w: ``T1_description.json`` gives a 256 x 256 field of view; 176 slices of 1 mm (an MPRAGE slab).
- DTI: ``DTI_description.json`` gives 50 slices; the volume count is the ``.bvec`` column count (93, one has
  94). The real series are 50-71 MB compressed, so they are written at a quarter of the in-plane size and of
  the slice count (``DTI_SCALE``).

Files the manifest never names and whose size the listing does not give are written at ``UNSAMPLED_SCALE`` of
their siblings' in-plane size, to keep the tree complete at a fraction of its bytes.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from scipy import ndimage

from testbed.replica.content import adc_volume, dti_series, lesion_mask, t1w_volume, zmap_volume
from testbed.replica.context import RecipeContext, scaled
from testbed.replica.source import ReplicaFile, ReplicaSourceError
from testbed.synth.write_files import write_itk, write_nifti
from testbed.synth.write_nifti_bits import write_nifti_bits

__all__ = ["DTI_SCALE", "UNSAMPLED_SCALE", "write_atlas", "write_bids_nifti", "write_metaimage"]

#: Linear scale of the DTI stand-ins (in-plane and slices) against the real 128 x 128 x 50 series.
DTI_SCALE = 0.25
#: Linear in-plane scale of files neither named by the manifest nor sized by the listing.
UNSAMPLED_SCALE = 0.25
#: The real MetaImage headers' length under the geometry reading above (module docstring).
_MHA_HEADER = 1100
_CASE_RE = re.compile(r"(MGHNICU_\d+-VISIT_\d+)")


def _case_size(ctx: RecipeContext, case: str) -> int | None:
    """The real ADC byte size of ``case``, from its ADC pointer or its lesion pointer (14 bytes larger)."""
    for file in ctx.dataset.files:
        if case in file.relpath and file.real_size is not None:
            if file.relpath.endswith("_lesion.mha"):
                return file.real_size - 14
            if file.relpath.endswith("-ADC_ss.mha"):
                return file.real_size
    return None


def _case_volumes(ctx: RecipeContext, case: str) -> dict[str, Any]:
    """Geometry, lesion and ADC of one case, shared by its ADC, Z-map and lesion files."""
    cases: dict[str, dict[str, Any]] = ctx.memo.setdefault("cases", {})
    if case in cases:
        return cases[case]
    rng = ctx.rng(case)
    size = _case_size(ctx, case)
    if size is not None:
        voxels = (size - _MHA_HEADER) / 4
        side = 256 if voxels >= 16 * 256 * 256 else 128
        slices = max(2, round(voxels / side**2))
        factor = ctx.scale
    else:
        side = int(rng.choice([128, 256]))
        slices = int(rng.integers(16, 31) if side == 128 else rng.integers(40, 51))
        factor = ctx.scale * UNSAMPLED_SCALE
    # Neonatal head ~ 110 mm across: the field of view is about twice that; the slab covers ~100 mm.
    spacing = (220.0 / side, 220.0 / side, float(np.clip(round(100.0 / slices, 1), 2.0, 6.0)))
    shape = (scaled(slices, min(1.0, ctx.scale), 2), scaled(side, factor), scaled(side, factor))
    spacing = (spacing[0] * side / shape[2], spacing[1] * side / shape[1], spacing[2] * slices / shape[0])
    lesion = lesion_mask(rng, shape)
    adc = adc_volume(rng, shape, lesion)
    origin = (-spacing[0] * shape[2] / 2, -spacing[1] * shape[1] / 2, -spacing[2] * shape[0] / 2)
    if len(cases) >= 4:  # only a speed-up: rng(case) makes a recomputed case identical; bound the memory
        cases.pop(next(iter(cases)))
    cases[case] = {"lesion": lesion, "adc": adc, "spacing": spacing, "origin": origin}
    return cases[case]


def write_metaimage(ctx: RecipeContext, file: ReplicaFile) -> str:
    """An ADC map, a Z-map or a lesion mask of one BONBID-HIE case (``.mha``, float32, uncompressed)."""
    match = _CASE_RE.search(file.relpath)
    if match is None:
        raise ReplicaSourceError(file.relpath, "no MGHNICU_<n>-VISIT_<n> case id in a MetaImage name")
    case = _case_volumes(ctx, match.group(1))
    name = file.relpath.rsplit("/", 1)[-1]
    if name.endswith("_lesion.mha"):
        data, what = case["lesion"].astype(np.float32), "lesion mask (float32 0/1)"
    elif name.startswith("Zmap_"):
        data, what = zmap_volume(case["adc"]), "ADC Z-map (float32)"
    else:
        data, what = case["adc"], "ADC map (float32, 1e-6 mm2/s)"
    write_itk(ctx.target(file), data, case["spacing"], case["origin"])
    return f"MetaImage {what} {'x'.join(str(s) for s in data.shape[::-1])}"


def write_atlas(ctx: RecipeContext, file: ReplicaFile) -> str:
    """A normal or lesion atlas (``.nii``): ADC mean / stdev maps (float32), brain masks (1-bit
    ``DT_BINARY``, as mask atlases of this kind are stored) and a lesion-frequency map (float32 0..1)."""
    shape = (scaled(80, ctx.scale), scaled(112, ctx.scale), scaled(96, ctx.scale))
    spacing = (1.5 * 96 / shape[2], 1.5 * 112 / shape[1], 1.5 * 80 / shape[0])
    rng = ctx.rng("atlas")
    adc = adc_volume(rng, shape, None)
    name = file.relpath.rsplit("/", 1)[-1]
    if name.startswith("brainmask"):
        mask = adc > 0
        if "excluding_ventricles" in name:
            mask &= adc < 2000
        write_nifti_bits(ctx.target(file), mask, spacing)
        return f"NIfTI-1 DT_BINARY brain mask {'x'.join(str(s) for s in shape[::-1])}"
    if name.startswith("lesion_atlas"):
        freq = (
            sum(lesion_mask(ctx.rng(f"atlas-lesion-{k}"), shape).astype(np.float32) for k in range(12)) / 12
        )
        data = np.asarray(ndimage.gaussian_filter(freq, 1.0) * (adc > 0), dtype=np.float32)
    elif "stdev" in name:
        data = np.where(adc > 0, 0.12 * adc + 40.0, 0.0).astype(np.float32)
    else:
        data = adc
    write_nifti(ctx.target(file), data, spacing)
    return f"NIfTI-1 float32 atlas {'x'.join(str(s) for s in shape[::-1])}"


def _gradient_table(ctx: RecipeContext, stem: str) -> list[float]:
    """The b-values of a DTI series from its ``.bval`` (or, without one, b=0 where the ``.bvec`` column is
    zero and b=1000 elsewhere, as this dataset's two ``.bval`` files have it); 93 volumes when there is no
    gradient file at all (sub-k09), the count every other subject has."""
    for suffix in (".bval", ".nii.bval"):
        found = ctx.listed(stem + suffix)
        if found is not None and found.text is not None:
            return [float(v) for v in found.text.read_text(encoding="utf-8").split()]
    for suffix in (".bvec", ".nii.bvec"):
        found = ctx.listed(stem + suffix)
        if found is not None and found.text is not None:
            rows = [
                line.split() for line in found.text.read_text(encoding="utf-8").splitlines() if line.strip()
            ]
            vectors = np.array([[float(v) for v in row] for row in rows[:3]])
            return [0.0 if n < 1e-6 else 1000.0 for n in np.linalg.norm(vectors, axis=0)]
    return [0.0] + [1000.0] * 30 + [0.0] + [1000.0] * 30 + [0.0] + [1000.0] * 30


def write_bids_nifti(ctx: RecipeContext, file: ReplicaFile) -> str:
    """A T1w volume (int16, 1 mm) or a DTI series (int16, one volume per gradient) as ``.nii.gz``."""
    stem = file.relpath.removesuffix(".nii.gz")
    rng = ctx.rng(file.relpath)
    sampled = ctx.truth(file) is not None or file.real_size is not None
    factor = ctx.scale * (1.0 if sampled else UNSAMPLED_SCALE)
    if stem.endswith("_T1w"):
        shape = (scaled(176, factor), scaled(256, factor), scaled(256, factor))
        data = t1w_volume(rng, shape).astype(np.int16)
        write_nifti(ctx.target(file), data, (256 / shape[2], 256 / shape[1], 176 / shape[0]))
        return f"NIfTI-1 int16 T1w {'x'.join(str(s) for s in shape[::-1])}"
    if stem.endswith("_dti"):
        bvals = _gradient_table(ctx, stem)
        factor = ctx.scale * DTI_SCALE
        shape = (scaled(50, factor, 2), scaled(128, factor), scaled(128, factor))
        series = dti_series(rng, shape, bvals).astype(np.int16)
        spacing = (1.8 * 128 / shape[2], 1.8 * 128 / shape[1], 2.0 * 50 / shape[0], 7.2)
        write_nifti(ctx.target(file), series, spacing)
        dims = "x".join(str(s) for s in (*shape[::-1], len(bvals)))
        return f"NIfTI-1 int16 DTI {dims} (scale {factor:g} of 128x128x50)"
    raise ReplicaSourceError(file.relpath, "a .nii.gz that is neither *_T1w nor *_dti")

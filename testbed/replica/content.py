"""Plausible pixels for the replica's binaries: neonatal ADC maps with lesions, adult head T1w and DTI series,
fundus / infrared / angiography photographs, OCT and ultrasound B-scans, stained liver sections.

Value ranges follow the modality (ADC in 10^-6 mm^2/s, T1w and DTI as unsigned scanner units, 8-bit
photographs). Every function takes an explicit ``numpy.random.Generator`` so a build is reproducible. Large
2D frames are drawn at a quarter of their size and upsampled before the full-resolution noise: what matters is
the structure a reader or a viewer sees, not the cost of drawing it.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from testbed.synth.phantoms import ellipse, ellipsoid, texture, to_uint8

__all__ = [
    "adc_volume",
    "dti_series",
    "fundus_photo",
    "gray_fundus",
    "lesion_mask",
    "microscopy_section",
    "oct_bscan",
    "t1w_volume",
    "ultrasound_bscan",
    "zmap_volume",
]

# Neonatal ADC (Ou et al. 2017, the atlases' source): ~1100-1300 in white matter, CSF ~3000, HIE lesions
# (restricted diffusion) ~500-800, in 10^-6 mm^2/s.
_ADC_BRAIN = 1200.0
_ADC_CSF = 2900.0
_ADC_LESION = 650.0


def _brain(shape: tuple[int, int, int]) -> np.ndarray:
    z, h, w = shape
    return ellipsoid(shape, (z / 2, h / 2, w / 2), (z * 0.47, h * 0.40, w * 0.33))


def lesion_mask(rng: np.random.Generator, shape: tuple[int, int, int]) -> np.ndarray:
    """One to three restricted-diffusion blobs inside the brain; never empty (the GT segments a lesion)."""
    z, h, w = shape
    brain = _brain(shape)
    mask = np.zeros(shape, dtype=bool)
    for _ in range(int(rng.integers(1, 4))):
        center = (z * rng.uniform(0.35, 0.65), h * rng.uniform(0.35, 0.65), w * rng.uniform(0.38, 0.62))
        radii = (
            max(1.0, z * rng.uniform(0.05, 0.12)),
            h * rng.uniform(0.04, 0.09),
            w * rng.uniform(0.04, 0.09),
        )
        mask |= ellipsoid(shape, center, radii)
    mask &= brain
    if not mask.any():
        mask[z // 2, h // 2, w // 2] = True
    return mask


def adc_volume(
    rng: np.random.Generator, shape: tuple[int, int, int], lesion: np.ndarray | None
) -> np.ndarray:
    """A skull-stripped neonatal ADC map (float32, 0 outside the brain), darker inside ``lesion``."""
    z, h, w = shape
    brain = _brain(shape)
    adc = np.zeros(shape, dtype=np.float32)
    adc[brain] = _ADC_BRAIN
    for side in (-1, 1):
        ventricle = ellipsoid(
            shape, (z / 2, h * 0.47, w / 2 + side * w * 0.06), (z * 0.18, h * 0.12, w * 0.03)
        )
        adc[ventricle & brain] = _ADC_CSF
    if lesion is not None:
        adc[lesion] = _ADC_LESION
    adc += (texture(rng, shape, 1.0, 60.0) * brain).astype(np.float32)
    return np.clip(adc, 0, None).astype(np.float32)


def zmap_volume(adc: np.ndarray) -> np.ndarray:
    """The ADC deviation from the normal atlas in standard deviations, clipped to +-10 (the ``clipped10``
    of the real file names), 0 outside the brain."""
    z = np.where(adc > 0, (adc - _ADC_BRAIN) / 150.0, 0.0)
    return np.clip(z, -10.0, 10.0).astype(np.float32)


def t1w_volume(rng: np.random.Generator, shape: tuple[int, int, int]) -> np.ndarray:
    """An adult head T1w (uint16 scanner units): scalp, skull, grey matter, white matter, ventricles."""
    z, h, w = shape
    centre = (z / 2, h / 2, w / 2)
    img = np.zeros(shape, dtype=np.float32)
    img[ellipsoid(shape, centre, (z * 0.46, h * 0.44, w * 0.38))] = 350.0  # scalp
    img[ellipsoid(shape, centre, (z * 0.42, h * 0.40, w * 0.34))] = 60.0  # skull
    img[ellipsoid(shape, centre, (z * 0.39, h * 0.37, w * 0.31))] = 550.0  # grey matter
    img[ellipsoid(shape, centre, (z * 0.31, h * 0.29, w * 0.24))] = 800.0  # white matter
    for side in (-1, 1):
        img[ellipsoid(shape, (z / 2, h * 0.48, w / 2 + side * w * 0.05), (z * 0.12, h * 0.11, w * 0.03))] = (
            180.0
        )
    head = img > 0
    img[head] += rng.normal(0.0, 4.0, int(head.sum())).astype(np.float32)
    return np.clip(img, 0, None).astype(np.uint16)


def dti_series(rng: np.random.Generator, shape: tuple[int, int, int], bvals: list[float]) -> np.ndarray:
    """A ``(T, Z, Y, X)`` uint16 diffusion series: one volume per b-value, ``S = S0 exp(-b ADC)``."""
    z, h, w = shape
    brain = ellipsoid(shape, (z / 2, h / 2, w / 2), (z * 0.48, h * 0.40, w * 0.34))
    s0 = np.where(brain, 1400.0, 0.0) + texture(rng, shape, 1.0, 40.0) * brain
    adc = np.where(brain, 0.8e-3, 0.0)
    vols = [s0 * np.exp(-b * adc * rng.uniform(0.85, 1.15)) for b in bvals]
    series = np.stack(vols) + rng.normal(0.0, 8.0, (len(bvals), *shape))
    return np.clip(series, 0, None).astype(np.uint16)


def _upsampled(small: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    factors = [shape[0] / small.shape[0], shape[1] / small.shape[1]] + [1.0] * (small.ndim - 2)
    big = ndimage.zoom(small, factors, order=1)
    return np.asarray(big[: shape[0], : shape[1]])


def _vessels(
    rng: np.random.Generator, shape: tuple[int, int], disc: tuple[float, float], n: int
) -> np.ndarray:
    """Curved vessel arcades leaving the optic disc, as a float map in 0..1."""
    h, w = shape
    out = np.zeros(shape, dtype=np.float32)
    t = np.linspace(0.0, 1.0, 4 * max(h, w))
    for k in range(n):
        angle = 2 * np.pi * k / n + rng.uniform(-0.3, 0.3)
        bend = rng.uniform(-1.2, 1.2)
        length = rng.uniform(0.5, 0.9) * max(h, w)
        theta = angle + bend * t
        ys = np.clip(disc[0] + np.sin(theta) * length * t, 0, h - 1).astype(int)
        xs = np.clip(disc[1] + np.cos(theta) * length * t, 0, w - 1).astype(int)
        out[ys, xs] = 1.0
    return np.asarray(ndimage.gaussian_filter(out, max(1.0, max(h, w) / 400)) > 0.05, dtype=np.float32)


def fundus_photo(rng: np.random.Generator, shape: tuple[int, int], left_eye: bool) -> np.ndarray:
    """A colour fundus photograph (uint8 RGB): orange retina in a black field, bright disc, dark vessels and
    macula; the disc sits nasally, so on the viewer's right in a right eye and on the left in a left eye."""
    h, w = shape
    small = (max(8, h // 4), max(8, w // 4))
    sh, sw = small
    field = ellipse(small, (sh / 2, sw / 2), (sh * 0.48, sw * 0.40))
    disc = (sh * 0.5, sw * (0.38 if left_eye else 0.62))
    img = np.zeros((*small, 3), dtype=np.float32)
    img[field] = (190.0, 90.0, 40.0)
    img[ellipse(small, disc, (sh * 0.07, sw * 0.05))] = (250.0, 220.0, 150.0)
    img[ellipse(small, (sh * 0.52, sw * (0.58 if left_eye else 0.42)), (sh * 0.06, sw * 0.05)) & field] *= 0.7
    vessels = _vessels(rng, small, disc, 6) * field
    img *= (1.0 - 0.45 * vessels)[..., None]
    big = _upsampled(img, shape)
    big += rng.normal(0.0, 3.0, big.shape).astype(np.float32)
    return to_uint8(big)


def gray_fundus(rng: np.random.Generator, shape: tuple[int, int], angiography: bool) -> np.ndarray:
    """An 8-bit monochrome fundus frame: infrared reflectance (dark vessels on grey) or fluorescein
    angiography (bright vessels on a dark background)."""
    h, w = shape
    small = (max(8, h // 4), max(8, w // 4))
    sh, sw = small
    vessels = _vessels(rng, small, (sh * 0.5, sw * 0.4), 7)
    if angiography:
        img = 25.0 + 200.0 * vessels + 30.0 * ellipse(small, (sh * 0.5, sw * 0.4), (sh * 0.08, sw * 0.06))
    else:
        img = 140.0 - 70.0 * vessels + 60.0 * ellipse(small, (sh * 0.5, sw * 0.4), (sh * 0.08, sw * 0.06))
    big = _upsampled(img.astype(np.float32), shape)
    return to_uint8(big + rng.normal(0.0, 4.0, shape))


def oct_bscan(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """A macular OCT B-scan (uint8 grey): retinal layers as bright bands with the foveal pit, speckle."""
    h, w = shape
    xs = np.arange(w)
    pit = 0.06 * h * np.exp(-(((xs - w / 2) / (w * 0.08)) ** 2))
    top = h * 0.35 + pit
    ys = np.arange(h)[:, None]
    depth = ys - top[None, :]
    img = np.zeros(shape, dtype=np.float32)
    for offset, thickness, level in ((0, 6, 200), (18, 10, 90), (40, 8, 150), (70, 5, 240), (80, 14, 170)):
        scale = h / 500.0
        img += level * np.exp(-(((depth - offset * scale) / (thickness * scale)) ** 2))
    speckle = rng.gamma(2.0, 0.5, shape).astype(np.float32)
    return to_uint8(img * speckle + rng.normal(5.0, 3.0, shape))


def ultrasound_bscan(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """An ocular B-scan (uint8 grey): a sector with speckled orbit tissue, the dark vitreous, bright wall."""
    h, w = shape
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    radius = np.hypot(ys, xs - w / 2)
    angle = np.arctan2(xs - w / 2, ys)
    sector = (np.abs(angle) < 0.6) & (radius < h * 0.95)
    globe = np.hypot(ys - h * 0.45, xs - w / 2) < h * 0.28
    wall = np.abs(np.hypot(ys - h * 0.45, xs - w / 2) - h * 0.28) < h * 0.015
    tissue = rng.rayleigh(40.0, shape).astype(np.float32)
    img = np.where(sector, tissue, 0.0)
    img[globe & sector] *= 0.08
    img[wall & sector] = 230.0
    return to_uint8(img)


def microscopy_section(rng: np.random.Generator, shape: tuple[int, int], stain: str) -> np.ndarray:
    """A brightfield liver section (uint8 RGB): H&E (pink cytoplasm, purple nuclei) or CD31
    immunohistochemistry (pale haematoxylin counterstain, brown DAB on sinusoid endothelium)."""
    h, w = shape
    background = np.array((235.0, 235.0, 238.0), dtype=np.float32)
    base = (225.0, 160.0, 190.0) if stain == "HE" else (215.0, 210.0, 225.0)
    nucleus = (90.0, 50.0, 140.0) if stain == "HE" else (120.0, 120.0, 180.0)
    img = np.broadcast_to(background, (h, w, 3)).copy()
    tissue = ellipse(shape, (h / 2, w / 2), (h * 0.45, w * 0.46))
    img[tissue] = base
    dots = (rng.random(shape) < 0.004) & tissue
    nuclei = ndimage.binary_dilation(dots, iterations=max(1, min(h, w) // 300))
    img[nuclei] = nucleus
    if stain != "HE":
        sinusoids = (texture(rng, shape, max(1.0, min(h, w) / 150), 1.0) > 1.2) & tissue
        img[sinusoids] = (140.0, 90.0, 50.0)
    return to_uint8(img + rng.normal(0.0, 4.0, img.shape))

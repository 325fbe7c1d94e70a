"""Small anatomical phantoms: ellipses, ellipsoids and textured backgrounds with realistic value ranges.

Every function takes an explicit ``numpy.random.Generator`` so the suite is reproducible from its seed. Label
maps are ``uint8`` with 0 = background; intensity images are float arrays the writers cast to the stored type.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage


def ellipse(
    shape: tuple[int, int], center: tuple[float, float], radii: tuple[float, float], angle: float = 0.0
) -> np.ndarray:
    """A filled ellipse as a boolean ``(H, W)`` mask.

    Args:
        shape: ``(H, W)``.
        center: ``(cy, cx)`` in pixels.
        radii: ``(ry, rx)`` in pixels.
        angle: Rotation in radians.

    Returns:
        The mask.
    """
    yy, xx = np.ogrid[: shape[0], : shape[1]]
    dy, dx = yy - center[0], xx - center[1]
    c, s = np.cos(angle), np.sin(angle)
    u, v = c * dx + s * dy, -s * dx + c * dy
    return bool_mask((v / radii[0]) ** 2 + (u / radii[1]) ** 2 <= 1.0)


def ellipsoid(
    shape: tuple[int, int, int], center: tuple[float, float, float], radii: tuple[float, float, float]
) -> np.ndarray:
    """A filled axis-aligned ellipsoid as a boolean ``(Z, H, W)`` mask (``center``/``radii``
    in ``(z, y, x)``)."""
    zz, yy, xx = np.ogrid[: shape[0], : shape[1], : shape[2]]
    d = (
        ((zz - center[0]) / radii[0]) ** 2
        + ((yy - center[1]) / radii[1]) ** 2
        + ((xx - center[2]) / radii[2]) ** 2
    )
    return bool_mask(d <= 1.0)


def bool_mask(values: np.ndarray) -> np.ndarray:
    """``values`` as a boolean array (keeps mypy aware of the dtype)."""
    return np.asarray(values, dtype=bool)


def texture(rng: np.random.Generator, shape: tuple[int, ...], sigma: float, amplitude: float) -> np.ndarray:
    """Smooth random texture with zero mean and roughly ``amplitude`` standard deviation."""
    noise = ndimage.gaussian_filter(rng.standard_normal(shape), sigma)
    std = float(noise.std()) or 1.0
    return np.asarray(noise / std * amplitude, dtype=np.float64)


def ct_volume(
    rng: np.random.Generator, shape: tuple[int, int, int], organ_hu: float = 60.0, lesion: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """An abdominal CT phantom in HU and its label map (1 = organ, 2 = lesion inside the organ).

    Args:
        rng: Random generator.
        shape: ``(Z, H, W)``.
        organ_hu: Mean organ attenuation.
        lesion: Whether to place a lesion.

    Returns:
        ``(hu, labels)``; air is -1000 HU, fat -100, soft tissue 40, bone 700.
    """
    z, h, w = shape
    hu = np.full(shape, -1000.0)
    body = ellipsoid(shape, (z / 2, h / 2, w / 2), (z * 2.0, h * 0.42, w * 0.46))
    hu[body] = -100.0
    inner = ellipsoid(shape, (z / 2, h / 2, w / 2), (z * 2.0, h * 0.36, w * 0.40))
    hu[inner] = 40.0
    spine = ellipsoid(shape, (z / 2, h * 0.72, w / 2), (z * 2.0, h * 0.07, w * 0.07))
    hu[spine] = 700.0
    labels = np.zeros(shape, dtype=np.uint8)
    oz = z * rng.uniform(0.4, 0.6)
    organ = ellipsoid(
        shape,
        (oz, h * rng.uniform(0.40, 0.48), w * rng.uniform(0.55, 0.62)),
        (z * rng.uniform(0.25, 0.35), h * 0.16, w * 0.14),
    )
    hu[organ] = organ_hu
    labels[organ] = 1
    if lesion:
        idx = np.argwhere(organ)
        cz, cy, cx = idx[len(idx) // 2]
        les = ellipsoid(shape, (cz, cy, cx), (max(1.5, z * 0.08), h * 0.05, w * 0.05)) & organ
        hu[les] = organ_hu + rng.choice([-35.0, 45.0])
        labels[les] = 2
    hu += texture(rng, shape, 1.0, 12.0)
    return hu, labels


def mr_volume(
    rng: np.random.Generator, shape: tuple[int, int, int], n_lesion_labels: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """A head MR phantom in arbitrary units (0..~1400) with ``n_lesion_labels`` nested lesion labels.

    Returns:
        ``(intensity, labels)``; labels count outward-in (1 = outer lesion part, 2 = core, ...).
    """
    z, h, w = shape
    img = np.zeros(shape)
    head = ellipsoid(shape, (z / 2, h / 2, w / 2), (z * 0.55, h * 0.44, w * 0.38))
    img[head] = 900.0
    brain = ellipsoid(shape, (z / 2, h / 2, w / 2), (z * 0.48, h * 0.38, w * 0.32))
    img[brain] = 600.0
    labels = np.zeros(shape, dtype=np.uint8)
    center = (z * rng.uniform(0.4, 0.6), h * rng.uniform(0.38, 0.55), w * rng.uniform(0.40, 0.60))
    for k in range(n_lesion_labels):
        scale = 1.0 - 0.45 * k
        les = ellipsoid(shape, center, (z * 0.16 * scale, h * 0.12 * scale, w * 0.12 * scale)) & brain
        img[les] = 1100.0 + 150.0 * k
        labels[les] = k + 1
    img += texture(rng, shape, 1.2, 30.0)
    return np.clip(img, 0, None), labels


def scene2d(
    rng: np.random.Generator,
    shape: tuple[int, int],
    n_objects: int,
    radius: tuple[float, float],
    margin: int = 4,
) -> list[np.ndarray]:
    """Non-overlapping elliptical objects in a 2D frame, one boolean mask per object.

    Args:
        rng: Random generator.
        shape: ``(H, W)``.
        n_objects: How many objects to place (fewer when the frame is full).
        radius: ``(min, max)`` radius in pixels.
        margin: Keep objects this far from the border.

    Returns:
        The object masks, in placement order.
    """
    h, w = shape
    occupied = np.zeros(shape, dtype=bool)
    objects: list[np.ndarray] = []
    for _ in range(n_objects * 20):
        if len(objects) == n_objects:
            break
        ry, rx = rng.uniform(*radius), rng.uniform(*radius)
        cy = rng.uniform(margin + ry, h - margin - ry)
        cx = rng.uniform(margin + rx, w - margin - rx)
        obj = ellipse(shape, (cy, cx), (ry, rx), rng.uniform(0, np.pi))
        if obj.any() and not (ndimage.binary_dilation(obj, iterations=2) & occupied).any():
            objects.append(obj)
            occupied |= obj
    return objects


def bbox(mask: np.ndarray) -> list[int]:
    """COCO ``[x, y, w, h]`` of the nonzero pixels of a 2D mask (inclusive pixel extent)."""
    ys, xs = np.nonzero(mask)
    return [int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)]


def largest_slice(labels: np.ndarray) -> int:
    """Index along axis 0 with the most foreground voxels (the first one on ties)."""
    counts = (labels.reshape(labels.shape[0], -1) > 0).sum(axis=1)
    return int(np.argmax(counts))


def rgb(base: tuple[float, float, float], shape: tuple[int, int]) -> np.ndarray:
    """A constant ``(H, W, 3)`` float image of colour ``base`` (0..255)."""
    return np.broadcast_to(np.asarray(base, dtype=np.float64), (*shape, 3)).copy()


def to_uint8(img: np.ndarray) -> np.ndarray:
    """Clip to 0..255 and cast."""
    return np.asarray(np.clip(np.rint(img), 0, 255), dtype=np.uint8)

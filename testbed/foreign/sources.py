"""Where the foreign suite's pixels come from: sample data inside installed wheels other than pydicom's and
nibabel's (scikit-image's ``skimage/data``, matplotlib's ``mpl-data/sample_data``).

Only files present on disk are used, never a download (scikit-image fetches its larger images with pooch:
those are not used). A missing file raises :class:`MissingSource` naming it: the suite never shrinks
silently.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from testbed.realfiles.sources import MissingSource, module_versions

__all__ = ["MissingSource", "matplotlib_mri_slice", "skimage_image", "source_versions"]


def _skimage_path(name: str) -> Path:
    try:
        import skimage
    except ImportError as exc:
        raise MissingSource("the foreign suite needs scikit-image (its bundled skimage/data images)") from exc
    path = Path(skimage.__file__).parent / "data" / name
    if not path.is_file():
        raise MissingSource(f"scikit-image does not ship data/{name}")
    return path


def skimage_image(name: str) -> tuple[np.ndarray, str]:
    """One of scikit-image's bundled images, decoded with Pillow.

    Args:
        name: File name under ``skimage/data`` (``retina.jpg``, ``ihc.png`` ...).

    Returns:
        ``(pixels, origin)``: the array (``uint8``, grey or RGB) and ``"scikit-image:data/<name>"``.
    """
    from PIL import Image

    with Image.open(_skimage_path(name)) as img:
        pixels = np.asarray(img.convert("RGB") if img.mode not in ("L", "RGB") else img)
    return pixels, f"scikit-image:data/{name}"


def matplotlib_mri_slice() -> tuple[np.ndarray, str]:
    """matplotlib's ``s1045.ima.gz``: a 256 x 256 16-bit MR slice of a head (raw little-endian bytes).

    Returns:
        ``(pixels uint16 (256, 256), origin)``.
    """
    import matplotlib

    path = Path(matplotlib.get_data_path()) / "sample_data" / "s1045.ima.gz"
    if not path.is_file():
        raise MissingSource("matplotlib does not ship sample_data/s1045.ima.gz")
    raw = gzip.decompress(path.read_bytes())
    return np.frombuffer(raw, dtype="<u2").reshape(256, 256).copy(), "matplotlib:sample_data/s1045.ima.gz"


def source_versions() -> dict[str, str]:
    """Versions of the packages whose data and writers make up the suite (same versions => same bytes)."""
    return module_versions(
        {
            "scikit-image": "skimage",
            "matplotlib": "matplotlib",
            "pynrrd (writer)": "nrrd",
            "tifffile (writer)": "tifffile",
            "pydicom (writer)": "pydicom",
        }
    )

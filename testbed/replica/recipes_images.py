"""Replica recipes for 2-D images: PNG photographs and B-scans, fundus-camera TIFFs, Zeiss CZI slides.

Geometry from the real files where the listing tells it:

- TIFF (5002837): the sampled colour photographs are 14,696,796 bytes, the infrared and angiography frames
  4,900,626. ``2592 x 1890 x 3 = 14,696,640`` leaves 156 bytes for a minimal TIFF header and one IFD; the same
  frame at one byte per pixel plus a 256-entry 16-bit ColorMap (1,536 bytes) and its IFD gives 4,900,626 to
  within the IFD. So the colour frames are uncompressed RGB and the monochrome ones 8-bit palette TIFFs, both
  2592 x 1890.
- CZI (4975777): the real slides are 214-835 MB of 24-bit brightfield pixels; the stand-ins keep each slide's
  aspect and pixel type at ``CZI_SCALE`` of its linear size (pixel size in the metadata scaled to match).
- PNG (5002837): 0.58-0.80 MB, what an RGB export of an OCT or ultrasound B-scan of ~1000 x 500 compresses to.

Which picture a frame shows follows the GT class of the sample naming it (fundus side, infrared, angiography,
OCT, ultrasound); frames no sample names get the content their file name suggests.
"""

from __future__ import annotations

import math

import numpy as np

from testbed.replica.containers import write_palette_tiff
from testbed.replica.content import (
    fundus_photo,
    gray_fundus,
    microscopy_section,
    oct_bscan,
    ultrasound_bscan,
)
from testbed.replica.context import RecipeContext, scaled
from testbed.replica.source import ReplicaFile
from testbed.synth.write_czi import write_czi
from testbed.synth.write_files import write_pillow, write_tiff

__all__ = ["CZI_SCALE", "TIFF_FRAME", "UNSAMPLED_TIFF_SCALE", "write_czi_slide", "write_photo"]

#: Linear scale of the CZI stand-ins against the real slides.
CZI_SCALE = 1 / 16
#: The fundus camera's frame (width, height), from the TIFF sizes (module docstring).
TIFF_FRAME = (2592, 1890)
#: Linear scale of the TIFF frames no sample names (the listing gives no size for them).
UNSAMPLED_TIFF_SCALE = 0.25
_PALETTE_TIFF_BYTES = 4_900_626
#: Real pixel size of a 20x brightfield slide scan in micrometres.
_SLIDE_UM = 0.22


def _label(ctx: RecipeContext, file: ReplicaFile) -> str:
    truth = ctx.truth(file)
    name = file.relpath.rsplit("/", 1)[-1]
    if truth is not None and isinstance(truth.get("class"), str):
        return str(truth["class"])
    if name.startswith("OCT_"):
        return "OCT " + ("(Left eye)" if "OS" in name else "(Right eye)")
    if "USBscan" in name:
        return "Ultrasonography"
    return "Fundus photo"


def write_photo(ctx: RecipeContext, file: ReplicaFile) -> str:
    """A PNG B-scan or a fundus-camera TIFF whose picture matches the sample's class."""
    rng = ctx.rng(file.relpath)
    label = _label(ctx, file)
    target = ctx.target(file)
    if target.suffix.lower() == ".png":
        shape = (scaled(496, ctx.scale), scaled(1024, ctx.scale))
        gray = oct_bscan(rng, shape) if label.startswith("OCT") else ultrasound_bscan(rng, shape)
        # An RGB export, as the dataset's own change.py converts (Image.convert("RGB")).
        write_pillow(target, np.repeat(gray[..., None], 3, axis=2))
        return f"PNG RGB {shape[1]}x{shape[0]} ({label})"
    factor = ctx.scale * (1.0 if file.real_size is not None else UNSAMPLED_TIFF_SCALE)
    shape = (scaled(TIFF_FRAME[1], factor), scaled(TIFF_FRAME[0], factor))
    monochrome = file.real_size == _PALETTE_TIFF_BYTES or (
        file.real_size is None and ("Infrared" in label or "angiography" in label)
    )
    if monochrome:
        index = gray_fundus(rng, shape, angiography="angiography" in label)
        ramp = np.linspace(0, 65535, 256).astype(np.uint16)
        write_palette_tiff(target, index, np.stack([ramp, ramp, ramp]))
        return f"TIFF palette 8-bit {shape[1]}x{shape[0]} ({label})"
    left = "Left" in label if "eye" in label else bool(rng.integers(0, 2))
    write_tiff(target, fundus_photo(rng, shape, left_eye=left))
    return f"TIFF RGB {shape[1]}x{shape[0]} ({label})"


def write_czi_slide(ctx: RecipeContext, file: ReplicaFile) -> str:
    """A tiled Zeiss CZI slide: brightfield BGR24 for H&E and CD31 IHC, 16-bit fluorescence for ICG."""
    rng = ctx.rng(file.relpath)
    stain = file.relpath.split("/")[-2]
    fluorescence = stain == "ICG"
    real = file.real_size or (200_000_000 if fluorescence else 400_000_000)
    pixels = real / (2 if fluorescence else 3)
    factor = CZI_SCALE * ctx.scale
    height = scaled(int(math.sqrt(pixels / 1.4)), factor, 16)
    width = scaled(int(math.sqrt(pixels * 1.4)), factor, 16)
    tile = max(16, scaled(4096, factor, 16))
    scaling = (_SLIDE_UM / factor, _SLIDE_UM / factor)
    if fluorescence:
        data = (255 - microscopy_section(rng, (height, width), "HE")[..., 1]).astype(np.uint16) * 40
    else:
        data = microscopy_section(rng, (height, width), "HE" if stain == "HE" else "CD31")
    write_czi(
        ctx.target(file),
        data,
        axes="YX",
        pixel_type="Gray16" if fluorescence else "Bgr24",
        channel_names=[stain],
        scaling_um=scaling,
        tile=tile,
    )
    if fluorescence:
        return f"CZI Gray16 fluorescence {width}x{height} (scale {factor:g})"
    return f"CZI Bgr24 brightfield {width}x{height} (scale {factor:g}, {stain})"

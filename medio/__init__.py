"""Read every raw medical format into (array, header facts) and render it to an 8-bit PNG.

Public API (docs/contracts.md, docs/medio.md)::

    image = medio.read("CT_small.dcm")           # MedImage: canonical axes, modality LUT applied
    shown = medio.render(image)                   # Rendered: uint8 pixels + info (window, slice, ...)
    medio.write_png(shown.pixels, "out.png")     # atomic
    medio.inspect("any.file")                    # JSON-able summary, never raises on bad input

Heavy libraries (pydicom, nibabel, SimpleITK, h5py, scipy.io, pandas/pyarrow, PyAV) are imported on first use,
under one import lock (:mod:`medio.libraries`); multi-threaded programs call ``medio.preload()`` in the main
thread first.
"""

from medio.errors import (
    CorruptFile,
    EmptyFile,
    ImageTooLarge,
    InvalidLabelMap,
    KeyNotFound,
    MedioError,
    UnsupportedFormat,
    UnsupportedTransferSyntax,
)
from medio.inspect import inspect
from medio.libraries import preload
from medio.png import read_png_size, write_png
from medio.read import read
from medio.render import choose_slice, render
from medio.types import MedImage, Meta, Rendered

__all__ = [
    "CorruptFile",
    "EmptyFile",
    "ImageTooLarge",
    "InvalidLabelMap",
    "KeyNotFound",
    "MedImage",
    "MedioError",
    "Meta",
    "Rendered",
    "UnsupportedFormat",
    "UnsupportedTransferSyntax",
    "choose_slice",
    "inspect",
    "preload",
    "read",
    "read_png_size",
    "render",
    "write_png",
]
